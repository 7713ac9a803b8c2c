"""The subscriber against a hostile relay (a raw server on 127.0.0.1 writing exactly the bytes each
test wants): whatever it sends, memory stays bounded, the connection is dropped with a reason
and resumed after the last cursor handled, and nothing after a bad event is skipped."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc

from fake_relay import SSE_HEAD, Connection, FakeRelay, connected, delivery, heartbeat
from relay_helpers import follow, stop_task

from walletpass_tui.config import DEFAULT_MAX_BODY
from walletpass_tui.relay.events import RelayedDelivery
from walletpass_tui.relay.link.subscriber import RelaySubscriber, SubscriberState, event_limit

MIB = 1024 * 1024


def errors(states: list[SubscriberState]) -> list[str]:
    return [s.error for s in states if s.error and not s.connected]


async def test_data_lines_that_never_end_an_event_are_dropped_at_the_bound_memory_stays_flat() -> (
    None
):
    """48 MiB of data lines with no blank line: an unbounded reader holds them all; this one drops
    the connection once the event passes what a delivery of max_body can make, says so and
    reconnects after the last cursor."""

    async def stream(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(0))
        line = b"data: " + b"x" * 65536 + b"\n"
        for _ in range(48 * MIB // len(line)):
            await conn.write(line)

    tracemalloc.start()
    try:
        async with FakeRelay(stream) as relay:
            _, got, task = await follow(relay.url, "wpr_token")
            try:
                await relay.wait_connections(2)
            finally:
                await stop_task(task)
            peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    limit = event_limit(DEFAULT_MAX_BODY)
    assert errors(got.states)[0] == f"the relay sent an event of more than {limit:,} bytes"
    assert [c.last_event_id for c in relay.connections[:2]] == ["0", "0"]
    assert peak < 32 * MIB, f"peak {peak / MIB:.1f} MiB"  # generous: the bound is ~2.3 MiB


async def test_a_line_dripped_a_byte_at_a_time_is_dropped_when_it_does_not_end() -> None:
    async def stream(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(0) + b"data: ")
        while True:
            await conn.write(b"x")
            await asyncio.sleep(0.02)

    async with FakeRelay(stream) as relay:
        _, got, task = await follow(relay.url, "wpr_token", idle_timeout_s=30, line_timeout_s=0.5)
        try:
            await relay.wait_connections(2)
        finally:
            await stop_task(task)
    assert errors(got.states)[0] == "the relay sent no complete line in 0.5 s"


async def test_a_relay_that_goes_silent_is_dropped_and_one_that_accepts_and_never_answers_too() -> (
    None
):
    async def silent_after_connecting(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(0))
        await conn.hold()

    async def never_answers(conn: Connection) -> None:
        await conn.hold()

    for stream in (silent_after_connecting, never_answers):
        async with FakeRelay(stream) as relay:
            _, got, task = await follow(relay.url, "wpr_token", idle_timeout_s=0.3)
            try:
                await relay.wait_connections(2)
            finally:
                await stop_task(task)
        assert errors(got.states)[0] == "nothing from the relay in 0.3 s", stream


async def test_a_relay_sending_only_heartbeats_is_followed_without_reconnecting() -> None:
    sent = asyncio.Event()

    async def stream(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(0))
        for _ in range(40):  # 4 s: twice the idle and line timeouts
            await asyncio.sleep(0.1)
            await conn.write(heartbeat(0))
        sent.set()
        await conn.hold()

    async with FakeRelay(stream) as relay:
        sub, _, task = await follow(relay.url, "wpr_token", idle_timeout_s=2.0)
        try:
            async with asyncio.timeout(60):
                await sent.wait()
        finally:
            await stop_task(task)
    assert len(relay.connections) == 1 and sub.state.connected and sub.state.error is None


async def test_an_answer_that_is_not_an_event_stream_is_refused() -> None:
    """A 200 with another content type (a captive portal, a proxy's page), a compressed stream
    (10 MiB of zeros in a few KiB) and a redirect elsewhere: none is read as the relay's stream,
    and the redirect is not followed (the token would go with it)."""
    bomb = gzip.compress(b"\0" * (10 * MIB))
    event = delivery(1)

    async with FakeRelay(lambda c: c.hold()) as elsewhere:

        async def redirect(conn: Connection) -> None:
            await conn.write(
                b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n"
                % elsewhere.url.encode()
            )

        async def html(conn: Connection) -> None:
            await conn.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
                + connected(1)
                + event
            )

        async def gzipped(conn: Connection) -> None:
            await conn.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
                b"Connection: close\r\n\r\n" + bomb
            )

        expected = {
            redirect: f"the relay redirected to {elsewhere.url} (302)",
            html: "the relay answered 200 with 'text/html', not an event stream",
            gzipped: "the relay compressed the stream (gzip)",
        }
        for stream, why in expected.items():
            async with FakeRelay(stream) as relay:
                sub, got, task = await follow(relay.url, "wpr_token")
                try:
                    await relay.wait_connections(2)
                finally:
                    await stop_task(task)
            assert errors(got.states)[0].startswith(why), errors(got.states)
            assert got.items == [] and sub.cursor == 0
        assert elsewhere.connections == []
    # Every header the client sent asked for an uncompressed event stream.
    assert relay.connections[0].headers["accept-encoding"] == "identity"


async def test_crlf_cr_and_a_byte_order_mark_are_read_as_the_rules_say() -> None:
    async def stream(conn: Connection) -> None:
        first = delivery(1).replace(b"\n", b"\r\n")
        second = delivery(2).replace(b"\n", b"\r")
        await conn.write(SSE_HEAD + b"\xef\xbb\xbf" + connected(2) + first + second)
        await conn.hold()

    async with FakeRelay(stream) as relay:
        sub, got, task = await follow(relay.url, "wpr_token")
        try:
            await got.wait_for(2)
        finally:
            await stop_task(task)
    assert [d.cursor for d in got.items] == [1, 2] and sub.cursor == 2


async def test_a_huge_id_line_is_refused_long_before_it_ends() -> None:
    """Ten megabytes of digits on an id: line: refused after a few kilobytes, not buffered."""
    written: list[int] = []

    async def stream(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(0) + b"id: ")
        chunk = b"9" * 65536
        for _ in range(160):
            await conn.write(chunk)
            written.append(len(chunk))

    async with FakeRelay(stream) as relay:
        _, got, task = await follow(relay.url, "wpr_token")
        try:
            await relay.wait_connections(2)
        finally:
            await stop_task(task)
    assert (
        errors(got.states)[0] == "the relay sent a line of more than 4,096 bytes that is not data"
    )
    assert got.items == []


async def test_a_stall_on_the_event_loop_does_not_count_as_the_relay_going_quiet() -> None:
    """The line deadline counts waiting for the relay, not the caller's own time: a slow
    ``on_delivery`` (a busy disk) is not taken for a relay that stopped sending."""

    async def stream(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(2) + delivery(1) + delivery(2))
        await conn.hold()

    async with FakeRelay(stream) as relay:
        handled: list[int] = []
        both = asyncio.Event()

        async def slow(d: RelayedDelivery) -> None:
            await asyncio.sleep(0.6)  # a slow store: longer than the line timeout
            handled.append(d.cursor)
            if len(handled) == 2:
                both.set()

        sub = RelaySubscriber(relay.url, "wpr_token", on_delivery=slow, line_timeout_s=0.3)
        task = asyncio.create_task(sub.run())
        try:
            async with asyncio.timeout(60):
                await both.wait()
            await asyncio.sleep(0)  # the subscriber reads on: its deadline starts now
        finally:
            await stop_task(task)
    assert handled == [1, 2] and len(relay.connections) == 1
