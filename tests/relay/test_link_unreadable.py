"""An event with good framing and a good cursor that is not a delivery (wrong JSON, wrong types,
bad base64, headers no request carries, too large) is recorded as rejected with its cursor and a
reason, and passed: the deliveries after it are stored, and the low-water mark covers it."""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fake_relay import FakeRelay, event, replaying
from link_helpers import laptop, link_for, signed_at, stored_until

from walletpass_tui.relay.events import delivery_data
from walletpass_tui.relay.link.subscriber import event_limit
from walletpass_tui.webhooks.models import REJECTED_BODY_LIMIT

UNREADABLE = "the relay sent an event that cannot be read: "


def genuine(msg_id: str) -> dict[str, Any]:
    """The data of a delivery the service signed just now, as a dict to spoil."""
    now = datetime.now(UTC)
    body, headers = signed_at(now, msg_id)
    data = delivery_data(
        received_at_ms=int(now.timestamp() * 1000),
        method="POST",
        path="/in/x",
        headers=headers,
        body=body,
        source="203.0.113.7",
        forwarded_for=None,
        client="203.0.113.7",
        channel="x",
    )
    result: dict[str, Any] = json.loads(data)
    return result


def spoiled(msg_id: str, **changes: Any) -> bytes:
    data = genuine(msg_id)
    data.update(changes)
    return json.dumps(data).encode()


def good(msg_id: str) -> bytes:
    return json.dumps(genuine(msg_id)).encode()


# (data, the reason the history keeps); the webhook-id is "msg_bad_<index>" where it can be read.
BAD: list[tuple[bytes, str]] = [
    (b"{not json", "its data is not JSON (Expecting property name enclosed in double quotes"),
    (b"[1, 2]", "its data is not a JSON object"),
    (b'{"method": "POST"}', "received_at_ms is missing"),
    (b"[" * 100_000, "its data is not JSON (maximum recursion depth exceeded"),
]
SPOILED: list[tuple[dict[str, Any], str]] = [
    ({"received_at_ms": "1700000000000"}, "received_at_ms is not a time in milliseconds"),
    ({"received_at_ms": True}, "received_at_ms is not a time in milliseconds"),
    ({"method": 7}, "method is not a string"),
    ({"body_b64": "@@not base64@@"}, "body_b64 is not base64"),
    ({"body_b64": None}, "body_b64 is missing"),
    ({"headers": {"webhook-id": "x"}}, "headers is not a list of [name, value] pairs"),
    ({"headers": "webhook-id: x"}, "headers is not a list of [name, value] pairs"),
    ({"source": ["127.0.0.1"]}, "source is not a string"),
]


def headers_of(msg_id: str, *extra: list[Any]) -> list[list[Any]]:
    return [["webhook-id", msg_id], *extra]


SPOILED_HEADERS: list[tuple[list[Any], str]] = [
    ([["content-type"]], "headers[1] is not a [name, value] pair of strings"),
    ([["a", "b", "c"]], "headers[1] is not a [name, value] pair of strings"),
    ([[1, 2]], "headers[1] is not a [name, value] pair of strings"),
    ([["x-injected", "a\r\nx-forwarded-for: 10.0.0.1"]], "headers[1] is not a header an HTTP"),
    ([["bad name", "v"]], "headers[1] is not a header an HTTP request can carry"),
    ([["x", "y"]] * 200, "it has more than 128 headers"),
]


async def test_every_unreadable_event_is_recorded_with_its_cursor_and_passed(
    tmp_path: Path, clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from walletpass_tui.cli import main

    events: dict[int, bytes] = {1: event(1, good("msg_first"))}
    expected: dict[int, tuple[str | None, str]] = {}
    cases: list[tuple[bytes, str, str | None]] = [(data, why, None) for data, why in BAD]
    for index, (changes, why) in enumerate(SPOILED):
        msg_id = f"msg_spoiled_{index}"
        readable = msg_id if "headers" not in changes else None
        cases.append((spoiled(msg_id, **changes), why, readable))
    for index, (extra, why) in enumerate(SPOILED_HEADERS):
        msg_id = f"msg_headers_{index}"
        cases.append((spoiled(msg_id, headers=headers_of(msg_id, *extra)), why, msg_id))
    for offset, (data, why, msg_id) in enumerate(cases):
        cursor = 2 + offset
        events[cursor] = event(cursor, data)
        expected[cursor] = (msg_id, why)
    last = 2 + len(cases)
    events[last] = event(last, good("msg_last"))

    async with FakeRelay(replaying(events)) as relay:
        link = link_for(relay.url, "wpr_token")
        async with laptop(clean_env, link) as runtime:
            await runtime.serve()
            stored = await stored_until(runtime, last)
        assert len(relay.connections) == 1  # passed without a reconnect
    assert [a.relay_cursor for a in stored] == list(range(1, last + 1))
    assert stored[0].verified and stored[-1].verified
    for attempt in stored[1:-1]:
        msg_id, why = expected[attempt.relay_cursor or 0]
        assert attempt.verdict == "rejected" and attempt.reason == "unreadable relay event"
        assert attempt.detail.startswith(UNREADABLE + why), (attempt.detail, why)
        raw = events[attempt.relay_cursor or 0].split(b"data: ", 1)[1][:-2]
        assert attempt.body == raw[:REJECTED_BODY_LIMIT]  # the bytes the relay sent, bounded
        assert attempt.body_size == len(raw)
        assert attempt.webhook_id == msg_id  # read back where the headers could be
    history = sqlite3.connect(clean_env / "deliveries.sqlite3")
    try:  # the mark passed them all: a restart resumes after the last one
        assert history.execute("SELECT low_water FROM relay_marks").fetchall() == [(last,)]
    finally:
        history.close()

    capsys.readouterr()
    assert await asyncio.to_thread(main, ["events", "list", "--verdict", "rejected", "--json"]) == 0
    listed = {m["webhook_id"]: m for m in json.loads(capsys.readouterr().out)}
    named = {msg_id for msg_id, _ in expected.values() if msg_id}
    assert set(listed) == named
    assert {m["reason"] for m in listed.values()} == {"unreadable relay event"}
    assert await asyncio.to_thread(main, ["events", "export", "--verdict", "rejected"]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(a["relay_cursor"] for a in exported) == sorted(expected)


async def test_a_body_over_max_body_is_rejected_and_an_event_past_the_bound_is_recorded(
    tmp_path: Path,
) -> None:
    """max_body 1000: a 5,000-byte body is a delivery too large (as a POST's would be); an event
    of 2 MiB is past what any delivery of that size makes, so it is recorded from its first
    64 KiB, the connection dropped and resumed after it."""
    too_large = genuine("msg_too_large")
    too_large["body_b64"] = base64.b64encode(b"a" * 5000).decode()
    huge = genuine("msg_huge")
    huge["body_b64"] = base64.b64encode(b"h" * (2 * 1024 * 1024)).decode()
    # The relay writes the id first, as it always does, so the cursor is known at the bound.
    huge_data = json.dumps(huge).encode()
    events = {
        1: event(1, json.dumps(too_large).encode()),
        2: event(2, huge_data),
        3: event(3, good("msg_after")),
    }
    async with FakeRelay(replaying(events)) as relay:
        link = link_for(relay.url, "wpr_token")
        async with laptop(tmp_path / "laptop", link, max_body=1000) as runtime:
            await runtime.serve()
            stored = await stored_until(runtime, 3)
    first, second, third = stored
    assert (first.relay_cursor, first.reason, first.body_size) == (1, "body too large", 5000)
    limit = event_limit(1000)
    assert second.relay_cursor == 2 and second.reason == "unreadable relay event"
    assert second.detail == UNREADABLE + f"it is an event of more than {limit:,} bytes"
    assert len(second.body) <= REJECTED_BODY_LIMIT and huge_data.startswith(second.body)
    assert third.relay_cursor == 3 and third.verified
    assert [c.last_event_id for c in relay.connections] == ["0", "2"]
