"""Regenerate the screenshots of the README and docs/ (SVG, and PNG with rsvg-convert when it is installed).

    python scripts/make_screenshots.py                 # fixed sample data: reproducible pictures
    python scripts/make_screenshots.py --home DIR      # the history and endpoints already in DIR

With no ``--home`` a throwaway data directory is filled with a fixed history (fixed times and ids),
templates come from a canned answer and no port is opened, so every run draws the same pictures.
``--home`` takes the data of a populated directory instead (the demo's, say) and its settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from textual.pilot import Pilot
from textual.widgets import Input

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.models import WebhookEndpoint
from walletpass_tui.config import Settings, load_settings
from walletpass_tui.config.secrets import Secret
from walletpass_tui.runtime.attached import AttachedRuntime
from walletpass_tui.runtime.control import OPS, ReceiverStatus
from walletpass_tui.runtime.instance import InstanceRecord
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.panes.templates import TemplatesPane
from walletpass_tui.ui.screens.endpoint_secret import EndpointSecretScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.screens.replay import ReplayScreen
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks import store as store_module
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import (
    FORWARD,
    ORIGINAL,
    REJECTED,
    REPLAY,
    RESIGN,
    VERIFIED,
    Attempt,
    ForwardResult,
)
from walletpass_tui.webhooks.store import Store

ROOT = Path(__file__).resolve().parent.parent
START_MS = 1_795_442_400_000  # 2026-11-23T14:00:00Z
NOW_MS = START_MS + 6 * 60_000 + 40_000  # the pictures' clock: just after the sample history
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
RECEIVER = "127.0.0.1:8787/webhooks"
APP_URL = "http://localhost:3000/webhooks"  # the user's own app, in the forwarding samples
RETRIED = "msg_2KWPretryBgLlAfxdpx2AI5"

TEMPLATES = {
    "data": [
        {
            "id": "tpl_7HqYb2LmN4",
            "name": "Loyalty Card - Gold",
            "passType": "storeCard",
            "organizationName": "Bluebird Coffee",
            "createdAt": "2026-03-02T09:15:27.481Z",
        },
        {
            "id": "tpl_Qx81RcVa0e",
            "name": "Summer Festival 2026",
            "passType": "eventTicket",
            "organizationName": "Harbour Events",
            "createdAt": "2026-04-11T12:01:55.009Z",
        },
        {
            "id": "tpl_c3Ts9WkP1z",
            "name": "Gym Membership",
            "passType": "generic",
            "organizationName": "Northside Fitness",
            "createdAt": "2026-01-20T18:44:10.300Z",
        },
        {
            "id": "tpl_Ld5nE0uJ6r",
            "name": "10% Off Next Visit",
            "passType": "coupon",
            "organizationName": "Bluebird Coffee",
            "createdAt": "2026-05-06T10:30:00.000Z",
        },
        {
            "id": "tpl_Vb4kM8oS2d",
            "name": "Ferry Boarding Pass",
            "passType": "boardingPass",
            "organizationName": "Island Ferries",
            "createdAt": "2026-06-14T07:12:48.556Z",
        },
    ],
    "hasMore": False,
}
CREATED = {
    "id": "ep_9xKq2LmVw7",
    "secret": SECRET,
    "url": "https://hooks.example.com/wallet",
    "enabledTopics": ["pass.activated", "pass.deactivated"],
    "enabled": True,
    "createdAt": "2026-11-23T14:06:00.000Z",
}


# -- fixed sample data ------------------------------------------------------------------------------


def _body(topic: str, n: int) -> bytes:
    reasons = {
        "pass.activated": ("added_to_wallet", "notifications_enabled"),
        "pass.deactivated": ("removed_from_wallet", "notifications_disabled"),
    }
    template = TEMPLATES["data"][n % len(TEMPLATES["data"])]["id"]
    return json.dumps(
        {
            "type": topic,
            "timestamp": datetime.fromtimestamp((START_MS + n * 7_000) / 1000, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "data": {
                "passId": f"pass_{(n * 7919) % 100000:05d}{'abcdefgh'[n % 8]}Q2",
                "passTemplateId": template,
                "serialNumber": f"{(n * 104729) % 10**9:09d}",
                "platform": ("apple", "google")[n % 2],
                "reason": reasons[topic][n % 2],
            },
        },
        indent=None,
    ).encode()


def _attempt(
    n: int,
    at_ms: int,
    *,
    msg: str | None = None,
    topic: str | None = None,
    verdict: str = VERIFIED,
    reason: str = "verified",
    detail: str = "",
    status: int = 200,
    note: str | None = None,
    endpoint: str | None = "ep_3f2a9cLq",
) -> Attempt:
    topic = topic or ("pass.activated", "pass.deactivated")[n % 3 == 0]
    webhook_id = msg or f"msg_2KWP{n:04d}BgLlAfxdpx2AI54p"
    body = _body(topic, n)
    pass_id = json.loads(body)["data"]["passId"]
    return Attempt(
        received_at_ms=at_ms,
        method="POST",
        path="/webhooks",
        headers=(
            ("Host", "ab12.tunnel.example"),
            ("User-Agent", "Svix-Webhooks/1.24"),
            ("Content-Type", "application/json"),
            ("webhook-id", webhook_id),
            ("webhook-timestamp", str(at_ms // 1000)),
            ("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),
            ("X-Forwarded-For", "44.228.126.217"),
        ),
        body=body,
        verdict=verdict,
        reason=reason,
        detail=detail,
        status=status,
        webhook_id=webhook_id,
        endpoint_id=endpoint if verdict == VERIFIED else None,
        remote_addr="127.0.0.1",
        forwarded_for="44.228.126.217",
        body_size=len(body),
        processing_ms=1.2 + (n % 5) * 0.3,
        topic=topic,
        pass_id=pass_id,
        note=note,
    )


def sample_history() -> list[Attempt]:
    """About 40 deliveries over six minutes: mostly verified, a few rejected, two messages that
    the service retried on its schedule (+5 s, +5 min) after failures."""
    rows: list[Attempt] = []
    for n in range(1, 41):
        at = START_MS + n * 9_000
        if n in (6, 23):
            rows.append(
                _attempt(
                    n,
                    at,
                    verdict=REJECTED,
                    reason="no signature matches",
                    detail="tried 2 secrets",
                    status=401,
                )
            )
        elif n == 14:
            rows.append(
                _attempt(
                    n,
                    at,
                    verdict=REJECTED,
                    reason="timestamp too old",
                    detail="412 s old, tolerance 300 s",
                    status=401,
                )
            )
        else:
            rows.append(_attempt(n, at))
    retried = RETRIED
    first = START_MS + 60_000
    rows.append(_attempt(50, first, msg=retried, status=500, note="injected: fail first 2"))
    rows.append(_attempt(50, first + 5_000, msg=retried, status=500, note="injected: fail first 2"))
    rows.append(_attempt(50, first + 305_000, msg=retried))
    paused = "msg_2KWPpauseBgLlAfxdpx2AI5"
    rows.append(
        _attempt(
            51, START_MS + 200_000, msg=paused, status=503, note="injected: acknowledgements paused"
        )
    )
    rows.append(_attempt(51, START_MS + 205_000, msg=paused))
    rows.sort(key=lambda a: a.received_at_ms)
    return rows


def hour_of_traffic() -> list[Attempt]:
    """The hour before the sample history, for the Stats picture: steady deliveries of both
    topics, a quiet spell, a burst of rejections (a rotated secret not yet imported) and the
    service's retries after it."""
    rows: list[Attempt] = []
    n = 100
    for minute in range(-53, 0):
        if -31 <= minute < -24:
            continue  # nothing arrived for seven minutes
        busy = 6 if -21 <= minute <= -17 else 0
        for k in range(3 + (minute * 7) % 5 + busy):
            n += 1
            at = START_MS + minute * 60_000 + k * 4_000
            if minute in (-20, -19) and k < 5:
                rows.append(
                    _attempt(
                        n,
                        at,
                        verdict=REJECTED,
                        reason="no signature matches",
                        detail="tried 2 secrets",
                        status=401,
                    )
                )
            elif -18 <= minute <= -15 and k < 2:
                rows.append(_attempt(n, at, msg=f"msg_2KWP{n - 40:04d}BgLlAfxdpx2AI54p"))
            else:
                rows.append(_attempt(n, at))
    return rows


async def hour_of_forwards(store: Store, attempts: Sequence[Attempt]) -> None:
    """Your app's answers to the hour's verified deliveries: about 15 ms, then slow for a few
    minutes after the burst (one in three timing out)."""
    real_now = store_module.now_ms
    try:
        for index, delivered in enumerate(a for a in attempts if a.verdict == VERIFIED):
            minute = (delivered.received_at_ms - START_MS) // 60_000
            slow = -18 <= minute <= -12
            latency = 11.0 + (index % 5) * 2.5 + (170.0 + (index % 3) * 20 if slow else 0)
            result = (
                ForwardResult(None, 10_000.0, error="no answer within 10 s")
                if slow and index % 3 == 0
                else ForwardResult(200, latency, body=b'{"received":true}')
            )
            store_module.now_ms = lambda at=delivered.received_at_ms + 80: at  # type: ignore[misc]
            await store.add_forward_result(
                delivered, kind=FORWARD, mode=ORIGINAL, target=APP_URL, result=result
            )
    finally:
        store_module.now_ms = real_now


def sample_registry(home: Path) -> EndpointRegistry:
    registry = EndpointRegistry(home / "endpoints.json")
    registry.record_created(
        WebhookEndpoint(
            id="ep_3f2a9cLq",
            url="https://ab12.tunnel.example/webhooks",
            enabled_topics=("pass.activated", "pass.deactivated"),
            enabled=True,
            secret=Secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"),
            created_at=datetime(2026, 11, 20, 9, 30, 12, tzinfo=UTC),
        )
    )
    registry.import_endpoint(
        "ep_77c1Hd0Pz",
        "https://old.example.org/wallet-hooks",
        ["pass.deactivated"],
        "whsec_c2VjcmV0LWZvci10aGUtb2xkLW9uZQ==",
        enabled=False,
    )
    return registry


async def sample_forwards(store: Store) -> None:
    """The retried message forwarded to the user's app, then replayed to it (which its replay
    protection refused), at fixed times."""
    attempts = await store.message_attempts(RETRIED)
    last = attempts[-1]
    answers = (
        (last, FORWARD, ORIGINAL, ForwardResult(200, 14.2, body=b'{"received":true}')),
        (last, REPLAY, RESIGN, ForwardResult(500, 9.6, body=b'{"error":"duplicate webhook-id"}')),
    )
    real_now = store_module.now_ms
    try:
        for (attempt, kind, mode, result), offset in zip(answers, (60, 420_000), strict=True):
            store_module.now_ms = lambda at=attempt.received_at_ms + offset: at  # type: ignore[misc]
            await store.add_forward_result(
                attempt, kind=kind, mode=mode, target=APP_URL, result=result
            )
    finally:
        store_module.now_ms = real_now


def canned_service(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/api/v0/passTemplates":
        return httpx.Response(200, json=TEMPLATES)
    if request.url.path == "/v0/webhookEndpoints":
        return httpx.Response(200, json=CREATED)
    return httpx.Response(404, json={"error": "not found"})


# -- building the app ------------------------------------------------------------------------------------


@dataclass
class Source:
    """Where the pictures' data comes from."""

    settings: Settings
    registry: EndpointRegistry
    fill: Callable[[Store], Awaitable[None]] | None
    transport: httpx.AsyncBaseTransport | None


def sample_source(home: Path, *, hour: bool = False) -> Source:
    settings = Settings(
        home=home,
        base_url="https://api.wallet.example",
        registration_url="https://hooks.wallet.example",
        api_key=Secret("wp_live_4f9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c"),
        public_url="https://ab12.tunnel.example",
    )

    async def fill(store: Store) -> None:
        earlier = [await store.record(row) for row in (hour_of_traffic() if hour else ())]
        for row in sample_history():
            await store.record(row)
        await store.settled()
        await hour_of_forwards(store, earlier)
        await sample_forwards(store)

    return Source(settings, sample_registry(home), fill, httpx.MockTransport(canned_service))


def home_source(home: Path) -> Source:
    settings = load_settings({"home": str(home)})
    return Source(settings, EndpointRegistry(settings.endpoints_path), None, None)


def make_app(source: Source, *, attached: bool = False) -> WalletPassApp:
    """``attached``: as ``walletpass-tui attach`` shows a receiver in another process (a fixed
    one: pid 4242 on RECEIVER, forwarding to APP_URL; none is looked for)."""
    settings = source.settings
    client = (
        WalletPassClient(settings, transport=source.transport, retry_base_delay=0)
        if settings.api_key
        else None
    )
    fixed = source.fill is not None  # sample data: a fixed clock; a real home: the real one
    clock = (lambda: NOW_MS) if fixed else None
    if attached:
        return build_app(attached_opener(source), client, clock=clock)

    async def open_runtime() -> DeliveryRuntime:
        runtime = DeliveryRuntime(settings, registry=source.registry)
        await runtime.open()
        if source.fill is not None:
            await source.fill(runtime.store)
        return runtime

    return build_app(open_runtime, client, receiver_display=RECEIVER, clock=clock)


def attached_opener(source: Source) -> Callable[[], Awaitable[AttachedRuntime]]:
    async def open_runtime() -> AttachedRuntime:
        if source.fill is not None:
            async with await Store.open(source.settings.database_path) as store:
                await source.fill(store)
        record = InstanceRecord(
            pid=4242, kind="listen", url=f"http://{RECEIVER}", started_at_ms=START_MS
        )
        runtime = AttachedRuntime(source.settings, record, find_receiver=False)
        await runtime.open()
        runtime.connected = True  # as the receiver's hello says
        runtime.status = ReceiverStatus(controls=OPS, forwarding=True, forward_targets=(APP_URL,))
        return runtime

    return open_runtime


# -- the pictures ----------------------------------------------------------------------------------------


async def settle(pilot: Pilot[Any]) -> None:
    app = pilot.app
    while not isinstance(app.screen, MainScreen):
        await pilot.pause(0.02)
    while not app.screen.query(TemplatesPane):  # mounted right after the first frame
        await pilot.pause(0.02)
    log = app.screen.query_one(EventLogPane)
    templates = app.screen.query_one(TemplatesPane)
    while log.total is None or templates.loading or "loading" in str(templates.border_title):
        await pilot.pause(0.02)
    # The header's sparkline is drawn once the last hour is read from the history, after paint.
    while not app.screen.query_one(StatusBar).sparks:
        await pilot.pause(0.02)
    await pilot.pause(0.3)


async def main_screen(pilot: Pilot[Any]) -> None:
    await pilot.press("j", "j", "j")
    await pilot.pause(0.3)


async def detail(pilot: Pilot[Any]) -> None:
    log = pilot.app.screen.query_one(EventLogPane)
    target = next((i for i, r in enumerate(log.window.rows) if r.attempt_no == 3), 0)
    log.view.move_cursor(target)
    await pilot.press("enter")
    await pilot.pause(0.4)


async def forwards(pilot: Pilot[Any]) -> None:
    await detail(pilot)
    await pilot.press("o")
    await pilot.pause(0.3)


async def replay_form(pilot: Pilot[Any]) -> None:
    log = pilot.app.screen.query_one(EventLogPane)
    target = next((i for i, r in enumerate(log.window.rows) if r.webhook_id == RETRIED), 0)
    log.view.move_cursor(target)
    await pilot.pause(0.1)
    await pilot.press("R")
    while not isinstance(pilot.app.screen, ReplayScreen):
        await pilot.pause(0.05)
    field = pilot.app.screen.query_one("#replay-target", Input)
    field.cursor_blink = False
    field.value = APP_URL
    await pilot.pause(0.3)


async def create_form(pilot: Pilot[Any]) -> None:
    await pilot.press("n")
    await pilot.pause(0.2)
    field = pilot.app.screen.query_one("#endpoint-url", Input)
    field.cursor_blink = False
    field.value = "http://localhost:3000/hook"
    field.cursor_position = len(field.value)
    await pilot.press("s")
    await pilot.pause(0.2)


async def secret_modal(pilot: Pilot[Any]) -> None:
    await pilot.press("n")
    await pilot.pause(0.2)
    field = pilot.app.screen.query_one("#endpoint-url", Input)
    field.cursor_blink = False
    field.value = str(CREATED["url"])
    await pilot.press("ctrl+s")
    while not isinstance(pilot.app.screen, EndpointSecretScreen):
        await pilot.pause(0.05)
    await pilot.pause(0.3)


async def narrow(pilot: Pilot[Any]) -> None:
    await pilot.pause(0.2)


async def filter_completion(pilot: Pilot[Any]) -> None:
    """The filter box offering the known paths for ``data.p``, with their types and values."""
    runtime = pilot.app.context.runtime  # type: ignore[attr-defined]
    await asyncio.to_thread(runtime.field_indexer.settled, 60)
    await runtime.learner.asettled()
    await pilot.press("slash")
    log = pilot.app.screen.query_one(EventLogPane)
    field = log.query_one("#log-filter", Input)
    field.cursor_blink = False
    field.value = "verdict:verified data."
    field.cursor_position = len(field.value)
    await pilot.press("p")
    while not log.completions.display:
        await pilot.pause(0.05)
    await pilot.pause(0.4)


async def stats(pilot: Pilot[Any]) -> None:
    await pilot.press("s")
    while type(pilot.app.screen).__name__ != "StatsScreen":
        await pilot.pause(0.05)
    await pilot.pause(0.3)


Shot = tuple[str, tuple[int, int], Callable[[Pilot[Any]], Awaitable[None]]]
SHOTS: tuple[Shot, ...] = (
    ("dashboard", (140, 40), main_screen),
    ("delivery-detail", (120, 36), detail),
    ("create-endpoint", (120, 36), create_form),
    ("delivery-forwards", (120, 36), forwards),
    ("replay", (120, 36), replay_form),
    ("endpoint-secret", (120, 36), secret_modal),
    ("dashboard-80x24", (80, 24), narrow),
    ("stats", (120, 36), stats),
    ("filter-completion", (120, 30), filter_completion),
    ("attached", (140, 40), main_screen),
)
ATTACHED = {"attached"}  # pictures of a dashboard attached to a receiver in another process


async def take(source_for: Callable[[str], Source], shot: Shot, out: Path) -> Path:
    name, size, steps = shot
    app = make_app(source_for(name), attached=name in ATTACHED)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await steps(pilot)
        path = Path(app.save_screenshot(f"{name}.svg", str(out)))
    return path


def to_png(svg: Path) -> Path | None:
    """A PNG beside ``svg``; the SVG keeps its spaces when rsvg draws it (xml:space)."""
    converter = shutil.which("rsvg-convert")
    if converter is None:
        return None
    text = svg.read_text()
    fixed = re.sub(r"<svg ", '<svg xml:space="preserve" ', text, count=1)
    with tempfile.NamedTemporaryFile("w", suffix=".svg", delete=False) as tmp:
        tmp.write(fixed)
    png = svg.with_suffix(".png")
    subprocess.run([converter, tmp.name, "-o", str(png)], check=True)
    Path(tmp.name).unlink()
    return png


async def run(args: argparse.Namespace) -> list[Path]:
    out: Path = args.out
    made: list[Path] = []
    # The same path on every run (it is shown on the secret's screen), emptied for each picture.
    scratch = Path(tempfile.gettempdir()) / "walletpass-tui-screenshots"

    def source_for(name: str) -> Source:
        if args.home:
            return home_source(args.home)
        shutil.rmtree(scratch, ignore_errors=True)
        return sample_source(scratch, hour=name in ("stats", "dashboard", "attached"))

    for shot in SHOTS:
        if args.only and shot[0] not in args.only:
            continue
        svg = await take(source_for, shot, out)
        made.append(svg)
        if args.png:
            png = to_png(svg)
            if png is not None:
                made.append(png)
    if not args.home:
        shutil.rmtree(scratch, ignore_errors=True)
    return made


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="take data from this data directory")
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots", help="output directory")
    parser.add_argument("--png", action="store_true", help="also write PNGs (rsvg-convert)")
    parser.add_argument("--only", nargs="*", help="only these pictures (by name)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(run(args)):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
