"""Relay test helpers: signed posts, channels, collecting subscribers, a relay as a real process,
and the relay's database (SQLite or PostgreSQL) seen from a test.

Everything listens on 127.0.0.1 with an ephemeral port; every relay has its own data directory and,
on PostgreSQL, its own database.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from standardwebhooks import Webhook

from walletpass_tui.relay.events import RelayedDelivery
from walletpass_tui.relay.link.subscriber import RelaySubscriber, SubscriberState
from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
from walletpass_tui.relay.server.storage import open_storage
from walletpass_tui.relay.server.storage.base import IssuedChannel, RelayStorage
from walletpass_tui.relay.server.storage.target import SQLITE, database_target

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


@dataclass(frozen=True)
class RelayData:
    """Where a relay keeps its data: its home and its database (None: SQLite in the home)."""

    home: Path
    database: str | None = None

    @property
    def backend(self) -> str:
        return "postgres" if self.database else "sqlite"

    def options(self, **kw: Any) -> RelayOptions:
        """Options for a relay on 127.0.0.1, an ephemeral port, on this data."""
        kw.setdefault("host", "127.0.0.1")
        kw.setdefault("port", 0)
        return RelayOptions(home=self.home, database=self.database, **kw)

    def server(self, **kw: Any) -> RelayServer:
        return RelayServer(self.options(**kw))


Where = Any  # a RelayData, RelayServer or RelayProcess, or a home Path (SQLite)


def data_of(where: Where) -> RelayData:
    if isinstance(where, RelayData):
        return where
    if isinstance(where, RelayServer):
        return RelayData(where.options.home, where.options.database)
    if isinstance(where, RelayProcess):
        return RelayData(where.home, where.database)
    return RelayData(Path(where))


class TestDB:
    """The relay's database, synchronously, whichever the backend: the channel commands through
    the real storage (on a loop of its own, so a test's loop may call it), and raw counts."""

    __test__ = False

    def __init__(self, where: Where) -> None:
        self.data = data_of(where)
        self.target = database_target(self.data.database, self.data.home)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.storage: RelayStorage = self.call(open_storage(self.target, serving=False))

    def call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(60)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.storage, name)
        return lambda *a, **kw: self.call(method(*a, **kw))

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (no parameters; the same text in both dialects), committed."""
        if self.target.kind == SQLITE:
            db = sqlite3.connect(self.target.path, isolation_level=None)  # type: ignore[arg-type]
            try:
                return [tuple(r) for r in db.execute(sql).fetchall()]
            finally:
                db.close()

        async def fetch() -> list[tuple[Any, ...]]:
            import asyncpg

            conn = await asyncpg.connect(self.target.url)
            try:
                return [tuple(r) for r in await conn.fetch(sql)]
            finally:
                await conn.close()

        return self.call(fetch())  # type: ignore[no-any-return]

    def close(self) -> None:
        try:
            self.call(self.storage.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    def __enter__(self) -> TestDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def add_channel(where: Where, name: str, **kw: Any) -> IssuedChannel:
    with TestDB(where) as db:
        return db.add_channel(name, **kw)  # type: ignore[no-any-return]


def revoke(where: Where, name_or_token: str) -> int:
    with TestDB(where) as db:
        return db.revoke(name_or_token)  # type: ignore[no-any-return]


def query(where: Where, sql: str) -> list[tuple[Any, ...]]:
    with TestDB(where) as db:
        return db.query(sql)


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
    def __init__(self, home: Path, database: str | None = None) -> None:
        self.home = home
        self.database = database
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.port = 0

    def start(self, port: int = 0, *extra: str, lines: bool = False) -> None:
        """``lines``: print a line per request (read them from ``proc.stdout``); by default
        ``--quiet``, so nobody has to read the pipe."""
        env = dict(os.environ, WALLETPASS_HOME=str(self.home), PYTHONUNBUFFERED="1")
        env.pop("WALLETPASS_RELAY_DATABASE", None)
        if self.database:
            env["WALLETPASS_RELAY_DATABASE"] = self.database
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
                *([] if lines else ["--quiet"]),
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
