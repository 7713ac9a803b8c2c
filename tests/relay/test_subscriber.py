"""The subscriber client: SSE parsing (any chunking), resume, reconnect, 401/404 stop it."""

from __future__ import annotations

import asyncio
import random

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay_helpers import RelayData, add_channel, follow, signed, stop_task, urls

from walletpass_tui.relay.events import RelayedDelivery
from walletpass_tui.relay.link.failures import RelayAuthError, RelayUrlError
from walletpass_tui.relay.link.sse import SSEComment, SSEMessage, SSEParser
from walletpass_tui.relay.link.subscriber import RelaySubscriber, backoff_delay
from walletpass_tui.relay.server.ingress import IngressOptions
from walletpass_tui.relay.server.serve import RelayServer

# -- parsing ----------------------------------------------------------------------------------

_text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n\0", blacklist_categories=("Cs",)),
    max_size=40,
)
_event = st.tuples(
    st.integers(min_value=0, max_value=2**63 - 1),  # id
    st.sampled_from(["delivery", "message", "other"]),
    st.lists(_text, min_size=1, max_size=4),  # data lines
    st.lists(_text.filter(lambda t: True), max_size=2),  # comments before it
)


def _encode(events: list[tuple[int, str, list[str], list[str]]], newline: bytes) -> bytes:
    out = b""
    for cursor, name, lines, comments in events:
        for comment in comments:
            out += b":" + comment.encode() + newline
        out += f"id: {cursor}".encode() + newline + f"event: {name}".encode() + newline
        for line in lines:
            out += b"data: " + line.encode() + newline
        out += newline
    return out


@settings(max_examples=200, deadline=None)
@given(
    events=st.lists(_event, max_size=6),
    newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_the_parser_yields_the_same_events_however_the_bytes_are_cut(
    events: list[tuple[int, str, list[str], list[str]]], newline: bytes, cuts: list[int]
) -> None:
    stream = _encode(events, newline)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    parser = SSEParser(max_event=1 << 20)
    out: list[SSEMessage | SSEComment] = []
    for piece in pieces:
        out.extend(parser.feed(piece))
    messages = [m for m in out if isinstance(m, SSEMessage)]
    comments = [c.text for c in out if isinstance(c, SSEComment)]
    assert [(int(m.id or -1), m.event, m.data) for m in messages] == [
        (cursor, name, "\n".join(lines)) for cursor, name, lines, _ in events
    ]
    assert comments == [c.lstrip(" ") for *_, cs in events for c in cs]


@given(
    failures=st.integers(min_value=0, max_value=10_000),
    initial=st.floats(min_value=0.01, max_value=5),
    cap=st.floats(min_value=0.01, max_value=120),
)
def test_backoff_is_capped_and_never_negative(failures: int, initial: float, cap: float) -> None:
    delay = backoff_delay(failures, initial, cap, random.Random(failures))
    assert 0 <= delay <= cap


# -- against a real relay ---------------------------------------------------------------------


async def test_a_401_stops_the_subscriber_with_a_clear_error(relay: RelayServer) -> None:
    issued = add_channel(relay, "team")
    _, sub_url = urls(relay, issued)
    sub, _, task = await follow(sub_url, "wpr_wrong")
    with pytest.raises(RelayAuthError, match="401"):
        await asyncio.wait_for(task, 30)
    assert sub.state.attempts == 1  # no retrying forever
    assert "wpr_wrong" not in repr(sub)


async def test_a_url_that_is_not_a_relay_stops_with_404(relay: RelayServer) -> None:
    issued = add_channel(relay, "team")
    _, task_url = urls(relay, issued)
    _, _, task = await follow(task_url.replace("/channels/", "/nothing/"), issued.token)
    with pytest.raises(RelayUrlError, match="404"):
        await asyncio.wait_for(task, 30)


async def test_a_handler_failure_does_not_advance_the_cursor(relay: RelayServer) -> None:
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    async with aiohttp.ClientSession() as session:
        for _ in range(2):
            body, headers = signed()
            async with session.post(ingress, data=body, headers=headers) as r:
                assert r.status == 200
    handled: list[int] = []

    async def store_one_then_fail(delivery: RelayedDelivery) -> None:
        if handled:
            raise OSError("disk full")
        handled.append(delivery.cursor)

    sub = RelaySubscriber(sub_url, issued.token, on_delivery=store_one_then_fail)
    with pytest.raises(OSError, match="disk full"):
        await asyncio.wait_for(sub.run(), 30)
    assert sub.cursor == handled[0]  # resumes at the second delivery next time


async def test_reconnects_after_the_relay_restarts_and_resumes_without_duplicates(
    relay_data: RelayData,
) -> None:
    issued = add_channel(relay_data, "team")

    def server(port: int) -> RelayServer:
        return relay_data.server(port=port, heartbeat_s=0.1, ingress=IngressOptions())

    first = server(0)
    _, port = await first.start()
    ingress, sub_url = urls(first, issued)
    sub, got, task = await follow(sub_url, issued.token, backoff_max_s=0.2)
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(3):
                body, headers = signed()
                async with session.post(ingress, data=body, headers=headers) as r:
                    assert r.status == 200
            await got.wait_for(3)
            await first.stop()  # the relay goes away...
            second = server(port)
            await second.start()  # ...and comes back on the same port
            try:
                for _ in range(3):
                    body, headers = signed()
                    async with session.post(ingress, data=body, headers=headers) as r:
                        assert r.status == 200
                await got.wait_for(6)
                await asyncio.sleep(0.3)
            finally:
                await stop_task(task)
                await second.stop()
    finally:
        if not task.done():
            await stop_task(task)
    assert len(got.ids) == 6 == len(set(got.ids))
    assert sub.state.attempts >= 2
    disconnected = [s for s in got.states if not s.connected and s.error]
    assert disconnected, "the subscriber never reported losing the relay"
