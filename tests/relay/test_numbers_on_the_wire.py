"""Numbers the laptop side reads from a relay or a file: plain ASCII digits, bounded, or nothing.

Python's ``int()`` also takes ``"+5"``, ``" 5"``, ``"1_0"`` and other scripts' digits (``"١٢٣"``),
``str.isdigit()`` passes ``"²"`` (which ``int()`` then refuses), and ``int()`` of 100,000 digits
raises. Each site is fed every one of them from a real server on 127.0.0.1 or a real file.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from relay_helpers import add_channel, follow, stop_task, urls

from walletpass_tui.relay.events import (
    EVENT_NAME,
    EventError,
    RelayedDelivery,
    delivery_data,
    sse_comment,
)
from walletpass_tui.relay.link.follow import load_cursor
from walletpass_tui.relay.server.serve import RelayServer

NOT_NUMBERS = ["²", "١٢٣", "1_0", " 5", "+5", "9" * 100_000]
IDS = ["superscript", "arabic-indic", "underscore", "space", "plus", "100k-digits"]


def _data(path: str = "/in/x") -> bytes:
    return delivery_data(
        received_at_ms=0,
        method="POST",
        path=path,
        headers=(),
        body=b"{}",
        source=None,
        forwarded_for=None,
        client=None,
        channel="x",
    )


def _event(event_id: str, data: bytes) -> bytes:
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (event_id.encode(), EVENT_NAME.encode(), data)


@pytest.fixture
async def stream_server() -> AsyncIterator[Callable[[bytes], Awaitable[str]]]:
    """``await stream_server(raw)`` -> a subscribe URL on 127.0.0.1 whose stream is ``raw``, then
    held open."""
    runners: list[web.AppRunner] = []

    async def start(raw: bytes) -> str:
        async def stream(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(raw)
            await asyncio.Event().wait()
            return response

        app = web.Application()
        app.router.add_get("/channels/x/events", stream)
        runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}/channels/x/events"

    yield start
    for runner in runners:
        await runner.cleanup()


# 100,000 digits make a line past the stream's bound for anything but data: that connection is
# dropped as broken (tests/relay/test_hostile_relay.py), so the head case stops short of it.
@pytest.mark.parametrize("bad", NOT_NUMBERS[:-1], ids=IDS[:-1])
async def test_a_head_that_is_not_a_number_is_passed_over(
    bad: str, stream_server: Callable[[bytes], Awaitable[str]]
) -> None:
    """A head that is not plain digits is ignored; the delivery after it is handed over, and the
    subscriber is still running."""
    url = await stream_server(sse_comment(f"connected head={bad}") + _event("7", _data("/in/good")))
    sub, collected, task = await follow(url, "wpr_token")
    try:
        await collected.wait_for(1)
        await asyncio.sleep(0)  # anything else already read would be handled by now
        assert not task.done(), task.exception() if task.done() else None
        assert [(d.cursor, d.path) for d in collected.items] == [(7, "/in/good")]
        assert sub.cursor == 7 and sub.state.head == 7
    finally:
        await stop_task(task)


@pytest.mark.parametrize("bad", NOT_NUMBERS, ids=IDS)
async def test_an_event_id_that_is_not_a_number_is_refused_never_skipped_past(
    bad: str, stream_server: Callable[[bytes], Awaitable[str]]
) -> None:
    """An event whose id is not plain digits is refused: nothing is handed over, the cursor
    stays where it was (so what follows is fetched again, not skipped), and the subscriber keeps
    running and retrying."""
    url = await stream_server(_event(bad, _data("/in/bad")) + _event("7", _data("/in/good")))
    sub, collected, task = await follow(url, "wpr_token")
    try:
        async with asyncio.timeout(30):  # did not hang: a refusal is counted on each try
            while sub.state.error is None:  # noqa: ASYNC110 - the state has no event to await
                await asyncio.sleep(0.05)
        assert not task.done(), task.exception() if task.done() else None
        assert collected.items == [] and sub.cursor == 0
    finally:
        await stop_task(task)


@pytest.mark.parametrize("bad", NOT_NUMBERS, ids=IDS)
def test_a_saved_cursor_that_is_not_a_number_starts_over(bad: str, tmp_path: Path) -> None:
    path = tmp_path / "x.cursor"
    path.write_text(bad + "\n", encoding="utf-8")
    assert load_cursor(path) == 0
    path.write_text("12\n", encoding="ascii")
    assert load_cursor(path) == 12
    path.write_text("12", encoding="ascii")
    assert load_cursor(path) == 12
    assert load_cursor(tmp_path / "missing.cursor") == 0


def test_a_cursor_file_that_is_a_fifo_or_a_device_starts_over_never_waited_on(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo.cursor"
    os.mkfifo(fifo, 0o600)
    zero = tmp_path / "zero.cursor"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        done: list[int] = []
        reader = threading.Thread(
            target=lambda p=path, d=done: d.append(load_cursor(p)), daemon=True
        )
        reader.start()
        reader.join(30)  # "did not wait on the FIFO"; never a timing
        assert done == [0]


@pytest.mark.parametrize("bad", NOT_NUMBERS, ids=IDS)
async def test_the_relay_refuses_a_cursor_that_is_not_a_number(
    bad: str, relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    _, sub_url = urls(relay, issued)
    auth = {"Authorization": f"Bearer {issued.token}"}
    async with http.get(sub_url, params={"after": bad}, headers=auth) as response:
        assert response.status == 400
        # 100,000 digits do not fit a request line: the HTTP layer refuses them first.
        if len(bad) < 1000:
            assert "take a cursor" in await response.text()


@pytest.mark.parametrize("value", ["١٢٣", "5", 1.5, True, -1, 2**63, None])
def test_a_relayed_delivery_time_must_be_a_json_whole_number(value: object) -> None:
    obj = json.loads(_data())
    obj["received_at_ms"] = value
    with pytest.raises(EventError, match=r"received_at_ms is (missing|not a time)"):
        RelayedDelivery.parse(1, json.dumps(obj).encode())
    obj["received_at_ms"] = 1_700_000_000_000
    assert RelayedDelivery.parse(1, json.dumps(obj).encode()).received_at_ms == 1_700_000_000_000
