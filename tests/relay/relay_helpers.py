"""Relay test helpers: signed posts, channels, collecting subscribers, a relay as a real process.

Everything listens on 127.0.0.1 with an ephemeral port; every relay has its own data directory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from standardwebhooks import Webhook

from walletpass_tui.relay.events import RelayedDelivery
from walletpass_tui.relay.link.subscriber import RelaySubscriber, SubscriberState
from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.relay.server.storage import IssuedChannel, RelayDB, database_path

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec_" + base64.b64encode(b"relay-test-secret-0123456789abcd").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"some-other-secret-0123456789abcd").decode()


def signed(
    secret: str = SECRET, body: bytes | None = None, msg_id: str | None = None
) -> tuple[bytes, dict[str, str]]:
    """A body and the three headers, signed by the standardwebhooks package itself."""
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    if body is None:
        body = json.dumps({"type": "pass.activated", "data": {"passId": msg_id}}).encode()
    headers = {"webhook-id": msg_id, "content-type": "application/json"}
    now = datetime.now(UTC)
    headers["webhook-timestamp"] = str(int(now.timestamp()))
    headers["webhook-signature"] = Webhook(secret).sign(msg_id, now, body.decode())
    return body, headers


async def post_all(session: aiohttp.ClientSession, url: str, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        body, headers = signed()
        async with session.post(url, data=body, headers=headers) as r:
            assert r.status == 200, await r.text()
        ids.append(headers["webhook-id"])
    return ids


def add_channel(home: Path, name: str, **kw: Any) -> IssuedChannel:
    db = RelayDB(database_path(home))
    try:
        return db.add_channel(name, **kw)
    finally:
        db.close()


@dataclass
class Collected:
    """What a subscriber received, in order."""

    items: list[RelayedDelivery] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    states: list[SubscriberState] = field(default_factory=list)

    def on_state(self, state: SubscriberState) -> None:
        self.states.append(state)
        if state.connected:
            self.connected.set()

    async def on_delivery(self, delivery: RelayedDelivery) -> None:
        self.items.append(delivery)
        self.arrived.set()

    @property
    def ids(self) -> list[str | None]:
        return [d.webhook_id for d in self.items]

    async def wait_for(self, count: int, timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.items) < count:
                self.arrived.clear()
                await self.arrived.wait()


async def follow(
    url: str, token: str, after: int = 0, **kw: Any
) -> tuple[RelaySubscriber, Collected, asyncio.Task[None]]:
    collected = Collected()
    sub = RelaySubscriber(
        url,
        token,
        after=after,
        on_delivery=collected.on_delivery,
        on_state=collected.on_state,
        backoff_initial_s=0.05,
        **kw,
    )
    task = asyncio.create_task(sub.run())
    return sub, collected, task


async def stop_task(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def urls(server: RelayServer, issued: IssuedChannel) -> tuple[str, str]:
    return ingress_url(server.url, issued.channel.slug), subscribe_url(
        server.url, issued.channel.slug
    )


class RelayProcess:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.port = 0

    def start(self, port: int = 0, *extra: str) -> None:
        env = dict(os.environ, WALLETPASS_HOME=str(self.home), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "walletpass_tui",
                "relay",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--heartbeat",
                "0.2",
                *extra,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("Relay listening on "):
            self.proc.kill()
            raise AssertionError(f"relay did not start: {line!r} {self.proc.stderr.read()!r}")  # type: ignore[union-attr]
        self.url = line.split()[3]
        self.port = int(self.url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)
