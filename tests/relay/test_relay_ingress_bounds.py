"""What a hostile sender can make the relay's ingress hold, over raw sockets: bodies that stall or
overflow, headers that are not text, rejections kept bounded in count and size."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ingress_helpers import exchange, post_head
from relay_helpers import OTHER_SECRET, SECRET, RelayData, add_channel, query, signed, urls

from walletpass_tui.relay.server.ingress import REJECTED_HEADERS_LIMIT, IngressOptions
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.relay.server.storage import records


@contextlib.asynccontextmanager
async def running(relay_data: RelayData, **ingress: Any) -> AsyncIterator[RelayServer]:
    server = relay_data.server(ingress=IngressOptions(**ingress))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def rejected(server: RelayServer) -> list[tuple[int, str, str, int]]:
    rows = query(server, "SELECT status, reason, headers, length(body) FROM rejected ORDER BY id")
    return [(int(a), str(b), str(c), int(d)) for a, b, c, d in rows]


async def test_a_body_that_stops_arriving_gets_408_and_the_connection_closes(
    relay_data: RelayData,
) -> None:
    async with running(relay_data, read_timeout_s=0.5) as relay:
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[0].removeprefix(relay.url)
        _, headers = signed()
        answer, closed = await exchange(
            relay, post_head(path, {**headers, "Content-Length": "1000"}) + b'{"type":', closes=True
        )
    assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive in time" in answer
    assert closed
    # Kept with the reason's words and its detail, as the laptops' history has them.
    kept = [(408, "request timed out: body not received within 0.5 s")]
    assert [r[:2] for r in rejected(relay)] == kept


async def test_a_declared_length_over_the_limit_is_refused_before_any_body(
    relay_data: RelayData,
) -> None:
    async with running(relay_data, max_body=64 * 1024) as relay:
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[0].removeprefix(relay.url)
        _, headers = signed()
        # Nothing of the ten megabytes is ever sent: the answer comes anyway, and closes.
        answer, closed = await exchange(
            relay,
            post_head(path, {**headers, "Content-Length": str(10 * 1024 * 1024)}),
            closes=True,
        )
    assert answer.startswith(b"HTTP/1.1 413") and b"the limit is 65536 bytes" in answer
    assert closed


async def test_a_chunked_body_past_the_limit_gets_413_without_reading_on(
    relay_data: RelayData,
) -> None:
    async with running(relay_data, max_body=64 * 1024) as relay:
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[0].removeprefix(relay.url)
        _, headers = signed()
        chunk = b"%x\r\n%s\r\n" % (32 * 1024, b"x" * 32 * 1024)
        answer, closed = await exchange(
            relay,
            post_head(path, {**headers, "Transfer-Encoding": "chunked"}),
            then=chunk * 3,  # and never a last chunk
            closes=True,
        )
    assert answer.startswith(b"HTTP/1.1 413") and closed


async def test_a_header_that_is_not_utf8_gets_400_and_is_not_relayed(relay_data: RelayData) -> None:
    async with running(relay_data) as relay:
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[0].removeprefix(relay.url)
        body, headers = signed()
        raw = post_head(path, {**headers, "Content-Length": str(len(body))}, b"X-Odd: \xff\xfe\r\n")
        answer, _ = await exchange(relay, raw + body)
    assert answer.startswith(b"HTTP/1.1 400") and b"X-Odd is not UTF-8 text" in answer
    assert [r[:2] for r in rejected(relay)] == [(400, "malformed header: X-Odd is not UTF-8 text")]


async def test_rejections_are_kept_bounded_in_count_body_and_headers(
    relay_data: RelayData, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "REJECTED_CAP", 5)
    async with running(relay_data, max_body=200 * 1024) as relay:
        issued = add_channel(relay, "verified", secret=SECRET)
        path = urls(relay, issued)[0].removeprefix(relay.url)
        pads = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 8000) for i in range(100))
        for i in range(8):
            body, headers = signed(OTHER_SECRET, body=b'{"n":%d,"pad":"%s"}' % (i, b"x" * 100_000))
            raw = post_head(path, {**headers, "Content-Length": str(len(body))}, pads)
            answer, _ = await exchange(relay, raw + body)
            assert answer.startswith(b"HTTP/1.1 401")
        kept = rejected(relay)
    assert len(kept) == 5  # the newest five
    for status, _, headers_json, body_len in kept:
        assert status == 401
        assert body_len == records.REJECTED_BODY_LIMIT
        assert len(headers_json) < REJECTED_HEADERS_LIMIT + 1024
        pairs = json.loads(headers_json)
        assert pairs[0][0].lower() == "host"  # kept in the order received
        sent = 100 + 1 + len(headers) + 1  # the pads, Host, the signed ones, Content-Length
        assert pairs[-1] == ["...", f"{sent - (len(pairs) - 1)} more headers not kept"]
