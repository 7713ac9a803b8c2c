"""What the receiver's tests share: hand-signed deliveries (hmac + base64, spec section 5,
independently of verify.py), a store, a registry and receivers started on port 0 (the ``env``
fixture), and small ways to post and read back.

Test files use the fixture by importing ``receiver_env`` (it is registered as ``env``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.receiver import Receiver
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 24).decode()
EP_A = "whsec_" + base64.b64encode(b"a" * 32).decode()
EP_B = "whsec_" + base64.b64encode(b"b" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_0001"}}'


def signature(secret: str, msg_id: str, ts: int | str, body: bytes) -> str:
    key = base64.b64decode(secret.split("_", 1)[1])
    digest = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed(
    msg_id: str, body: bytes = BODY, secret: str = SECRET, ts: int | None = None
) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": signature(secret, msg_id, ts, body),
        "content-type": "application/json",
    }


@dataclass
class Env:
    store: Store
    registry: EndpointRegistry
    start: Callable[..., Awaitable[Receiver]]
    client: httpx.AsyncClient


@pytest.fixture(name="env")
async def receiver_env(tmp_path: Path) -> AsyncIterator[Env]:
    store = await Store.open(tmp_path / "h" / "deliveries.sqlite3", busy_timeout_ms=100)
    registry = EndpointRegistry(tmp_path / "h" / "endpoints.json")
    started: list[Receiver] = []

    async def start(**kw: object) -> Receiver:
        kw.setdefault("secrets", [SigningKey.from_secret(SECRET)])
        kw.setdefault("port", 0)
        receiver = Receiver(store, ReceiverOptions(**kw), registry=registry)  # type: ignore[arg-type]
        await receiver.start()
        started.append(receiver)
        return receiver

    async with httpx.AsyncClient(timeout=10) as client:
        yield Env(store, registry, start, client)
    for receiver in started:
        await receiver.stop()
    await store.close()


async def post(
    env: Env, receiver: Receiver, headers: dict[str, str], body: bytes = BODY, suffix: str = ""
) -> httpx.Response:
    return await env.client.post(receiver.url + suffix, content=body, headers=headers)


async def only_attempt(env: Env) -> Attempt:
    rows = await env.store.log_page()
    assert len(rows) == 1, rows
    attempt = await env.store.attempt(rows[0].id)
    assert attempt is not None
    return attempt


async def raw_exchange(port: int, data: bytes, *, wait: float = 5.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        chunks = []
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(wait):
                while chunk := await reader.read(65536):
                    chunks.append(chunk)
                    if b"\r\n\r\n" in b"".join(chunks) and b"Connection: close" not in chunks[0]:
                        break
        return b"".join(chunks)
    finally:
        writer.close()
