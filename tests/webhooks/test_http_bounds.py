"""The bounds on what a client sends and on what it leaves unread, however the bytes arrive: in one
write, in many small ones, pipelined behind another request. Real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from http_helpers import (
    SHORT_TIMEOUT_S,
    Served,
    exchange,
    exchange_to_close,
    http_served,  # noqa: F401  (the "served" fixture)
    parse_answers,
    post,
    until,
)
from receiver_helpers import (
    Env,
    raw_exchange,
    receiver_env,  # noqa: F401  (the "env" fixture)
    signed,
)

from walletpass_tui.webhooks.http_server import (
    MAX_FIELD_BYTES,
    MAX_HEAD_BYTES,
    MAX_HEADERS,
)


def head_of(size: int, *, field: int = 1000) -> str:
    """Header lines worth about ``size`` bytes of names and values, each field ``field`` bytes."""
    count = size // field + 1
    return "".join(f"X-F{n:03}: {'v' * (field - 8)}\r\n" for n in range(count))


async def send_in_pieces(port: int, data: bytes, piece: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = b""
    try:
        for start in range(0, len(data), piece):
            writer.write(data[start : start + piece])
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(5):
                while chunk := await reader.read(65536):
                    got += chunk
    finally:
        writer.close()
    return got


# -- the head: 64 KiB, 16 KiB a field, 128 fields ------------------------------------------------


async def test_a_100_kb_head_in_one_write_is_431_and_never_handled(served: Served) -> None:
    _, echo, port = served
    request = post(extra=head_of(100_000))
    assert len(request) > 100_000 and MAX_HEADERS >= 101
    got, closed = await exchange_to_close(port, request)
    answers = parse_answers(got)
    assert [a.status for a in answers] == [431] and closed
    assert b"headers are too large" in answers[0].body
    assert echo.requests == []


@pytest.mark.parametrize("piece", [1000, 7])
async def test_a_100_kb_head_in_small_writes_is_431(served: Served, piece: int) -> None:
    _, echo, port = served
    got = await send_in_pieces(port, post(extra=head_of(100_000)), piece)
    assert [a.status for a in parse_answers(got)] == [431]
    assert echo.requests == []


async def test_a_100_kb_head_pipelined_behind_a_delivery_is_431_after_its_answer(
    served: Served,
) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(port, post("/a", b"1") + post(extra=head_of(100_000)))
    assert [a.status for a in parse_answers(got)] == [200, 431] and closed
    assert [s[1] for s in echo.seen] == ["/a"]


async def test_a_field_that_never_ends_is_431_in_small_writes(served: Served) -> None:
    _, echo, port = served
    endless = post(extra="X-Endless: ")[:-2] + b"e" * (3 * MAX_HEAD_BYTES)  # no end of line
    got = await send_in_pieces(port, endless, 4096)
    assert [a.status for a in parse_answers(got)] == [431]
    assert echo.requests == []


async def test_a_field_that_never_ends_read_at_once_is_431(served: Served) -> None:
    _, echo, port = served
    echo.gate = asyncio.Event()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post("/a") + post("/b"))  # /b waits behind /a: the socket is not read
    await until(lambda: len(echo.requests) == 1)
    endless = post(extra="X-Endless: ")[:-2] + b"e" * (MAX_HEAD_BYTES + 40_000)  # no end
    writer.write(endless)  # waits in the kernel's buffers, to be read in one go, or two
    await writer.drain()
    echo.gate.set()
    got = b""
    with contextlib.suppress(ConnectionError, TimeoutError):
        async with asyncio.timeout(5):
            while chunk := await reader.read(65536):
                got += chunk
    writer.close()
    assert [a.status for a in parse_answers(got)] == [200, 200, 431]  # not 408: bytes held
    assert [s[1] for s in echo.seen] == ["/a", "/b"]


@pytest.mark.parametrize("piece", [None, 1000])
async def test_a_head_just_under_the_bound_is_accepted(served: Served, piece: int | None) -> None:
    _, echo, port = served
    request = post(extra=head_of(MAX_HEAD_BYTES - 2000))
    assert len(request) < MAX_HEAD_BYTES
    if piece is None:
        got = await exchange(port, request)
    else:
        got = await send_in_pieces(
            port, request + post("/end", extra="Connection: close\r\n"), 1000
        )
    assert parse_answers(got)[0].status == 200
    assert len(echo.requests[0].headers) == len(head_of(MAX_HEAD_BYTES - 2000).splitlines()) + 2


async def test_a_field_over_its_bound_in_one_write_among_others_is_431(served: Served) -> None:
    _, echo, port = served
    big = "X-Big: " + "a" * MAX_FIELD_BYTES + "\r\n"
    got, _ = await exchange_to_close(port, post("/a", b"1") + post(extra=big + "X-Next: 1\r\n"))
    assert [a.status for a in parse_answers(got)] == [200, 431]
    assert [s[1] for s in echo.seen] == ["/a"]


async def test_a_request_target_over_the_field_bound_is_414(served: Served) -> None:
    _, echo, port = served
    got, closed = await exchange_to_close(port, post("/" + "p" * MAX_FIELD_BYTES))
    assert [a.status for a in parse_answers(got)] == [414] and closed
    assert echo.requests == []


async def test_129_headers_in_one_write_behind_a_delivery_are_431(served: Served) -> None:
    _, echo, port = served
    many = "".join(f"X-H{n}: v\r\n" for n in range(MAX_HEADERS))  # with Host and Content-Length
    got, _ = await exchange_to_close(port, post("/a", b"1") + post(extra=many))
    assert [a.status for a in parse_answers(got)] == [200, 431]
    assert len(echo.requests) == 1


async def test_a_100_kb_head_to_the_receiver_is_431_and_not_stored(env: Env) -> None:
    receiver = await env.start()
    assert receiver.bound is not None
    request = post("/not-the-path", extra=head_of(100_000))
    answer = await raw_exchange(receiver.bound[1], request)
    assert answer.startswith(b"HTTP/1.1 431")
    assert await env.store.log_page() == []


# -- trailer fields: the same bounds, and dropped ------------------------------------------------


def chunked(path: str, body_and_trailers: bytes) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head.encode() + body_and_trailers


async def test_trailer_fields_are_read_and_dropped(served: Served) -> None:
    _, echo, port = served
    got = await exchange(port, chunked("/t", b"3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n"))
    assert parse_answers(got)[0].status == 200
    assert echo.seen == [("POST", "/t", b"abc")]
    assert "X-Trailer" not in echo.requests[0].headers


async def test_100_kb_of_trailer_fields_in_one_write_are_431(served: Served) -> None:
    _, _, port = served
    trailers = head_of(100_000).encode()
    got, closed = await exchange_to_close(port, chunked("/t", b"1\r\na\r\n0\r\n" + trailers))
    assert [a.status for a in parse_answers(got)] == [431] and closed


async def test_a_trailer_field_that_never_ends_is_cut_off_at_its_bound(served: Served) -> None:
    _, _, port = served
    endless = chunked("/t", b"1\r\na\r\n0\r\nX-T: ") + b"v" * (MAX_HEAD_BYTES * 3)
    got = await send_in_pieces(port, endless, 4096)
    assert [a.status for a in parse_answers(got)] == [431]


# -- time: a head or a body that trickles in ------------------------------------------------------


async def trickle(port: int, data: bytes, first: bytes = b"", every_s: float = 0.05) -> bytes:
    """Send ``first`` at once, then ``data`` a byte at a time until the server answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(first)
        for byte in data:
            writer.write(bytes([byte]))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(every_s):
                    got = await reader.read(65536)
                    with contextlib.suppress(ConnectionError, TimeoutError):
                        async with asyncio.timeout(5):
                            while chunk := await reader.read(65536):
                                got += chunk
                    return got
        return b""
    finally:
        writer.close()


@pytest.mark.parametrize("served", [SHORT_TIMEOUT_S], indirect=True)
async def test_a_head_that_trickles_in_gets_408_within_the_read_timeout(served: Served) -> None:
    _, echo, port = served
    got = await trickle(port, post(extra="X-Slow: " + "s" * 200 + "\r\n"))  # 20 s at this pace
    assert [a.status for a in parse_answers(got)] == [408]  # read_timeout_s is 0.5 s
    assert echo.requests == []


async def test_a_body_that_trickles_in_gets_408_within_the_read_timeout(env: Env) -> None:
    receiver = await env.start(read_timeout_s=0.3)
    assert receiver.bound is not None
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed("msg_trickle").items())
    head = f"POST /webhooks HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: 400\r\n\r\n"
    got = await trickle(receiver.bound[1], b"x" * 400, first=head.encode())  # 20 s at this pace
    assert [a.status for a in parse_answers(got)] == [408]
    assert b"did not arrive in time" in got
