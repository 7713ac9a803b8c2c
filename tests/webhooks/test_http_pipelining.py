"""Pipelined requests are answered in the order they came, a refusal included: the requests before a
malformed one get their own answers first, then the refusal, then the connection closes. Real
sockets on 127.0.0.1."""

from __future__ import annotations

import pytest
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

from walletpass_tui.webhooks.models import VERIFIED

BAD_CHUNK = b"POST /bad HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"


@pytest.mark.parametrize(
    "malformed",
    [
        BAD_CHUNK,  # malformed inside the body: its head was already parsed
        b"NOT A REQUEST\r\n\r\n",  # malformed head
        b"POST /bad HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
    ],
    ids=["bad-chunk", "bad-head", "two-lengths"],
)
async def test_a_delivery_then_a_malformed_request_get_200_then_400(
    served: Served, malformed: bytes
) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(port, post("/first", b"one") + malformed)
    answers = parse_answers(got)
    assert [a.status for a in answers] == [200, 400] and closed
    assert answers[0].body == b"POST /first 3\n" and answers[0].header("Connection") is None
    assert b"malformed HTTP request" in answers[1].body
    assert answers[1].header("Connection") == "close"
    assert [s[1:] for s in echo.seen] == [("/first", b"one")]


async def test_every_whole_request_before_the_malformed_one_is_answered(served: Served) -> None:
    _, echo, port = served
    pipelined = post("/a", b"1") + post("/b", b"22") + post("/c", b"333") + BAD_CHUNK
    got, closed = await exchange_to_close(port, pipelined)
    assert [a.status for a in parse_answers(got)] == [200, 200, 200, 400] and closed
    assert [s[1] for s in echo.seen] == ["/a", "/b", "/c"]


async def test_a_delivery_then_a_body_cut_short_get_200_then_400(served: Served) -> None:
    _, echo, port = served
    cut = post("/cut", b"x" * 10)[:-4]
    got = await exchange(port, post("/first", b"1") + cut, answers=2, eof=True)
    answers = parse_answers(got)
    assert [a.status for a in answers] == [200, 400]
    assert b"ended before its body did" in answers[1].body
    assert [s[1] for s in echo.seen] == ["/first"]


async def test_requests_sent_before_the_client_half_closes_are_all_answered(
    served: Served,
) -> None:
    _, echo, port = served
    pipelined = post("/a", b"1") + post("/b", b"22") + post("/c", b"333")
    got = await exchange(port, pipelined, answers=4, eof=True)  # read until the server closes
    answers = parse_answers(got)
    assert [a.status for a in answers] == [200, 200, 200]
    assert [s[1] for s in echo.seen] == ["/a", "/b", "/c"]


async def test_a_head_cut_short_by_the_client_is_400(served: Served) -> None:
    _, echo, port = served
    got = await exchange(port, b"POST /hook HTTP/1.1\r\nHost: x\r\nCont", eof=True)
    answers = parse_answers(got)
    assert [a.status for a in answers] == [400]
    assert b"ended before its headers did" in answers[0].body
    assert echo.requests == []


async def test_a_delivery_pipelined_with_a_malformed_request_is_stored_and_answered_first(
    env: Env,
) -> None:
    receiver = await env.start()
    assert receiver.bound is not None
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed("msg_pipe").items())
    first = f"POST /webhooks HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {len(BODY)}\r\n\r\n"
    got, closed = await exchange_to_close(receiver.bound[1], first.encode() + BODY + BAD_CHUNK)
    answers = parse_answers(got)
    assert [(a.status, a.body) for a in answers][:1] == [(200, b"OK: stored\n")]
    assert [a.status for a in answers] == [200, 400] and closed
    a = await only_attempt(env)
    assert (a.verdict, a.status, a.body) == (VERIFIED, 200, BODY)
