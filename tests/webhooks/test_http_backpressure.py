"""Back-pressure: a client that stops reading its answers has nothing piled up for it in the
server and is dropped when it takes nothing for a whole read timeout; a body its handler does not
read yet is not read from the socket past a bound; requests pipelined behind the one being
answered wait unparsed; connections over a bound are refused. Real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from http_helpers import (
    SHORT_TIMEOUT_S,
    Echo,
    Served,
    exchange,
    http_served,  # noqa: F401  (the "served" fixture)
    parse_answers,
    post,
    until,
)

from walletpass_tui.webhooks.http_server import (
    BUFFER_BYTES,
    FEED_BYTES,
    HttpServer,
    Request,
    Response,
)


class BigAnswers:
    """Answers every request with 1 MiB; counts the requests it was given."""

    def __init__(self) -> None:
        self.handled = 0

    async def __call__(self, request: Request) -> Response:
        self.handled += 1
        return Response(200, "a" * (1024 * 1024))


@pytest.fixture
async def big_answers(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[HttpServer, BigAnswers, int]]:
    """A server of BigAnswers with a read timeout of 10 s; with
    ``@pytest.mark.parametrize("big_answers", [(timeout_s, n)], indirect=True)``, of
    ``timeout_s``, and its sockets' kernel send buffer is ``n`` bytes, so what it writes stays in
    its own buffer."""
    timeout_s, send_buffer = getattr(request, "param", (10.0, None))
    handler = BigAnswers()
    server = HttpServer(handler, read_timeout_s=timeout_s)
    sock = socket.create_server(("127.0.0.1", 0))
    if send_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)  # inherited
    sock.setblocking(False)
    listening = await server.bind(sock)
    await listening.start_serving()
    yield server, handler, sock.getsockname()[1]
    await server.stop()


async def small_window_connection(port: int, request: bytes) -> socket.socket:
    """A raw socket with a small receive window that sent ``request`` and reads nothing until
    told (an asyncio stream would read ahead into its own buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: it holds
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, request)
    return sock


async def test_answers_a_client_does_not_read_are_not_piled_up(
    big_answers: tuple[HttpServer, BigAnswers, int],
) -> None:
    _, handler, port = big_answers
    sock = await small_window_connection(port, b"".join(post(f"/{n}") for n in range(16)))
    await until(lambda: handler.handled >= 1)
    await asyncio.sleep(0.3)  # time enough to answer all 16 if nothing held them back
    # At most what the kernel's buffers take (a few MiB), then one more in the server's own.
    assert handler.handled < 16  # the next is handled once the client reads
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2**22)
    got = b""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(10):  # reading now: every answer comes, in order
        while len(parse_answers(got)) < 16 and (chunk := await loop.sock_recv(sock, 2**20)):
            got += chunk
    assert [a.status for a in parse_answers(got)] == [200] * 16
    sock.close()


@pytest.mark.parametrize("big_answers", [(SHORT_TIMEOUT_S, 4096)], indirect=True)
async def test_a_client_that_never_reads_its_answer_is_dropped(
    big_answers: tuple[HttpServer, BigAnswers, int],
) -> None:
    server, handler, port = big_answers
    sock = await small_window_connection(port, post())
    await until(lambda: handler.handled == 1 and server.connections)
    await until(lambda: not server.connections)  # read_timeout_s is 0.5 s: then it is aborted
    sock.close()


async def test_a_body_its_handler_does_not_read_yet_is_not_read_past_a_bound(
    served: Served,
) -> None:
    _, echo, port = served
    echo.gate = asyncio.Event()  # the handler waits before it reads the body
    size = 16 * BUFFER_BYTES
    head = f"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n".encode()
    sock = socket.socket()
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    sending = asyncio.create_task(loop.sock_sendall(sock, head + b"b" * size))
    await until(lambda: echo.requests and echo.requests[0].content.buffered > BUFFER_BYTES)
    await asyncio.sleep(0.3)  # time enough to read it all if nothing held it back
    assert echo.requests[0].content.buffered < 2 * BUFFER_BYTES  # one more read at most
    echo.gate.set()
    sending.cancel()
    sock.close()


async def test_pipelined_requests_wait_unparsed_behind_the_one_being_answered(
    served: Served,
) -> None:
    server, echo, port = served
    echo.gate = asyncio.Event()  # the first request's handler waits
    one = b"GET /n HTTP/1.1\r\nHost: x\r\n\r\n"
    count = 2000  # 58 KB in one write
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(one * count)
    await writer.drain()
    await until(lambda: echo.requests and server.connections)
    await asyncio.sleep(0.3)  # time enough to parse all 2,000 if nothing held them back
    (connection,) = server.connections
    assert 1 <= connection.waiting <= FEED_BYTES // len(one) + 1  # parsed: one piece at most
    echo.gate.set()
    got = b""
    async with asyncio.timeout(30):  # did not hang: every one is answered, in order
        while got.count(b"HTTP/1.1 200") < count and (chunk := await reader.read(65536)):
            got += chunk
    writer.close()
    assert got.count(b"HTTP/1.1 200") == count
    assert len(echo.seen) == count


async def test_connections_over_the_bound_get_503_and_the_others_go_on() -> None:
    echo = Echo()
    server = HttpServer(echo, read_timeout_s=10.0, max_connections=2)
    sock = socket.create_server(("127.0.0.1", 0))
    sock.setblocking(False)
    await (await server.bind(sock)).start_serving()
    port = sock.getsockname()[1]
    try:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await until(lambda: len(server.connections) == 2)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        async with asyncio.timeout(5):
            refused = await reader.read()  # the answer, then the close
        writer.close()
        answers = parse_answers(refused)
        assert [(a.status, a.header("Connection")) for a in answers] == [(503, "close")]
        assert b"too many connections" in answers[0].body
        assert len(server.connections) == 2
        held[0][1].write(post("/still"))  # the connections it holds are served
        assert (await held[0][0].readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        held[1][1].close()
        await until(lambda: len(server.connections) == 1)
        got = await exchange(port, post("/again"))  # a place is free again
        assert parse_answers(got)[0].status == 200
        held[0][1].close()
    finally:
        await server.stop()
    assert [s[1] for s in echo.seen] == ["/still", "/again"]
