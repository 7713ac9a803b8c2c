"""Fixtures for the check: sample receivers served on 127.0.0.1 with ephemeral ports, in the test's
event loop (``serve``) or on a thread of their own for the command line (``serve_in_thread``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from sample_receivers import Handler

from walletpass_tui.webhooks.store import Store


class Served:
    """A sample receiver on 127.0.0.1; ``hits`` counts every request it got, on any path."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.hits = 0
        self.url = ""

    def app(self) -> web.Application:
        async def count(request: web.Request) -> web.StreamResponse:
            self.hits += 1
            if request.path != "/webhooks":
                await request.read()
                return web.Response(status=404, text="not here")
            return await self.handler(request)

        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", count)
        return app


async def _start(served: Served) -> web.AppRunner:
    runner = web.AppRunner(served.app(), shutdown_timeout=0.1, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    served.url = f"http://127.0.0.1:{runner.addresses[0][1]}/webhooks"
    return runner


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], asyncio.Future[Served]]]:
    """``await serve(handler)`` -> a started receiver in this test's loop, stopped afterwards."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> Served:
        served = Served(handler)
        runners.append(await _start(served))
        return served

    yield start  # type: ignore[misc]
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
def serve_in_thread() -> Iterator[Callable[[Handler], Served]]:
    """``serve_in_thread(handler)`` -> a receiver on its own thread and loop (for ``main()``)."""
    stops: list[Callable[[], None]] = []

    def start(handler: Handler) -> Served:
        served = Served(handler)
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        holder: dict[str, web.AppRunner] = {}

        def run() -> None:
            asyncio.set_event_loop(loop)
            holder["runner"] = loop.run_until_complete(_start(served))
            ready.set()
            loop.run_forever()
            loop.run_until_complete(holder["runner"].cleanup())
            loop.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        assert ready.wait(10), "the sample receiver did not start"

        def stop() -> None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)

        stops.append(stop)
        return served

    yield start
    for stop in stops:
        stop()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(tmp_path / "history.sqlite3")
    yield opened
    await opened.close()
