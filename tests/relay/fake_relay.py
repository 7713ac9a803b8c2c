"""A hostile relay for tests: a raw asyncio server on 127.0.0.1 (ephemeral port) that answers each
connection with exactly the bytes the test's script writes, HTTP head included.

``FakeRelay(stream)``: ``stream(conn)`` runs for every ``GET .../events``; ``info(conn)`` (by default
a 404) for ``GET /channels/x``. ``conn.last_event_id`` is the cursor the subscriber resumed after;
``relay.connections`` lists every stream connection in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from walletpass_tui.relay.events import delivery_data, sse_comment, sse_event

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nNot found\n"
MAX_HEAD = 64 * 1024


@dataclass
class Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    request_line: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        parts = self.request_line.split()
        return parts[1] if len(parts) > 1 else ""

    @property
    def last_event_id(self) -> str | None:
        return self.headers.get("last-event-id")

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def hold(self) -> None:
        """Keep the connection open, sending nothing, until the peer closes it."""
        with contextlib.suppress(ConnectionError):
            while await self.reader.read(4096):
                pass


Script = Callable[[Connection], Awaitable[None]]


async def not_found(conn: Connection) -> None:
    await conn.write(NOT_FOUND)


def channel_info(created_at_ms: int | None) -> Script:
    """``GET /channels/x`` as the relay answers it (``created_at_ms`` left out when None)."""

    async def answer(conn: Connection) -> None:
        data: dict[str, object] = {
            "name": "x",
            "ingress_url": "http://127.0.0.1:9/in/x",
            "subscribe_url": "http://127.0.0.1:9/channels/x/events",
            "verifies_at_edge": False,
        }
        if created_at_ms is not None:
            data["created_at_ms"] = created_at_ms
        body = json.dumps(data).encode()
        await conn.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )

    return answer


class FakeRelay:
    def __init__(self, stream: Script, info: Script = not_found) -> None:
        self.stream = stream
        self.info = info
        self.connections: list[Connection] = []
        self.info_requests = 0
        self.connected = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/channels/x/events"

    async def __aenter__(self) -> FakeRelay:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            await self._server.wait_closed()

    async def wait_connections(self, count: int, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while len(self.connections) < count:
                self.connected.clear()
                await self.connected.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = Connection(reader, writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            conn.request_line = lines[0]
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    conn.headers[name.strip().lower()] = value.strip()
            if conn.path.rstrip("/").endswith("/events"):
                self.connections.append(conn)
                self.connected.set()
                await self.stream(conn)
            else:
                self.info_requests += 1
                await self.info(conn)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:  # the relay stops: the connection ends with it
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def delivery(
    cursor: int,
    *,
    body: bytes = b"{}",
    headers: tuple[tuple[str, str], ...] = (),
    received_at_ms: int = 0,
    channel: str = "x",
) -> bytes:
    """One well-formed delivery event, as the relay writes it."""
    data = delivery_data(
        received_at_ms=received_at_ms,
        method="POST",
        path="/in/x",
        headers=headers,
        body=body,
        source="127.0.0.1",
        forwarded_for=None,
        client="127.0.0.1",
        channel=channel,
    )
    return sse_event(cursor, data)


def connected(head: int) -> bytes:
    return b"retry: 2000\n" + sse_comment(f"connected head={head}")


def heartbeat(head: int) -> bytes:
    return sse_comment(f"heartbeat head={head}")


def replaying(events: dict[int, bytes], head: int | None = None) -> Script:
    """A relay that resumes as the real one does: each connection gets ``connected head=N``,
    every event whose cursor is above the subscriber's ``Last-Event-ID``, then heartbeats."""
    top = head if head is not None else max(events, default=0)

    async def stream(conn: Connection) -> None:
        after = int(conn.last_event_id or 0)
        later = b"".join(event for cursor, event in sorted(events.items()) if cursor > after)
        await conn.write(SSE_HEAD + connected(top) + later)
        while True:
            await asyncio.sleep(0.1)
            await conn.write(heartbeat(top))

    return stream


def event(cursor: int | str, data: bytes, name: bytes = b"delivery") -> bytes:
    """An event with any data, framed as the relay frames one."""
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (str(cursor).encode(), name, data)
