"""What the forwarding and replay tests share: a user's target app on 127.0.0.1 that verifies
signatures with the ``standardwebhooks`` package and records what it got, deliveries signed with
the target's secret, and the ``env`` fixture (a store, receivers with forwarders, targets).

Test files use the fixture by importing ``forward_env`` (it is registered as ``env``).
"""

from __future__ import annotations

import asyncio
import base64
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from multidict import CIMultiDict
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.forward import (
    ACK_TARGET_BUDGET_S,
    Forwarder,
    Route,
)
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.receiver import Receiver
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"f" * 32).decode()


def body_for(topic: str, pass_id: str = "pass_0001") -> bytes:  # noqa: S107
    return f'{{"type": "{topic}", "data": {{"passId": "{pass_id}"}}}}'.encode()


def signed(msg_id: str, body: bytes, ts: datetime | None = None) -> dict[str, str]:
    headers = sign(SECRET, msg_id, body, ts or datetime.now(UTC))
    headers["content-type"] = "application/json; charset=utf-8"
    return headers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Got:
    body: bytes
    headers: CIMultiDict[str]
    verified: bool
    error: str | None


@dataclass
class TargetApp:
    """The user's app: verifies with standardwebhooks, answers ``status`` after ``delay``."""

    port: int = 0
    status: int = 200
    delay: float = 0.0
    got: list[Got] = field(default_factory=list)
    runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            Webhook(SECRET).verify(body, dict(request.headers))
            verified, error = True, None
        except WebhookVerificationError as exc:
            verified, error = False, str(exc)
        self.got.append(Got(body, CIMultiDict(request.headers), verified, error))
        if self.delay:
            await asyncio.sleep(self.delay)
        if not verified:
            return web.Response(status=400, text=f"bad signature: {error}")
        return web.Response(status=self.status, text="thanks", headers={"X-Target": "yes"})

    async def start(self) -> TargetApp:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self.runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = self.runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


@dataclass
class Env:
    path: Path
    store: Store
    registry: EndpointRegistry
    client: httpx.AsyncClient
    targets: list[TargetApp]
    receivers: list[Receiver]
    forwarders: list[Forwarder]

    async def target(self, **kw: object) -> TargetApp:
        app = await TargetApp(**kw).start()  # type: ignore[arg-type]
        self.targets.append(app)
        return app

    async def receiver(
        self,
        routes: list[Route],
        *,
        ack_target: bool = False,
        ack_budget_s: float = ACK_TARGET_BUDGET_S,
        **fw: object,
    ) -> Receiver:
        forwarder = Forwarder(self.store, routes, **fw)  # type: ignore[arg-type]
        receiver = Receiver(
            self.store,
            ReceiverOptions(secrets=[SigningKey.from_secret(SECRET)], port=0),
            registry=self.registry,
            forwarder=forwarder,
            ack_target=ack_target,
            ack_budget_s=ack_budget_s,
        )
        await forwarder.start()
        await receiver.start()
        self.receivers.append(receiver)
        self.forwarders.append(forwarder)
        return receiver

    async def post(self, receiver: Receiver, msg_id: str, body: bytes) -> httpx.Response:
        return await self.client.post(receiver.url, content=body, headers=signed(msg_id, body))

    async def shutdown(self) -> None:
        for receiver in self.receivers:
            await receiver.stop()
        for forwarder in self.forwarders:
            await forwarder.stop()
        self.receivers.clear()
        self.forwarders.clear()


@pytest.fixture(name="env")
async def forward_env(tmp_path: Path) -> AsyncIterator[Env]:
    path = tmp_path / "h" / "deliveries.sqlite3"
    store = await Store.open(path)
    registry = EndpointRegistry(tmp_path / "h" / "endpoints.json")
    async with httpx.AsyncClient(timeout=10) as client:
        e = Env(path, store, registry, client, [], [], [])
        yield e
        await e.shutdown()
        for target in e.targets:
            await target.stop()
    await e.store.close()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def stored_attempt(store: Store, msg_id: str) -> Attempt:
    attempts = await store.message_attempts(msg_id)
    assert attempts, msg_id
    return attempts[-1]
