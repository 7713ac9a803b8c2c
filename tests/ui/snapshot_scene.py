"""The fixed scene the snapshot tests and the screenshots draw: a home, a history, the
service's answers, and how long to wait for the screen to settle."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from textual.pilot import Pilot
from ui_helpers import API_KEY, BASE_MS, attempt, scene

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.models import WebhookEndpoint
from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import Secret
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.panes.templates import TemplatesPane
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks import store as store_module
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import FORWARD, ORIGINAL, Attempt, ForwardResult
from walletpass_tui.webhooks.store import Store

TEMPLATES = {
    "data": [
        {"id": "tpl_7HqYb2LmN4", "name": "Loyalty Card - Gold", "passType": "storeCard"},
        {"id": "tpl_Qx81RcVa0e", "name": "Summer Festival 2026", "passType": "eventTicket"},
        {"id": "tpl_c3Ts9WkP1z", "name": "Gym Membership", "passType": "generic"},
    ],
    "hasMore": False,
}
CREATED = {
    "id": "ep_9xKq2Lm",
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "url": "https://hooks.example.com/wallet",
    "enabledTopics": ["pass.activated", "pass.deactivated"],
    "enabled": True,
    "createdAt": "2026-11-23T14:05:00.000Z",
}


def service(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/api/v0/passTemplates":
        return httpx.Response(200, json=TEMPLATES)
    if request.url.path == "/v0/webhookEndpoints":
        return httpx.Response(200, json=CREATED)
    return httpx.Response(404)


def fixed_home(name: str) -> Path:
    """The same directory on every run: its path is on screen (where the secret is kept)."""
    home = Path(tempfile.gettempdir()) / "walletpass-tui-snapshots" / name
    shutil.rmtree(home, ignore_errors=True)
    return home


NOW = BASE_MS + 6 * 60_000 + 30_000  # 14:06:30 UTC, just after the scene's deliveries


def traffic_scene() -> list[Attempt]:
    """An hour of deliveries: steady traffic of both topics, a burst of rejections at 13:40,
    redeliveries after it, and a quiet spell."""
    rows = []
    n = 0
    for minute in range(-53, 7):
        if -30 <= minute < -22:
            continue  # nothing arrived for eight minutes
        per_minute = 3 + (minute * 7) % 5 + (6 if -20 <= minute <= -17 else 0)
        for k in range(per_minute):
            n += 1
            at_ms = BASE_MS + minute * 60_000 + k * 5_000
            rejected = minute in (-20, -19) and k < 5
            rows.append(
                attempt(
                    n,
                    at_ms=at_ms,
                    topic=("pass.activated", "pass.deactivated")[k % 3 == 0],
                    verdict="rejected" if rejected else "verified",
                    reason="no signature matches" if rejected else None,
                    webhook_id=f"msg_{n:06d}"
                    if not (-18 <= minute <= -16 and k < 2)
                    else f"msg_{n - 1:06d}",
                )
            )
    return rows


def make(
    name: str,
    *,
    with_key: bool = True,
    rows: Callable[[], list[Attempt]] = scene,
    forwards: bool = False,
) -> WalletPassApp:
    settings = Settings(
        home=fixed_home(name),
        base_url="https://api.wallet.example" if with_key else None,
        registration_url="https://hooks.wallet.example" if with_key else None,
        api_key=Secret(API_KEY) if with_key else None,
        public_url="https://ab12.tunnel.example",
    )
    registry = EndpointRegistry(settings.endpoints_path)
    registry.record_created(
        WebhookEndpoint(
            id="ep_3f2a9c",
            url="https://ab12.tunnel.example/webhooks",
            enabled_topics=("pass.activated", "pass.deactivated"),
            enabled=True,
            secret=Secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"),
            created_at=datetime(2026, 11, 20, 9, 30, tzinfo=UTC),
        )
    )
    client = (
        WalletPassClient(settings, transport=httpx.MockTransport(service), retry_base_delay=0)
        if with_key
        else None
    )

    async def open_runtime() -> DeliveryRuntime:
        runtime = DeliveryRuntime(settings, registry=registry)
        await runtime.open()
        stored = [await runtime.store.record(row) for row in rows()]
        await runtime.store.settled()
        if forwards:
            await answered_forwards(runtime.store, stored)
        return runtime

    return build_app(
        open_runtime, client, receiver_display="127.0.0.1:8787/webhooks", clock=lambda: NOW
    )


async def answered_forwards(store: Store, stored: list[Attempt]) -> None:
    """Your app's answers to the verified deliveries, slower after the burst, at fixed times."""
    real_now = store_module.now_ms
    try:
        for index, delivered in enumerate(a for a in stored if a.verified):
            minute = (delivered.received_at_ms - BASE_MS) // 60_000
            latency = 12.0 + (index % 4) * 3 + (180.0 if -19 <= minute <= -12 else 0)
            store_module.now_ms = lambda at=delivered.received_at_ms + 50: at  # type: ignore[misc]
            await store.add_forward_result(
                delivered,
                kind=FORWARD,
                mode=ORIGINAL,
                target="http://localhost:3000/webhooks",
                result=ForwardResult(200 if latency < 150 else 504, latency),
            )
    finally:
        store_module.now_ms = real_now


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the log and the detail pane show their data."""
    app = pilot.app
    while not isinstance(app.screen, MainScreen):
        await pilot.pause(0.02)
    # The side panes are mounted right after the first frame (the log comes first).
    while not app.screen.query(TemplatesPane):
        await pilot.pause(0.02)
    log = app.screen.query_one(EventLogPane)
    templates = app.screen.query_one(TemplatesPane)
    while log.total is None or templates.loading or "loading" in str(templates.border_title):
        await pilot.pause(0.02)
    # The header's sparkline is drawn once the last hour is read from the history, after paint.
    while not app.screen.query_one(StatusBar).sparks:
        await pilot.pause(0.02)
    await pilot.pause(0.2)
