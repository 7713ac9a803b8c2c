"""Fixtures any test may use. Keep this file small: area-specific fixtures live next to their tests.

* ``clean_env``: no ``WALLETPASS_*`` variable from the developer's shell leaks into a test, and the
  data, config and XDG directories all point into ``tmp_path``.
* Hypothesis runs the same examples on every run (a red build is reproducible, never a dice roll);
  ``HYPOTHESIS_PROFILE=explore`` draws new ones, to hunt for cases before they are pinned with
  ``@example``.
* The test process keeps its scheduling priority: a dashboard attached in-process gives way to
  nothing (``cli/give_way.py``; tests/cli/test_give_way.py checks real processes).
* ``start_server``: a real aiohttp server on 127.0.0.1 with an ephemeral port that records every
  request and answers with whatever the test told it to (a stand-in for the service, or for any
  target a delivery is forwarded to).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import settings
from multidict import CIMultiDict

settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture(autouse=True)
def _keep_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    from walletpass_tui.cli import give_way

    monkeypatch.setattr(give_way, "ACTIVE", False)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Remove every WALLETPASS_* variable; WALLETPASS_HOME is a fresh directory (returned)."""
    for name in list(os.environ):
        if name.startswith("WALLETPASS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    home = tmp_path / "home"
    monkeypatch.setenv("WALLETPASS_HOME", str(home))
    return home


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: str
    headers: CIMultiDict[str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    """One canned answer. ``json`` (any value, serialized) wins over ``body`` when given."""

    status: int = 200
    body: bytes | str = b""
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def response(self) -> web.Response:
        headers = dict(self.headers)
        body = self.body
        if self.json is not None:
            body = json.dumps(self.json)
            headers.setdefault("Content-Type", "application/json")
        data = body.encode() if isinstance(body, str) else body
        return web.Response(status=self.status, body=data, headers=headers)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RecordingServer:
    """Answers ``(method, path)`` from a queue of replies; the last reply repeats.

    A reply is a dict of ``Reply`` fields (``{"status": 503}``, ``{"json": [...]}``), or an async
    aiohttp handler for anything else. ``answer()`` sets a single reply from keywords.
    """

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._replies: dict[tuple[str, str], list[Reply | Handler]] = {}
        self.url = ""

    def reply(self, method: str, path: str, *replies: dict[str, Any] | Handler) -> None:
        self._replies[(method.upper(), path)] = [
            Reply(**r) if isinstance(r, dict) else r for r in replies
        ]

    def answer(self, method: str, path: str, **reply: Any) -> None:
        self.reply(method, path, reply)

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method.upper() and r.path == path]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """The aiohttp handler: record the request, answer what was set for its method and path."""
        body = await request.read()
        self.requests.append(
            RecordedRequest(
                request.method,
                request.path,
                request.query_string,
                CIMultiDict(request.headers),
                body,
            )
        )
        queue = self._replies.get((request.method, request.path))
        if not queue:
            return web.json_response({"error": "nothing configured here"}, status=404)
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(reply, Reply):
            if reply.delay:
                await asyncio.sleep(reply.delay)
            return reply.response()
        return await reply(request)


@pytest.fixture
async def start_server() -> Any:
    """``await start_server()`` -> a started RecordingServer; all are stopped after the test."""
    runners: list[web.AppRunner] = []

    async def start() -> RecordingServer:
        server = RecordingServer()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", server.handle)
        runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        server.url = f"http://127.0.0.1:{port}"
        return server

    yield start
    for runner in runners:
        await runner.cleanup()
