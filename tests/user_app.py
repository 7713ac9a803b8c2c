"""The user's own app, as forwards, replays and the check reach it: an aiohttp server on 127.0.0.1
(plain HTTP, or HTTPS with a certificate of the test's choosing) on an ephemeral port, in a thread
of its own so that a test may block on a ``walletpass-tui`` process or call ``main()`` while it
answers. It records every request exactly as received (headers in order, a header sent twice
seen twice) and answers with the bodies it is given, in turn (the last one repeats).

Test files use the fixture by importing ``user_app_fixture`` (registered as ``user_app``):
``app = user_app(answers=[b"..."], tls=context)``; all are stopped after the test.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest
from aiohttp import web

DEADLINE_S = 30.0  # "did not hang" guard, never a timing assertion


@dataclass(frozen=True)
class Seen:
    """One request as the app received it."""

    headers: tuple[tuple[str, str], ...]  # in order, as sent
    body: bytes

    def values(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


class UserApp:
    def __init__(
        self,
        *,
        answers: Sequence[bytes] = (b"ok",),
        status: int = 200,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.answers = list(answers) or [b""]
        self.status = status
        self.tls = tls
        self.seen: list[Seen] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/hook"

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers)
        self.seen.append(Seen(headers, body))
        answer = self.answers[min(len(self.seen), len(self.answers)) - 1]
        return web.Response(status=self.status, body=answer, content_type="text/plain")

    async def _start(self) -> None:
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.tls)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def start(self) -> UserApp:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(DEADLINE_S)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(DEADLINE_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(DEADLINE_S)
        self._loop.close()

    def wait_for(self, count: int) -> list[Seen]:
        """The requests once at least ``count`` arrived (a "did not hang" guard only)."""
        end = time.monotonic() + DEADLINE_S
        while len(self.seen) < count:
            assert time.monotonic() < end, f"{len(self.seen)} of {count} requests arrived"
            time.sleep(0.02)
        return list(self.seen)


@pytest.fixture(name="user_app")
def user_app_fixture() -> Iterator[Callable[..., UserApp]]:
    started: list[UserApp] = []

    def start(**options: object) -> UserApp:
        app = UserApp(**options).start()  # type: ignore[arg-type]
        started.append(app)
        return app

    yield start
    for app in started:
        app.stop()
