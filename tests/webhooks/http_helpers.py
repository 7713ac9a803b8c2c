"""What the HTTP server's tests share: a server on 127.0.0.1 with an ephemeral port serving a handler
that records what it saw (the ``served`` fixture), raw-socket exchanges and a reader of the answers.

Test files use the fixture by importing ``http_served`` (it is registered as ``served``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest

from walletpass_tui.webhooks.http_server import HttpServer, Request, Response
from walletpass_tui.webhooks.request_body import read_body

SHORT_TIMEOUT_S = 0.5  # for the tests of what happens when the read timeout is over


class Echo:
    """A handler that reads the body (within 1,000 bytes) and answers what it saw (``/boom``
    raises, ``/status/N`` answers N with a line of text)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bytes]] = []
        self.requests: list[Request] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, request: Request) -> Response:
        self.requests.append(request)
        if request.path == "/boom":
            raise RuntimeError("a bug in the handler")
        if request.path.startswith("/status/"):  # answered that status, with text
            return Response(int(request.path.removeprefix("/status/")), "some text\n")
        if self.gate is not None:
            await self.gate.wait()
        body = await read_body(request, 1000, 2.0)
        self.seen.append((request.method, request.path_qs, body))
        return Response(200, f"{request.method} {request.path} {len(body)}\n", [("X-Seen", "1")])


Served = tuple[HttpServer, Echo, int]


@pytest.fixture(name="served")
async def http_served(request: pytest.FixtureRequest) -> AsyncIterator[Served]:
    """A server of an Echo; its read timeout is 10 s (generous: load cannot reach it), or what
    ``@pytest.mark.parametrize("served", [SHORT_TIMEOUT_S], indirect=True)`` says."""
    echo = Echo()
    server = HttpServer(echo, read_timeout_s=getattr(request, "param", 10.0))
    sock = socket.create_server(("127.0.0.1", 0))
    sock.setblocking(False)
    listening = await server.bind(sock)
    await listening.start_serving()
    try:
        yield server, echo, sock.getsockname()[1]
    finally:
        await server.stop()


async def exchange(
    port: int, data: bytes, *, answers: int = 1, wait: float = 5.0, eof: bool = False
) -> bytes:
    """Send ``data`` (then end the sending side, with ``eof``); read until ``answers`` complete
    answers came or the server closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        if eof:
            writer.write_eof()
        got = b""
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(wait):
                while complete_answers(got) < answers:
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    got += chunk
        return got
    finally:
        writer.close()


async def exchange_to_close(port: int, data: bytes, *, wait: float = 5.0) -> tuple[bytes, bool]:
    """Send ``data`` in one write and read until the server closes: (what came, whether it closed
    within ``wait`` seconds)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = b""
    closed = False
    try:
        writer.write(data)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                try:
                    while chunk := await reader.read(65536):
                        got += chunk
                except ConnectionError:
                    pass
                closed = True
        return got, closed
    finally:
        writer.close()


@dataclass
class Answer:
    status: int
    head: bytes
    body: bytes

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.lower().encode():
                return value.strip().decode("latin-1")
        return None


def parse_answers(got: bytes) -> list[Answer]:
    """The whole answers in ``got``, in order (interim 1xx answers included)."""
    found: list[Answer] = []
    while (end := got.find(b"\r\n\r\n")) >= 0:
        head = got[:end]
        status = int(head.split(b" ", 2)[1])
        answer = Answer(status, head, b"")
        length = int(answer.header("Content-Length") or 0)
        if len(got) < end + 4 + length:
            break
        answer.body = got[end + 4 : end + 4 + length]
        found.append(answer)
        got = got[end + 4 + length :]
    return found


def complete_answers(got: bytes) -> int:
    """How many whole final answers (head and Content-Length body) ``got`` holds."""
    return sum(1 for a in parse_answers(got) if a.status >= 200)


async def closed_by_server(reader: asyncio.StreamReader, wait: float = 5.0) -> bool:
    """Whether the server closed the connection within ``wait`` seconds (what came is dropped)."""
    with contextlib.suppress(ConnectionError, TimeoutError):
        async with asyncio.timeout(wait):
            while await reader.read(65536):
                pass
            return True
    return False


async def until(check: Callable[[], object], timeout: float = 10.0) -> None:
    """Poll ``check`` until it is true (a "did not hang" guard of ``timeout`` seconds)."""
    for _ in range(int(timeout / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


def post(path: str = "/hook", body: bytes = b"{}", extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body
