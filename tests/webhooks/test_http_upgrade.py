"""Upgrades the receiver does not do: ``Upgrade: h2c`` (what ``curl --http2`` sends over http://),
``Upgrade: websocket`` and ``CONNECT``. An Upgrade header is ignored (the request is answered over
HTTP/1.1 with its whole body); CONNECT is a 501. Real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio

from http_helpers import (
    Served,
    exchange,
    exchange_to_close,
    http_served,  # noqa: F401  (the "served" fixture)
    parse_answers,
    post,
)
from receiver_helpers import (
    BODY,
    Env,
    only_attempt,
    receiver_env,  # noqa: F401  (the "env" fixture)
    signed,
)

from walletpass_tui.webhooks.models import REJECTED, VERIFIED

H2C = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"


async def test_an_h2c_upgrade_is_ignored_and_the_body_read(served: Served) -> None:
    _, echo, port = served
    got = await exchange(port, post("/a", b"abc", extra=H2C) + post("/b", b"xy"), answers=2)
    answers = parse_answers(got)
    assert [a.status for a in answers] == [200, 200]  # never a 101: we speak HTTP/1.1 on
    assert answers[0].body == b"POST /a 3\n" and answers[1].body == b"POST /b 2\n"
    assert [s[1:] for s in echo.seen] == [("/a", b"abc"), ("/b", b"xy")]


async def test_an_h2c_upgrade_with_a_chunked_body_is_read_whole(served: Served) -> None:
    _, echo, port = served
    head = f"POST /c HTTP/1.1\r\nHost: x\r\n{H2C}Transfer-Encoding: chunked\r\n\r\n"
    chunks = b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode() + chunks[:9])  # the head and part of the body
    await writer.drain()
    await asyncio.sleep(0.05)
    writer.write(chunks[9:])  # the rest in a second write
    head_of_answer = await reader.readuntil(b"\r\n\r\n")
    assert head_of_answer.startswith(b"HTTP/1.1 200")
    assert await reader.readexactly(len(b"POST /c 7\n")) == b"POST /c 7\n"
    writer.close()
    assert echo.seen == [("POST", "/c", b"abcdefg")]


async def test_a_websocket_upgrade_is_answered_over_http_1_1(served: Served) -> None:
    _, echo, port = served
    get = b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    got = await exchange(port, get + post("/after", b"12"), answers=2)
    assert [a.status for a in parse_answers(got)] == [200, 200]
    assert [s[:2] for s in echo.seen] == [("GET", "/ws"), ("POST", "/after")]


async def test_connect_is_501_and_closed_and_never_handled(served: Served) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(
        port, b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n\x16\x03\x01"
    )
    answers = parse_answers(got)
    assert [a.status for a in answers] == [501] and closed
    assert b"CONNECT" in answers[0].body and answers[0].header("Connection") == "close"
    assert echo.requests == []


async def test_connect_after_a_delivery_is_answered_after_it(served: Served) -> None:
    _, echo, port = served
    connect = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n"
    got, closed = await exchange_to_close(port, post("/first", b"1") + connect)
    assert [a.status for a in parse_answers(got)] == [200, 501] and closed
    assert [s[1] for s in echo.seen] == ["/first"]


# -- through the receiver --------------------------------------------------------------------------


async def test_a_signed_delivery_with_upgrade_h2c_is_verified_and_stored_whole(env: Env) -> None:
    receiver = await env.start()
    assert receiver.bound is not None
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed("msg_h2c").items())
    request = (
        f"POST /webhooks HTTP/1.1\r\nHost: x\r\n{headers}{H2C}Content-Length: {len(BODY)}\r\n\r\n"
    )
    got = await exchange(receiver.bound[1], request.encode() + BODY)
    assert [(a.status, a.body) for a in parse_answers(got)] == [(200, b"OK: stored\n")]
    a = await only_attempt(env)
    assert (a.verdict, a.status, a.webhook_id) == (VERIFIED, 200, "msg_h2c")
    assert a.body == BODY and a.body_size == len(BODY)
    assert a.header("Upgrade") == "h2c"  # the headers are kept as received


async def test_a_websocket_get_to_the_receiver_is_405(env: Env) -> None:
    receiver = await env.start()
    assert receiver.bound is not None
    get = b"GET /webhooks HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    answers = parse_answers(await exchange(receiver.bound[1], get))
    assert [(a.status, a.header("Allow")) for a in answers] == [(405, "POST")]
    a = await only_attempt(env)
    assert (a.verdict, a.method, a.status) == (REJECTED, "GET", 405)
