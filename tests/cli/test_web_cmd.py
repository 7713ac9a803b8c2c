"""``walletpass-tui web`` without a browser: every request without the token refused 403 (the page,
the static files, the websocket upgrade), the token kept out of aiohttp's access log, the debug
log and stderr, the non-loopback warning, the one-sentence failures, the bounds on sessions and
browser messages, and Ctrl+C ending every attached dashboard it runs."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import httpx
import pytest
from process_helpers import DEADLINE_S, Proc, start_listen
from web_helpers import Web, alive, websocket_upgrade

from walletpass_tui.cli.web_cmd.server import FORBIDDEN, MAX_MESSAGE_BYTES, WebView, serve

TOKEN = "k3Yq1wTt2bq8H0tJ2m1Vn9sQ0cX4dF6gH8jK1lM3nP5"
SLEEPER = "exec sleep 60"  # stands in for an attached dashboard: a process that never answers


def get(url: str) -> httpx.Response:
    with httpx.Client(timeout=DEADLINE_S, trust_env=False, follow_redirects=False) as client:
        return client.get(url)


async def until(condition: Callable[[], object]) -> None:
    """Polls ``condition``; the deadline only says the server did not hang."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        await asyncio.sleep(0.05)


async def served(view: WebView) -> AsyncIterator[int]:
    sock = socket.create_server(("127.0.0.1", 0))
    sock.setblocking(False)
    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.create_task(serve(view, sock, lambda _port: ready.set(), stop))
    await asyncio.wait_for(ready.wait(), DEADLINE_S)
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        await asyncio.wait_for(task, DEADLINE_S)


@pytest.fixture
async def view() -> WebView:
    return WebView(SLEEPER, TOKEN, stop_wait_s=0.2)


@pytest.fixture
async def port(view: WebView) -> AsyncIterator[int]:
    async for bound in served(view):
        yield bound


WRONG_PATHS = [
    "/",
    "/index.html",
    "/ws",
    "/static/js/textual.js",
    "/static/css/xterm.css",
    "/download/abc",
    "/wrong/",
    "/wrong/static/js/textual.js",
    f"/{TOKEN[:-1]}/",
    f"/{TOKEN}x/",
    f"/{TOKEN.lower()}/",
    f"/x/{TOKEN}/",
    f"/?token={TOKEN}",
    f"//{TOKEN}/",
]


async def test_every_path_without_the_token_is_403_with_its_reason(port: int) -> None:
    async with httpx.AsyncClient(timeout=DEADLINE_S, trust_env=False) as client:
        for path in WRONG_PATHS:
            answer = await client.get(f"http://127.0.0.1:{port}{path}")
            assert (path, answer.status_code) == (path, 403)
            assert answer.text == FORBIDDEN
        page = await client.get(f"http://127.0.0.1:{port}/{TOKEN}/")
        assert page.status_code == 200
        assert 'class="textual-terminal"' in page.text
        assert page.headers["Referrer-Policy"] == "no-referrer"
        script = await client.get(f"http://127.0.0.1:{port}/{TOKEN}/static/js/textual.js")
        assert script.status_code == 200
        assert "WebSocket" in script.text
        bare = await client.get(f"http://127.0.0.1:{port}/{TOKEN}")
        assert (bare.status_code, bare.headers["Location"]) == (302, f"/{TOKEN}/")


async def test_a_websocket_upgrade_without_the_token_is_403(port: int) -> None:
    for path in ("/ws", "/wrong/ws", f"/{TOKEN[:-1]}/ws", f"/{TOKEN}x/ws", f"/ws?{TOKEN}"):
        status = await asyncio.to_thread(websocket_upgrade, port, path)
        assert (path, status) == (path, "HTTP/1.1 403 Forbidden")
    status = await asyncio.to_thread(websocket_upgrade, port, f"/{TOKEN}/ws")
    assert status == "HTTP/1.1 101 Switching Protocols"


async def test_only_textual_serves_own_static_files_are_served(port: int) -> None:
    async with httpx.AsyncClient(timeout=DEADLINE_S, trust_env=False) as client:
        for name in (
            "%2e%2e/%2e%2e/server.py",
            "..%2f..%2fserver.py",
            "js",
            "../js/textual.js",
        ):
            answer = await client.get(f"http://127.0.0.1:{port}/{TOKEN}/static/{name}")
            assert (name, answer.status_code) == (name, 404)
            assert "import" not in answer.text


async def test_the_access_log_never_holds_the_token(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with httpx.AsyncClient(timeout=DEADLINE_S, trust_env=False) as client:
        for path in (f"/{TOKEN}/", f"/{TOKEN}/static/css/xterm.css", f"/{TOKEN}/nothing", "/"):
            await client.get(f"http://127.0.0.1:{port}{path}")
    server_side = [
        record.getMessage()
        for record in caplog.records
        if not record.name.startswith(("httpx", "httpcore"))  # the test's own client
    ]
    assert not [line for line in server_side if TOKEN in line]


async def test_sessions_are_bounded_and_a_closed_one_frees_its_place() -> None:
    view = WebView(SLEEPER, TOKEN, max_sessions=1, stop_wait_s=0.2)
    async for port in served(view):
        url = f"http://127.0.0.1:{port}/{TOKEN}/ws"
        async with aiohttp.ClientSession() as session:
            first = await session.ws_connect(url)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(url)
            assert refused.value.status == 503
            await first.close()
            await until(lambda: not view.sessions)
            again = await session.ws_connect(url)
            await again.close()


async def test_upgrades_arriving_at_once_never_exceed_the_bound() -> None:
    view = WebView(SLEEPER, TOKEN, max_sessions=2, stop_wait_s=0.2)
    async for port in served(view):
        url = f"http://127.0.0.1:{port}/{TOKEN}/ws"
        async with aiohttp.ClientSession() as session:

            async def connect(url: str = url) -> aiohttp.ClientWebSocketResponse | int:
                try:
                    return await session.ws_connect(url)
                except aiohttp.WSServerHandshakeError as refused:
                    return refused.status

            outcomes = await asyncio.gather(*(connect() for _ in range(8)))
            opened = [o for o in outcomes if not isinstance(o, int)]
            assert len(opened) == 2
            assert [o for o in outcomes if isinstance(o, int)] == [503] * 6
            await until(lambda: len(view.sessions) == 2)
            for ws in opened:
                await ws.close()
            await until(lambda: view.places == 0)


async def test_an_oversized_browser_message_closes_its_session_and_ends_its_process() -> None:
    view = WebView(SLEEPER, TOKEN, stop_wait_s=0.2)
    async for port in served(view):
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"http://127.0.0.1:{port}/{TOKEN}/ws")
            await until(lambda: bool(view.sessions) and next(iter(view.sessions))._process)
            process = next(iter(view.sessions))._process
            assert process is not None
            await ws.send_str('["stdin", "' + "a" * MAX_MESSAGE_BYTES + '"]')
            message = await ws.receive(timeout=DEADLINE_S)
            assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
            await asyncio.wait_for(process.wait(), DEADLINE_S)
            await ws.close()


async def test_malformed_browser_messages_are_ignored(view: WebView, port: int) -> None:
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"http://127.0.0.1:{port}/{TOKEN}/ws")
        for garbage in ("not json", "[]", '["resize", "x"]', '{"a": 1}', '["stdin", 5]', "[1,2,3]"):
            await ws.send_str(garbage)
        await ws.send_str('{"ping": 1, "not a ping": 2}')  # two keys: never taken as [kind, data]
        await ws.send_str('["ping", "still here"]')
        message = await ws.receive(timeout=DEADLINE_S)
        assert message.json() == ["pong", "still here"]
        await ws.close()


async def test_a_message_nested_past_the_parsers_depth_is_ignored_and_the_session_goes_on(
    view: WebView, port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """60,000 ``[`` fit in a message; the parser gives up on them (RecursionError)."""
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"http://127.0.0.1:{port}/{TOKEN}/ws")
        await ws.send_str('["resize", {"width": 80, "height": 24}]')
        for deep in ("[" * 60_000, "[" * 30_000 + "]" * 30_000, '["stdin", ' + "{" * 30_000):
            assert len(deep.encode()) < MAX_MESSAGE_BYTES
            await ws.send_str(deep)
        await ws.send_str('["ping", "still here"]')
        message = await ws.receive(timeout=DEADLINE_S)
        assert message.json() == ["pong", "still here"]
        assert len(view.sessions) == 1
        await ws.close()
    assert not [r for r in caplog.records if r.exc_info], "no traceback logged"


def resizes_told(recorded: Path) -> list[tuple[int, int]]:
    """The sizes told to the dashboard: every resize packet textual-serve wrote to its stdin."""
    data, sizes = recorded.read_bytes(), []
    while len(data) >= 5:
        size = int.from_bytes(data[1:5], "big")
        kind, payload, data = data[:1], data[5 : 5 + size], data[5 + size :]
        if kind == b"M" and (meta := json.loads(payload))["type"] == "resize":
            sizes.append((meta["width"], meta["height"]))
    return sizes


async def test_a_resize_that_cannot_be_a_size_is_ignored_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    recorded = tmp_path / "stdin"
    view = WebView(f"exec cat > {recorded}", TOKEN, stop_wait_s=0.2)
    async for port in served(view):
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"http://127.0.0.1:{port}/{TOKEN}/ws")
            for width, height in [
                ("1e999", "40"),
                ("-1e999", "40"),
                ("NaN", "40"),
                ("Infinity", "-Infinity"),
                ("120", "1e999"),
                ("true", "40"),
                ('"120"', "40"),
                ("null", "40"),
                ("[120]", "40"),
                ("0", "40"),
                ("-5", "40"),
                ("0.5", "40"),
            ]:
                await ws.send_str(f'["resize", {{"width": {width}, "height": {height}}}]')
            await ws.send_str('["resize", {"width": 120.0, "height": 40}]')
            await ws.send_str('["resize", {"width": 1' + "0" * 400 + ', "height": 1e300}]')
            await ws.send_str('["ping", "still here"]')
            message = await ws.receive(timeout=DEADLINE_S)
            assert message.json() == ["pong", "still here"]
            await until(lambda: recorded.exists() and len(resizes_told(recorded)) >= 2)
            assert resizes_told(recorded) == [(120, 40), (1000, 500)]
            await ws.close()


@pytest.mark.parametrize(
    ("query", "told"),
    [
        ("width=120&height=40", "120 40"),
        ("width=1e999&height=NaN", "80 24"),
        ("width=" + "9" * 5000 + "&height=0040", "1000 40"),
        ("width=-5&height=%D9%A3%D9%A0", "80 24"),  # Arabic-Indic digits are not ASCII
        ("width=0&height=", "80 24"),
    ],
)
async def test_the_size_a_page_asks_for_is_bounded_and_what_cannot_be_one_is_the_default(
    tmp_path: Path, query: str, told: str
) -> None:
    recorded = tmp_path / "size"
    view = WebView(f'echo "$COLUMNS $ROWS" > {recorded}; {SLEEPER}', TOKEN, stop_wait_s=0.2)
    async for port in served(view):
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"http://127.0.0.1:{port}/{TOKEN}/ws?{query}")
            await until(lambda: recorded.exists() and recorded.read_text().endswith("\n"))
            assert recorded.read_text() == told + "\n"
            await ws.close()


# -- the real command --------------------------------------------------------------------------


def test_with_nothing_running_it_says_to_start_listen(clean_env: Path) -> None:
    proc = Proc("web", "--port", "0")
    assert proc.proc.wait(timeout=DEADLINE_S) == 1
    lines = proc.err.rest()
    assert len(lines) == 1
    assert f"No receiver runs on {clean_env}" in lines[0]
    assert f"walletpass-tui listen --home {clean_env}" in lines[0]
    assert proc.out.rest() == []


def test_a_port_in_use_is_one_sentence(clean_env: Path) -> None:
    listen, _ = start_listen()
    try:
        with socket.create_server(("127.0.0.1", 0)) as taken:
            port = taken.getsockname()[1]
            proc = Proc("web", "--port", str(port))
            assert proc.proc.wait(timeout=DEADLINE_S) == 1
            assert proc.err.rest() == [
                f"walletpass-tui: error: Port {port} is already in use on 127.0.0.1; "
                "pick another with --port."
            ]
    finally:
        listen.kill()


def test_the_token_is_in_the_url_only_never_in_the_log_or_stderr(
    clean_env: Path, tmp_path: Path
) -> None:
    log = tmp_path / "debug.log"
    listen, _ = start_listen()
    web = None
    try:
        web = Web("--log-file", str(log))
        assert get(web.url).status_code == 200
        assert get(f"http://127.0.0.1:{web.port}/{web.token[:-2]}/").status_code == 403
        assert listen.interrupt() == 0
        stopped = get(web.url)  # the receiver went away: the page says what to do
        assert stopped.status_code == 503
        assert "Start one with `walletpass-tui listen --home" in stopped.text
        assert web.proc.interrupt() == 0
        err = web.proc.err.rest()
        out = web.proc.out.seen + web.proc.out.rest()
    finally:
        listen.kill()
        if web:
            web.proc.kill()
    written = log.read_text()
    assert f"serving {clean_env} on http://127.0.0.1:{web.port}/…/" in written
    assert web.token not in written
    assert not any(web.token in line for line in err)
    assert not any("warning" in line for line in err)
    assert sum(web.token in line for line in out) == 1


def test_a_receiver_on_a_path_beyond_ascii_is_served(clean_env: Path) -> None:
    listen, _ = start_listen("--path", "/wébhooks")
    web = None
    try:
        web = Web()
        assert get(web.url).status_code == 200
    finally:
        listen.kill()
        if web:
            web.proc.kill()


def test_a_non_loopback_host_prints_who_can_see_the_history(clean_env: Path) -> None:
    listen, _ = start_listen()
    try:
        proc = Proc("web", "--host", "0.0.0.0", "--port", "0")
        warning = proc.err.until(lambda line: line.startswith("warning:"))
        assert "anyone who can reach this port and has the URL sees the delivery history" in (
            warning
        )
        assert proc.interrupt() == 0
    finally:
        listen.kill()


def test_ctrl_c_ends_every_attached_dashboard_without_a_traceback(clean_env: Path) -> None:
    listen, _ = start_listen()
    web = None
    try:
        web = Web()
        ws_url = f"ws://127.0.0.1:{web.port}/{web.token}/ws?width=100&height=30"

        async def open_two_and_interrupt() -> list[int]:
            async with aiohttp.ClientSession() as session:
                sockets = [await session.ws_connect(ws_url) for _ in range(2)]
                for ws in sockets:  # the dashboard's first frame
                    message = await ws.receive(timeout=DEADLINE_S)
                    assert message.type == aiohttp.WSMsgType.BINARY
                children = web.children()
                assert len(children) == 2
                assert web.proc.interrupt() == 0
                for ws in sockets:
                    await ws.close()
                return children

        children = asyncio.run(open_two_and_interrupt())
        assert not [pid for pid in children if alive(pid)]
        err = web.proc.err.rest()
        assert not any("Traceback" in line for line in err), err
        assert err[-1] == "Stopped."
    finally:
        listen.kill()
        if web:
            web.proc.kill()
