"""How a request is framed and what the server does with each framing: HTTP/1.0 with and without
keep-alive, transfer and content codings, Expect, folded and repeated headers, the absolute form of
the request target, HEAD with a body, HTTP/2 without an upgrade. Real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip

import pytest
from http_helpers import (
    Served,
    closed_by_server,
    exchange,
    exchange_to_close,
    http_served,  # noqa: F401  (the "served" fixture)
    parse_answers,
    post,
)
from receiver_helpers import (
    Env,
    only_attempt,
    receiver_env,  # noqa: F401  (the "env" fixture)
    signed,
)

from walletpass_tui.webhooks.models import VERIFIED

# -- HTTP/1.0 -------------------------------------------------------------------------------------


async def test_http_1_0_without_keep_alive_is_answered_and_closed(served: Served) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(
        port, b"POST /old HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}"
    )
    answers = parse_answers(got)
    assert [(a.status, a.header("Connection")) for a in answers] == [(200, "close")] and closed
    assert echo.seen == [("POST", "/old", b"{}")]


async def test_http_1_0_with_keep_alive_is_announced_and_kept(served: Served) -> None:
    _, echo, port = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = b"POST /ka%d HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"
    for n in range(2):
        writer.write(request % n)
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"\r\nConnection: keep-alive\r\n" in head
        assert b"\r\nContent-Length: 12\r\n" in head
        assert await reader.readexactly(12) == b"POST /ka%d 2\n" % n
    writer.write(b"POST /last HTTP/1.0\r\nContent-Length: 0\r\n\r\n")  # no keep-alive: the end
    head = await reader.readuntil(b"\r\n\r\n")
    assert b"Connection: close" in head
    assert await closed_by_server(reader)
    writer.close()
    assert [s[1] for s in echo.seen] == ["/ka0", "/ka1", "/last"]


async def test_http_1_0_expect_100_continue_is_not_answered_with_an_interim(
    served: Served,
) -> None:
    _, echo, port = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /e HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
    await asyncio.sleep(0.05)
    writer.write(b"{}")
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")  # a 1.0 client does not know 100 Continue
    writer.close()
    assert echo.seen == [("POST", "/e", b"{}")]


# -- codings --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "coding",
    [
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: deflate\r\n",
        "Transfer-Encoding: identity\r\n",
    ],
    ids=["gzip-chunked", "two-fields", "deflate", "identity"],
)
async def test_a_transfer_coding_other_than_chunked_is_501(served: Served, coding: str) -> None:
    _, echo, port = served
    body = gzip.compress(b"{}")
    request = f"POST /te HTTP/1.1\r\nHost: x\r\n{coding}\r\n".encode()
    got, closed = await exchange_to_close(
        port, request + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )
    answers = parse_answers(got)
    assert [a.status for a in answers] == [501] and closed
    assert b"Transfer-Encoding" in answers[0].body and b"not supported" in answers[0].body
    assert echo.requests == []


async def test_chunked_in_any_case_is_read(served: Served) -> None:
    _, echo, port = served
    request = (
        b"POST /te HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    assert parse_answers(await exchange(port, request))[0].status == 200
    assert echo.seen == [("POST", "/te", b"{}")]


async def test_a_gzip_content_encoded_body_is_handed_over_as_received(served: Served) -> None:
    _, echo, port = served
    body = gzip.compress(b'{"type": "pass.activated"}')
    got = await exchange(port, post("/ce", body, extra="Content-Encoding: gzip\r\n"))
    assert parse_answers(got)[0].status == 200
    assert echo.seen == [("POST", "/ce", body)]  # not decoded: the signature is over these bytes


async def test_a_gzip_content_encoded_delivery_is_verified_and_stored_as_received(
    env: Env,
) -> None:
    receiver = await env.start()
    body = gzip.compress(b'{"type": "pass.activated", "data": {"passId": "pass_0001"}}')
    headers = signed("msg_gz", body) | {"Content-Encoding": "gzip"}
    answer = await env.client.post(receiver.url, content=body, headers=headers)
    assert answer.status_code == 200
    a = await only_attempt(env)
    assert (a.verdict, a.body, a.header("Content-Encoding")) == (VERIFIED, body, "gzip")


# -- Expect ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("expect", ["something-else", "100-continue, more", "200-ok"])
async def test_an_expectation_other_than_100_continue_is_417(served: Served, expect: str) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(port, post(extra=f"Expect: {expect}\r\n"))
    answers = parse_answers(got)
    assert [a.status for a in answers] == [417] and closed
    assert b"100-continue" in answers[0].body
    assert echo.requests == []


async def test_expect_100_continue_in_any_case_is_honoured(served: Served) -> None:
    _, echo, port = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-Continue\r\n\r\n"
    )
    assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
    writer.write(b"{}")
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    writer.close()
    assert echo.seen == [("POST", "/e", b"{}")]


# -- heads llhttp refuses, and forms it lets through ---------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"POST /hook HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",
        b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\n{}",
        b"POST /hook HTTP/1.1\r\nHost: x\r\nX-Nul: a\x00b\r\nContent-Length: 0\r\n\r\n",
        b"POST /hook HTTP/1.1\nHost: x\nContent-Length: 0\n\n",
    ],
    ids=["obs-fold", "two-lengths", "length-list", "nul", "bare-lf"],
)
async def test_ambiguous_heads_are_400(served: Served, raw: bytes) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(port, raw)
    answers = parse_answers(got)
    assert [a.status for a in answers] == [400] and closed
    assert b"malformed HTTP request (" in answers[0].body
    assert echo.requests == []


async def test_an_absolute_form_target_is_routed_by_its_path(served: Served) -> None:
    _, echo, port = served
    request = b"POST http://example.com/hook?x=1 HTTP/1.1\r\nHost: example.com\r\n"
    got = await exchange(port, request + b"Content-Length: 2\r\n\r\n{}")
    assert parse_answers(got)[0].body == b"POST /hook 2\n"
    assert echo.seen == [("POST", "http://example.com/hook?x=1", b"{}")]


async def test_a_head_request_with_a_body_keeps_the_next_request_apart(served: Served) -> None:
    _, echo, port = served
    head = b"HEAD /h HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nPOST "  # looks like a start
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head + post("/next", b"1"))
    first = await reader.readuntil(b"\r\n\r\n")  # HEAD: a head, no body
    assert first.startswith(b"HTTP/1.1 200") and b"\r\nContent-Length: 10\r\n" in first
    second = await reader.readuntil(b"\r\n\r\n")
    assert second.startswith(b"HTTP/1.1 200")
    assert await reader.readexactly(13) == b"POST /next 1\n"
    writer.close()
    assert [s[:3] for s in echo.seen] == [("HEAD", "/h", b"POST "), ("POST", "/next", b"1")]


@pytest.mark.parametrize(
    "raw",
    [
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",  # HTTP/2's preface, with no upgrade before it
        b"POST /hook HTTP/2.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        b"GET /hook\r\n\r\n",  # HTTP/0.9
    ],
    ids=["h2-preface", "2.0", "0.9"],
)
async def test_a_version_other_than_http_1_is_505(served: Served, raw: bytes) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(port, raw)
    answers = parse_answers(got)
    assert [a.status for a in answers] == [505] and closed
    assert b"send HTTP/1.1" in answers[0].body
    assert echo.requests == []


# -- what the answer carries -------------------------------------------------------------------


async def test_statuses_without_content_are_framed_without_it_and_1xx_is_never_an_answer(
    served: Served,
) -> None:
    _, _, port = served
    paths = ["/status/204", "/status/304", "/status/205", "/status/299", "/a", "/status/101"]
    got = await exchange(port, b"".join(post(path) for path in paths), answers=6)
    answers = parse_answers(got)
    assert [(a.status, a.header("Content-Length"), a.body) for a in answers] == [
        (204, None, b""),
        (304, None, b""),
        (205, "0", b""),
        (299, "10", b"some text\n"),
        (200, "10", b"POST /a 2\n"),
        (500, "45", b"Internal error: the delivery was not handled\n"),
    ]
    assert got.endswith(answers[-1].body)  # nothing else was sent
