"""Cursors from the relay must increase and stay near the head it announced. An event that breaks
the rule is refused: the connection is dropped and resumed after the last cursor handled, so
nothing after it is skipped; after three identical refusals the link says the relay misbehaves,
and keeps retrying with backoff."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_relay import Connection, FakeRelay, connected, delivery, heartbeat
from link_helpers import laptop, link_for, stored_until
from relay_helpers import follow, stop_task

from walletpass_tui.relay.link.state import LinkState, StateLines
from walletpass_tui.relay.link.subscriber import MAX_CURSOR, MISBEHAVING_AFTER
from walletpass_tui.webhooks.models import now_ms

NOT_A_CURSOR = "is not a cursor (a whole number from 1 to 9223372036854775807)"
CASES = {
    "a jump far past the head": (
        b"id: 4611686018427387904\n",
        "the relay sent delivery 4611686018427387904, more than 1,000,000 past the newest it "
        "announced (10)",
    ),
    "past what can be stored": (
        b"id: 9223372036854775808\n",
        f"the relay sent a delivery whose id '9223372036854775808' {NOT_A_CURSOR}",
    ),
    "negative": (b"id: -1\n", f"the relay sent a delivery whose id '-1' {NOT_A_CURSOR}"),
    "not a number": (b"id: abc\n", f"the relay sent a delivery whose id 'abc' {NOT_A_CURSOR}"),
    "digits that are not ASCII": (
        "id: ٦\n".encode(),
        f"the relay sent a delivery whose id '٦' {NOT_A_CURSOR}",
    ),
    "empty": (b"id:\n", f"the relay sent a delivery whose id '' {NOT_A_CURSOR}"),
    "the same again": (b"id: 5\n", "the relay sent delivery 5 after 5: cursors must increase"),
    "going back": (b"id: 3\n", "the relay sent delivery 3 after 5: cursors must increase"),
    # Without an id line the id in force is the last one: 5 after 5, then none on a new stream.
    "no id line": (b"", "the relay sent a delivery without an id after 5"),
}


def misbehaving_relay(bad_id_line: bytes, refusals: int = MISBEHAVING_AFTER + 1):
    """Delivery 5, then the bad event on every connection until ``refusals`` were sent, then the
    honest delivery 6."""
    bad = delivery(7).split(b"\n", 1)[1]  # a good delivery's event and data lines...
    bad = bad_id_line + bad  # ...under the bad id line
    sent = [0]

    async def stream(conn: Connection) -> None:
        head = connected(10)
        if conn.last_event_id == "0":
            await conn.write(b"".join([SSE, head, delivery(5, received_at_ms=now_ms()), bad]))
            sent[0] += 1
        elif sent[0] < refusals:
            await conn.write(SSE + head + bad)
            sent[0] += 1
        else:
            await conn.write(SSE + head + delivery(6, received_at_ms=now_ms()) + heartbeat(6))
        await conn.hold()

    return stream


SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("case", list(CASES))
async def test_a_bad_cursor_is_refused_resumed_from_the_last_good_one_and_skips_nothing(
    case: str,
) -> None:
    bad_line, why = CASES[case]
    async with FakeRelay(misbehaving_relay(bad_line)) as relay:
        sub, got, task = await follow(relay.url, "wpr_token", backoff_max_s=0.1)
        try:
            await got.wait_for(2)
        finally:
            await stop_task(task)
    assert [d.cursor for d in got.items] == [5, 6]
    resumed = [c.last_event_id for c in relay.connections]
    assert resumed == ["0"] + ["5"] * (MISBEHAVING_AFTER + 1), resumed
    refused = [s for s in got.states if s.refusals and not s.connected]
    whys = {why}
    if case == "no id line":  # on the first stream, the id in force was 5's
        whys.add("the relay sent delivery 5 after 5: cursors must increase")
    assert {s.error for s in refused} == whys
    counts = list(dict.fromkeys(s.refusals for s in refused))
    assert counts[:MISBEHAVING_AFTER] == list(range(1, MISBEHAVING_AFTER + 1))
    assert any(s.misbehaving for s in got.states)
    assert sub.state.refusals == 0 and sub.cursor == 6  # progress clears it


async def test_a_jump_within_the_announced_head_is_a_gap_not_a_refusal() -> None:
    """Cursors are shared by every channel of a relay: gaps are normal, as far as the head."""

    async def stream(conn: Connection) -> None:
        far = MAX_CURSOR - 1
        await conn.write(SSE + connected(far) + delivery(3) + delivery(far))
        await conn.hold()

    async with FakeRelay(stream) as relay:
        _, got, task = await follow(relay.url, "wpr_token")
        try:
            await got.wait_for(2)
        finally:
            await stop_task(task)
    assert [d.cursor for d in got.items] == [3, MAX_CURSOR - 1]
    assert len(relay.connections) == 1


async def test_the_link_says_the_relay_misbehaves_stores_nothing_refused_and_goes_on(
    tmp_path: Path,
) -> None:
    states: list[LinkState] = []
    async with FakeRelay(misbehaving_relay(b"id: 9223372036854775808\n")) as relay:
        link = link_for(relay.url, "wpr_token")
        link.subscribe(states.append)
        async with laptop(tmp_path / "laptop", link) as runtime:
            await runtime.serve()
            stored = await stored_until(runtime, 2)
            assert not link.state.stopped
    assert [a.relay_cursor for a in stored] == [5, 6]  # the refused one is not stored
    lines = StateLines()
    printed = [line for state in states if (line := lines(state))]
    misbehaving = [line for line in printed if line.startswith("relay misbehaving")]
    assert misbehaving == [
        "relay misbehaving (the relay sent a delivery whose id '9223372036854775808' "
        f"{NOT_A_CURSOR}; 3 times in a row); retrying with backoff, skipping nothing"
    ]
    recovered = printed[printed.index(misbehaving[0]) + 1 :]
    assert any(line.startswith("relay connected") for line in recovered)  # and says so
    assert any(s.headline == "relay misbehaving, retrying" for s in states)


def test_listen_prints_one_line_for_a_relay_that_keeps_misbehaving() -> None:
    url = "http://127.0.0.1:9/channels/x/events"
    why = "the relay sent delivery 3 after 5: cursors must increase"

    def at(**kw: object) -> LinkState:
        return LinkState(url, cursor=5, head=10, started=True, **kw)  # type: ignore[arg-type]

    steps = [at(connected=True)]
    for refusals in range(1, 7):
        steps += [at(error=why, refusals=refusals), at(connected=True, refusals=refusals)]
    steps.append(at(connected=True, refusals=0))
    printer = StateLines()
    assert [line for s in steps if (line := printer(s))] == [
        "relay connected, catching up to cursor 10 (after cursor 5)",
        f"relay disconnected ({why}); retrying",
        "relay connected, catching up to cursor 10 (after cursor 5)",
        f"relay disconnected ({why}); retrying",
        "relay connected, catching up to cursor 10 (after cursor 5)",
        f"relay misbehaving ({why}; 3 times in a row); retrying with backoff, skipping nothing",
        "relay connected, catching up to cursor 10 (after cursor 5)",
    ]


async def test_a_heartbeat_shows_the_relay_recovered_without_forgetting_the_count() -> None:
    """A relay that sends heartbeats between refusals is shown as connected again; refused the
    same way again, it is misbehaving at once."""
    rounds = [0]

    async def stream(conn: Connection) -> None:
        rounds[0] += 1
        await conn.write(SSE + connected(10) + heartbeat(10) + b"id: 3\nevent: delivery\n")
        await conn.write(b"data: {}\n\n")
        await conn.hold()

    async with FakeRelay(stream) as relay:
        _, got, task = await follow(relay.url, "wpr_token", after=5, backoff_max_s=0.05)
        try:
            await relay.wait_connections(MISBEHAVING_AFTER + 2)  # so as many refusals before
        finally:
            await stop_task(task)
    counts = list(dict.fromkeys(s.refusals for s in got.states if not s.connected and s.error))
    assert counts[: MISBEHAVING_AFTER + 1] == list(range(1, MISBEHAVING_AFTER + 2))
    shown = [s.refusals for s in got.states if s.connected]
    assert 0 in shown[1:]  # each heartbeat showed it connected and well again


async def test_a_head_that_is_not_a_cursor_is_ignored() -> None:
    """An absurd head would lift the ceiling on cursors: not a cursor, it is not taken."""

    async def stream(conn: Connection) -> None:
        absurd = b": connected head=99999999999999999999999\n\n: heartbeat head=-3 head=x\n\n"
        await conn.write(SSE + absurd + delivery(1) + delivery(4611686018427387904))
        await conn.hold()

    async with FakeRelay(stream) as relay:
        sub, got, task = await follow(relay.url, "wpr_token")
        try:
            await got.wait_for(1)
            await relay.wait_connections(2)  # the far jump was refused
        finally:
            await stop_task(task)
    assert [d.cursor for d in got.items] == [1] and sub.state.head == 1
