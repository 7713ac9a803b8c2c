"""The receiver's HTTP/1.1 server over real sockets on 127.0.0.1: keep-alive and pipelining, the
bounds on the head, malformed HTTP, ``Expect: 100-continue``, timeouts and stopping."""

from __future__ import annotations

import asyncio

import pytest
from http_helpers import (
    SHORT_TIMEOUT_S,
    Served,
    closed_by_server,
    complete_answers,
    exchange,
    http_served,  # noqa: F401  (the "served" fixture)
    post,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from walletpass_tui.webhooks.http_server import MAX_FIELD_BYTES, MAX_HEADERS, Request, Response


async def test_pipelined_requests_are_answered_in_order_on_one_connection(served: Served) -> None:
    _, echo, port = served
    got = await exchange(port, post("/a", b"1") + post("/b", b"22") + post("/c", b"333"), answers=3)
    assert got.count(b"HTTP/1.1 200 OK") == 3
    assert got.index(b"POST /a 1") < got.index(b"POST /b 2") < got.index(b"POST /c 3")
    assert [s[1:] for s in echo.seen] == [("/a", b"1"), ("/b", b"22"), ("/c", b"333")]


async def test_a_kept_alive_connection_serves_the_next_request(served: Served) -> None:
    _, echo, port = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for n in range(3):
        writer.write(post(f"/n{n}", b"x" * n))
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" not in head
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        assert (await reader.readexactly(length)) == f"POST /n{n} {n}\n".encode()
    writer.close()
    assert len(echo.seen) == 3


async def test_the_path_is_decoded_for_routing_and_kept_as_sent(served: Served) -> None:
    _, echo, port = served
    got = await exchange(port, post("/hooks/ep%5F1?x=%41"))
    assert b"POST /hooks/ep_1 2" in got
    assert echo.seen[0][1] == "/hooks/ep%5F1?x=%41"


async def test_a_header_over_the_field_limit_is_431_and_closed(served: Served) -> None:
    _, echo, port = served
    big = "X-Big: " + "a" * (MAX_FIELD_BYTES + 1) + "\r\n"
    got = await exchange(port, post(extra=big))
    assert got.startswith(b"HTTP/1.1 431") and b"Connection: close" in got
    assert echo.seen == []


async def test_too_many_headers_are_431(served: Served) -> None:
    _, _, port = served
    many = "".join(f"X-H{n}: v\r\n" for n in range(MAX_HEADERS + 1))
    assert (await exchange(port, post(extra=many))).startswith(b"HTTP/1.1 431")


async def test_a_head_that_never_ends_is_cut_off_at_its_bound(served: Served) -> None:
    _, _, port = served
    endless = b"POST /hook HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 20_000  # 160 KiB, no end
    got = await exchange(port, endless)
    assert got.startswith(b"HTTP/1.1 431")


@pytest.mark.parametrize(
    "raw",
    [
        b"NOT A REQUEST\r\n\r\n",
        b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: ²\r\n\r\n".encode(),
        "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: ١٢\r\n\r\n{}".encode(),
        b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}",
        b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 1_0\r\n\r\n{}",
        b"POST /hook HTTP/1.1\r\nHo st: x\r\n\r\n",
        b"POST /hook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
async def test_malformed_http_is_400_with_a_reason_and_closed(served: Served, raw: bytes) -> None:
    _, echo, port = served
    got = await exchange(port, raw)
    assert got.startswith(b"HTTP/1.1 400 Bad Request"), got
    assert b"malformed HTTP request" in got and b"Connection: close" in got
    assert echo.seen == []


async def test_expect_100_continue_gets_its_interim_answer_before_the_body(served: Served) -> None:
    _, echo, port = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"
    )
    assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
    writer.write(b"abcd")
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    writer.close()
    assert echo.seen == [("POST", "/hook", b"abcd")]


async def test_head_answers_carry_no_body(served: Served) -> None:
    _, _, port = served
    got = await exchange(port, b"HEAD /hook HTTP/1.1\r\nHost: x\r\n\r\n", eof=True, answers=2)
    assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"\r\n\r\n")
    assert b"Content-Length: 0" not in got  # the length of the answer a POST would get


@pytest.mark.parametrize("served", [SHORT_TIMEOUT_S], indirect=True)
async def test_an_idle_kept_alive_connection_is_closed_after_the_read_timeout(
    served: Served,
) -> None:
    _, _, port = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post())
    await reader.readuntil(b"\r\n\r\n")
    assert await closed_by_server(reader)  # read_timeout_s=0.5 s; the helper waits up to 5 s
    writer.close()


@pytest.mark.parametrize("served", [SHORT_TIMEOUT_S], indirect=True)
async def test_a_partial_head_gets_408_when_it_stalls(served: Served) -> None:
    _, _, port = served
    got = await exchange(port, b"POST /hook HTTP/1.1\r\nHost: x\r\nX-Par")
    assert got.startswith(b"HTTP/1.1 408")


async def test_a_request_sent_before_the_client_half_closes_is_still_answered(
    served: Served,
) -> None:
    _, echo, port = served
    got = await exchange(port, post("/last"), eof=True, answers=2)  # read until it closes
    assert got.startswith(b"HTTP/1.1 200") and complete_answers(got) == 1
    assert echo.seen[0][1] == "/last"


async def test_a_body_cut_short_by_the_client_is_not_handed_over_as_a_whole(
    served: Served,
) -> None:
    _, echo, port = served
    got = await exchange(port, post(body=b"x" * 10)[:-4], eof=True, wait=2.0)  # 6 of 10 bytes
    assert got.startswith(b"HTTP/1.1 400") and b"ended before its body did" in got
    assert echo.seen == []  # the handler never got a body shorter than declared
    assert (await exchange(port, post("/after"))).startswith(b"HTTP/1.1 200")


async def test_a_failing_handler_is_a_500_and_the_server_goes_on(served: Served) -> None:
    _, _echo, port = served
    got = await exchange(port, post("/boom"))
    assert got.startswith(b"HTTP/1.1 500") and b"Connection: close" in got
    assert (await exchange(port, post("/after"))).startswith(b"HTTP/1.1 200")


async def test_an_unread_body_closes_the_connection_after_the_answer(served: Served) -> None:
    server, _echo, port = served

    async def refuse(request: Request) -> Response:
        return Response(404, "no\n")  # answers without reading the body

    server.handler = refuse
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nonly a part")
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404") and b"Connection: close" in head
    assert await closed_by_server(reader)
    writer.close()


async def test_stop_lets_a_request_in_flight_finish_then_closes(served: Served) -> None:
    server, echo, port = served
    echo.gate = asyncio.Event()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post())
    await asyncio.sleep(0.05)
    stopping = asyncio.create_task(server.stop())
    await asyncio.sleep(0.05)
    echo.gate.set()
    await stopping
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" in head
    writer.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.binary(max_size=400))
async def test_any_bytes_get_an_answer_or_a_close_and_the_server_stays_up(
    served: Served, junk: bytes
) -> None:
    _, _, port = served
    got = await exchange(port, junk, wait=2.0, eof=True)
    assert got == b"" or got.startswith(b"HTTP/1.1 ")
    assert (await exchange(port, post("/ok"))).startswith(b"HTTP/1.1 200")
