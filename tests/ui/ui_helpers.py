"""Helpers for dashboard tests: fixed attempts, signed deliveries over HTTP, polling."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.receiver import Receiver
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import sign

API_KEY = "wp_test_4f9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c"
SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"
ENDPOINT_ID = "ep_3f2a9c"
TEMPLATES_PATH = "/api/v0/passTemplates"
ENDPOINTS_PATH = "/v0/webhookEndpoints"
BASE_MS = 1_795_442_400_000  # 2026-11-23T14:00:00Z (fixed, for deterministic screens)
SIZE = (120, 36)


def body_for(topic: str, pass_id: str, **extra: Any) -> bytes:
    return json.dumps(
        {"type": topic, "data": {"passId": pass_id, "reason": "added_to_wallet", **extra}}
    ).encode()


def attempt(
    n: int,
    *,
    topic: str = "pass.activated",
    verdict: str = VERIFIED,
    reason: str | None = None,
    webhook_id: str | None = None,
    body: bytes | None = None,
    status: int | None = None,
    at_ms: int | None = None,
    note: str | None = None,
) -> Attempt:
    """A fixed attempt: the n-th of a test's history."""
    pass_id = f"pass_{n:04d}"
    body = body if body is not None else body_for(topic, pass_id)
    msg = webhook_id or f"msg_{n:06d}"
    ok = verdict == VERIFIED
    return Attempt(
        received_at_ms=at_ms if at_ms is not None else BASE_MS + n * 1000,
        method="POST",
        path="/webhooks",
        headers=(
            ("Content-Type", "application/json"),
            ("webhook-id", msg),
            ("webhook-timestamp", str((BASE_MS + n * 1000) // 1000)),
            ("webhook-signature", "v1,c2lnbmF0dXJl"),
        ),
        body=body,
        verdict=verdict,
        reason=reason or ("verified" if ok else "no signature matches"),
        detail="" if ok else "tried 1 secret",
        status=status if status is not None else (200 if ok else 401),
        webhook_id=msg,
        endpoint_id=ENDPOINT_ID if ok else None,
        remote_addr="127.0.0.1",
        topic=topic,
        pass_id=pass_id,
        processing_ms=1.5,
        note=note,
    )


async def record_all(
    store: Store, attempts: Iterable[Attempt], *, one_by_one: bool = False
) -> list[Attempt]:
    """Store ``attempts`` in order: in as few commits as the store likes, or one commit each."""
    if one_by_one:
        stored = [await store.record(a) for a in attempts]
    else:
        stored = list(await asyncio.gather(*(store.record(a) for a in attempts)))
    await store.settled()
    return stored


@dataclass
class Sender:
    """Posts deliveries over HTTP to a running receiver, signed like the service would."""

    url: str
    http: httpx.AsyncClient

    async def post(
        self,
        body: bytes,
        *,
        msg_id: str,
        secret: str = SECRET,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        signed = sign(secret, msg_id, body, datetime.now(UTC))
        signed["Content-Type"] = "application/json"
        signed.update(headers or {})
        return await self.http.post(self.url, content=body, headers=signed)


def sender_for(receiver: Receiver, http: httpx.AsyncClient) -> Sender:
    return Sender(receiver.url, http)


async def wait_for(
    condition: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.005
) -> float:
    """Poll until ``condition()`` is truthy; returns the seconds it took. The timeout only says
    "it never happened": a busy CI machine can take seconds for what takes milliseconds here."""
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(interval)
    return time.perf_counter() - started


async def type_into(pilot: Any, field: Any, text: str) -> None:
    """Put ``text`` in an Input as if typed: all but the last character at once (pressing every
    key is slow), then the last one as a real key press."""
    field.focus()
    await pilot.pause()  # let focus (which selects all) happen before the value is set
    field.value = text[:-1]
    field.cursor_position = len(field.value)
    await pilot.press(text[-1])


def plain(renderable: Any, width: int = 120) -> str:
    """What a Rich renderable (a Static's content) reads as, without styles."""
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def scene() -> list[Attempt]:
    """A fixed history for snapshots: deliveries, a rejected one, a message retried twice."""
    from dataclasses import replace

    retried = body_for("pass.activated", "pass_0007")  # a retry carries the same body
    rows = [
        attempt(1, topic="pass.activated"),
        attempt(2, topic="pass.deactivated"),
        attempt(3, verdict="rejected", reason="timestamp too old"),
        replace(
            attempt(
                4, webhook_id="msg_retried", body=retried, status=500, note="injected: fail first 2"
            ),
            received_at_ms=BASE_MS + 4_000,
        ),
        replace(
            attempt(
                5, webhook_id="msg_retried", body=retried, status=500, note="injected: fail first 2"
            ),
            received_at_ms=BASE_MS + 9_000,
        ),
        attempt(6, verdict="rejected", body=b"[@click=app.quit]x[/] \x1b[2J not json"),
        replace(attempt(7, webhook_id="msg_retried"), received_at_ms=BASE_MS + 309_000),
    ]
    return rows
