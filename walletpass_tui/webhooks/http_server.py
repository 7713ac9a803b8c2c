"""The receiver's HTTP/1.1 server: a small asyncio protocol over ``httptools`` (llhttp, in C).

Every delivery goes through here, so it does only what a webhook receiver needs and nothing per
request that a sender does not: parse (llhttp, strict), bound what a client sends and leaves
unread, hand the request to the handler as soon as its headers are complete, write the answer,
keep the connection or close it. docs/threats/http.md has every bound and the test of each.

* The head, and a chunked body's trailer fields: at most ``MAX_HEAD_BYTES`` together,
  ``MAX_FIELD_BYTES`` a field, ``MAX_HEADERS`` fields, however the bytes arrive (431; a target over
  ``MAX_FIELD_BYTES`` is a 414), within ``read_timeout_s`` (408). Trailer fields are dropped.
* Malformed HTTP (llhttp's strict mode) is a 400 with llhttp's reason; a transfer coding other
  than chunked a 501, CONNECT a 501, an Expect other than 100-continue a 417, an HTTP version
  other than 1.0 and 1.1 a 505. An Upgrade is not done: the request is answered over HTTP/1.1.
* The body: the handler reads it through ``Request.content`` (``request_body.read_body`` keeps to
  the limit and the read timeout); the socket is not read while more than ``BUFFER_BYTES`` wait
  unread, and a connection whose body was not read to its end is closed after the answer.
* Requests on one connection are answered one at a time, in the order they came; a refusal comes
  after the answers of the requests before it, then the connection closes. Once a request waits
  behind the one being answered, the socket is not read and the rest of the read waits unparsed.
* A client that leaves answers unread gets no more until it reads, and is dropped when it takes
  none for ``read_timeout_s``. At most ``MAX_CONNECTIONS`` connections are open at once (503).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import cast
from urllib.parse import unquote

import httptools
from multidict import CIMultiDict

from walletpass_tui.logs import suppressed
from walletpass_tui.text import parse_ascii_int
from walletpass_tui.webhooks.statuses import EMPTY_CONTENT, FINAL_STATUSES, NO_CONTENT

log = logging.getLogger(__name__)

MAX_FIELD_BYTES = 16 * 1024  # the request target, or one field's name and value
MAX_HEAD_BYTES = 64 * 1024  # the target and every field's name and value together
MAX_HEADERS = 128
FEED_BYTES = 4 * 1024  # a read is parsed in pieces of at most this many bytes
BUFFER_BYTES = 256 * 1024  # unread body bytes before the socket is no longer read
MAX_CONNECTIONS = 512  # open at once; at most half the process's file descriptors
SHUTDOWN_S = 2.0  # stop(): how long requests in flight get to finish


class Body:
    """A request's body as it arrives: the subset of aiohttp's ``StreamReader`` that
    ``request_body.read_body`` uses (``is_eof``, ``read_nowait``, ``read``)."""

    __slots__ = ("_broken", "_buffered", "_chunks", "_connection", "_continue", "_eof", "_waiter")

    def __init__(self, connection: HttpConnection, expect_continue: bool) -> None:
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._eof = False
        self._broken = False  # malformed past the head: already answered 400
        self._waiter: asyncio.Future[None] | None = None
        self._connection = connection
        self._continue = expect_continue  # "Expect: 100-continue": answered when first read

    def is_eof(self) -> bool:
        """The whole body has arrived (it may still be buffered here)."""
        return self._eof

    def read_nowait(self) -> bytes:
        if self._broken:
            raise ConnectionResetError("the request was malformed and has been answered")
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._took(len(data))
        return data

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes, waiting for some; b"" at the end."""
        while not self._chunks and not self._eof:
            if self._continue:
                self._continue = False
                self._connection.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._broken:
            raise ConnectionResetError("the request was malformed and has been answered")
        if not self._chunks:
            return b""
        chunk = self._chunks.popleft()
        if len(chunk) > n:
            chunk, rest = chunk[:n], chunk[n:]
            self._chunks.appendleft(rest)
        self._took(len(chunk))
        return chunk

    @property
    def buffered(self) -> int:
        """Bytes that arrived and were not read yet."""
        return self._buffered

    def feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > BUFFER_BYTES:
            self._connection._update_reading()
        self._wake()

    def feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def break_off(self) -> None:
        """The rest of the body will not come (malformed, or the client went away): a handler
        still reading it hears so (ConnectionResetError)."""
        self._broken = True
        self.feed_eof()

    def _took(self, n: int) -> None:
        self._buffered -= n
        if self._buffered <= BUFFER_BYTES:
            self._connection._update_reading()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


@dataclass(eq=False)
class Request:
    """One request, handed over when its headers are complete; the body comes through ``content``."""

    method: str
    path: str  # percent-decoded, without the query
    path_qs: str  # the target as sent
    headers: CIMultiDict[str]
    remote: str | None
    content_length: int | None
    content: Body
    keep_alive: bool


@dataclass
class Response:
    status: int
    text: str = ""
    headers: Iterable[tuple[str, str]] = ()
    close: bool = False


Handler = Callable[[Request], Awaitable[Response]]


class _Refused(Exception):
    """Raised from a parser callback: the request is answered ``status`` with ``reason``."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


HEAD_TOO_LARGE = (
    f"the request's headers are too large (at most {MAX_HEAD_BYTES // 1024} KiB together, "
    f"{MAX_FIELD_BYTES // 1024} KiB a field, {MAX_HEADERS} fields)"
)


@dataclass(eq=False)
class _Exchange:
    """A request and what answering it needs that the handler does not see."""

    request: Request
    http_1_0: bool


class HttpConnection(asyncio.Protocol):
    """One client connection: llhttp's callbacks build requests, answered one at a time in the
    order they came; a refusal (malformed, too large) comes after the answers of the requests
    before it, and the connection closes after it."""

    def __init__(self, server: HttpServer) -> None:
        self._server = server
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._remote: str | None = None
        # The field section being parsed (the head, or a chunked body's trailer fields), bounded
        # by count and size however its bytes arrive: llhttp's callbacks count every field as it
        # completes; a field still arriving is counted by the bytes read while inside it.
        self._section: str | None = None  # "head", "trailers" or None
        self._section_no = 0  # a new number for each section
        self._section_bytes = 0  # the target and every field's name and value, as parsed
        self._section_fields = 0
        self._section_read = 0  # the same, counting whole reads that fell inside the section
        self._upgrade_framing = b""  # the framing of the body of a request asking for an Upgrade
        self._framing_only = False  # parsing the head that tells a new parser that framing
        self._url = b""
        self._headers: list[tuple[str, str]] = []
        self._current: _Exchange | None = None  # the request whose body is being parsed
        self._waiting: deque[_Exchange] = deque()  # whole heads behind the one being answered
        self._active: asyncio.Task[None] | None = None
        self._refusal: Response | None = None  # the last answer, after those of _waiting
        self._timer: asyncio.TimerHandle | None = None
        self._write_timer: asyncio.TimerHandle | None = None
        self._paused = False
        self._unparsed: memoryview | None = None  # the rest of a read, waiting to be parsed
        self._parse_soon = False
        self._write_paused = False
        self._closing = False
        self._ended = False  # nothing more is parsed: the client sent its end, or was refused
        self._shutting = False  # the server stops: the answer being made is the last

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        self._remote = str(peer[0]) if isinstance(peer, tuple) and peer else None
        if len(self._server.connections) >= self._server.max_connections:
            # Nothing of it is read: the file descriptors left are the store's and the rest.
            self._ended = True
            self._send("GET", Response(503, "too many connections; try again later\n"), close=True)
            self._close()
            return
        self._server.connections.add(self)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._server.connections.discard(self)
        self._cancel_timer()
        self._cancel_write_timer()
        self._waiting.clear()
        self._unparsed = None
        if self._current is not None:
            # A handler waiting for the rest of a body stops there: nothing to answer.
            self._current.request.content.break_off()

    def data_received(self, data: bytes) -> None:
        if self._unparsed is not None:  # reading is paused while bytes wait: not expected
            self._unparsed = memoryview(bytes(self._unparsed) + data)
            return
        self._parse(memoryview(data))

    def _parse(self, data: memoryview) -> None:
        """Parse ``data`` piece by piece; once a whole request waits behind the one being
        answered, the rest waits unparsed (``_unparsed``) until that one is started."""
        for start in range(0, len(data), FEED_BYTES):
            if self._closing or self._ended:
                return
            if self._waiting:
                self._unparsed = data[start:]
                self._update_reading()
                return
            self._feed(data[start : start + FEED_BYTES])

    def _parse_unparsed(self) -> None:
        self._parse_soon = False
        data, self._unparsed = self._unparsed, None
        if data is not None:
            self._parse(data)
            self._update_reading()

    def _feed(self, data: memoryview) -> None:
        """Parse one piece; a field section still open after it is bounded (``_bound_section``)."""
        if self._closing or self._ended:
            return
        section = self._section_no if self._section is not None else None
        size = len(data)
        try:
            while True:
                try:
                    self._parser.feed_data(data)
                    break
                except httptools.HttpParserUpgrade as upgrade:
                    data = data[upgrade.args[0] :]  # the upgrade's body, and what follows it
                    self._ignore_upgrade()
        except httptools.HttpParserCallbackError as exc:  # answered 4xx with its reason
            if isinstance(exc.__context__, _Refused):
                self._refuse(exc.__context__.status, exc.__context__.reason)
            else:
                self._refuse(400, "malformed HTTP request")
        except httptools.HttpParserError as exc:
            if self._parser.get_method() == b"PRI":  # HTTP/2's preface: no Upgrade came first
                self._refuse(505, "HTTP/2 is not supported here without an upgrade: send HTTP/1.1")
            else:
                self._refuse(400, f"malformed HTTP request ({_reason(exc)})")
        else:
            self._bound_section(section, size)

    def _ignore_upgrade(self) -> None:
        """llhttp stopped after the head of a request asking for an Upgrade (to h2c, websocket...)
        and would take what follows for another protocol. No Upgrade is done here: a new parser
        goes on over HTTP/1.1, told the framing of the request's body by a head of its own that
        is not handed over, so the body goes to the request already handed over."""
        framing, self._upgrade_framing = self._upgrade_framing, b""
        self._parser = httptools.HttpRequestParser(self)
        self._framing_only = True
        self._parser.feed_data(b"POST / HTTP/1.1\r\n" + framing + b"\r\n\r\n")

    def _bound_section(self, before: int | None, read: int) -> None:
        """A section still open after a piece: a piece that fell wholly inside it counts whole
        (the field llhttp is in the middle of is not reported until it ends); in the piece that
        opened it, what llhttp reported counts, so at most one piece (``FEED_BYTES``) goes
        uncounted."""
        if self._section is None:
            return
        if self._section_no == before:
            self._section_read += read
        else:
            self._section_read = self._section_bytes
        if self._section_read > MAX_HEAD_BYTES:
            self._refuse(431, HEAD_TOO_LARGE)

    def eof_received(self) -> bool:
        """The client sent all it will: the requests it sent whole are still answered, then the
        connection closes; one cut short is refused in its turn."""
        if self._closing or self._ended:
            return self._busy()
        if self._current is not None:
            self._refuse(400, "the request ended before its body did")
        elif self._section == "head":
            self._refuse(400, "the request ended before its headers did")
        else:
            self._ended = True
            if not self._busy():
                self._close()
        return self._busy()

    def pause_writing(self) -> None:
        """Answers pile up unread: no more requests are read or answered until the client reads,
        and a client that does not within the read timeout is dropped."""
        self._write_paused = True
        self._update_reading()
        self._watch_writes()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._cancel_write_timer()
        if not self._closing:
            self._next()

    # -- llhttp's callbacks ----------------------------------------------------------------------

    def _open_section(self, kind: str) -> None:
        self._section = kind
        self._section_no += 1
        self._section_bytes = self._section_fields = self._section_read = 0

    def on_message_begin(self) -> None:
        if self._framing_only:
            return
        self._open_section("head")
        self._url = b""
        self._headers = []

    def on_url(self, url: bytes) -> None:
        if self._framing_only:
            return
        self._url += url
        self._section_bytes += len(url)
        if len(self._url) > MAX_FIELD_BYTES:
            raise _Refused(414, f"the request target is too long (at most {MAX_FIELD_BYTES} bytes)")

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._framing_only:
            return
        size = len(name) + len(value)
        self._section_fields += 1
        self._section_bytes += size
        if (
            size > MAX_FIELD_BYTES
            or self._section_fields > MAX_HEADERS
            or self._section_bytes > MAX_HEAD_BYTES
        ):
            raise _Refused(431, HEAD_TOO_LARGE)
        if self._section == "head":  # trailer fields are bounded the same way, and dropped
            self._headers.append((name.decode("latin-1"), value.decode("utf-8", "surrogateescape")))

    def on_headers_complete(self) -> None:
        if self._framing_only:  # the body that follows is the upgrade request's
            self._framing_only = False
            return
        self._section = None
        self._cancel_timer()
        parser = self._parser
        method = parser.get_method()
        version = parser.get_http_version()
        if version not in ("1.0", "1.1"):
            raise _Refused(505, f"HTTP/{version} is not supported: send HTTP/1.1")
        if method == b"CONNECT":
            raise _Refused(501, "CONNECT is not supported: this server receives webhooks")
        headers = CIMultiDict(self._headers)
        target = self._url.decode("utf-8", "surrogateescape")
        try:
            path = unquote(httptools.parse_url(self._url).path.decode("utf-8", "surrogateescape"))
        except httptools.HttpParserInvalidURLError:
            path = target  # not a path (llhttp let it through): it matches no route
        _check_codings(headers)
        expectations = [e.strip().lower() for e in headers.getall("Expect", [])]
        if expectations and expectations != ["100-continue"]:
            raise _Refused(417, "no expectation but Expect: 100-continue can be met")
        http_1_0 = version == "1.0"
        declared = headers.get("Content-Length")
        request = Request(
            method=method.decode("ascii", "replace"),
            path=path,
            path_qs=target,
            headers=headers,
            remote=self._remote,
            content_length=parse_ascii_int(declared) if declared else None,
            content=Body(self, bool(expectations) and not http_1_0),  # 1.0 knows no 100
            keep_alive=parser.should_keep_alive(),
        )
        exchange = self._current = _Exchange(request, http_1_0)
        if parser.should_upgrade():  # llhttp skips the body and stops: _ignore_upgrade goes on
            self._upgrade_framing = (
                b"Transfer-Encoding: chunked"
                if "Transfer-Encoding" in headers
                else f"Content-Length: {request.content_length or 0}".encode()
            )
        self._waiting.append(exchange)
        self._next()

    def on_chunk_header(self) -> None:
        # After the last chunk's size line come the trailer fields; after any other, its data
        # (on_body closes the section again).
        self._open_section("trailers")

    def on_chunk_complete(self) -> None:
        self._section = None

    def on_body(self, body: bytes) -> None:
        self._section = None
        if self._current is not None:
            self._current.request.content.feed(body)

    def on_message_complete(self) -> None:
        if self._upgrade_framing:
            return  # not the end: llhttp skipped the body of a request asking for an Upgrade
        if self._current is not None:
            self._current.request.content.feed_eof()
            self._current = None
        self._section = None

    # -- answering -------------------------------------------------------------------------------

    def _busy(self) -> bool:
        """Something is being answered, or waits to be."""
        return self._active is not None or bool(self._waiting) or self._refusal is not None

    def _next(self) -> None:
        """Start answering the next request, or send the refusal that waits, or wait for the next
        head (whichever is due), unless the client does not read what was sent already."""
        if self._active is not None or self._closing or self._write_paused:
            self._update_reading()
            return
        if self._waiting:
            self._active = self._loop.create_task(self._answer(self._waiting.popleft()))
        elif self._refusal is not None:
            self._send("POST", self._refusal, close=True)
            self._close()
            return
        elif self._ended or self._shutting:
            self._close()
            return
        else:
            self._arm_head_timer()  # keep-alive: the next head must come in time too
        self._update_reading()

    async def _answer(self, exchange: _Exchange) -> None:
        request = exchange.request
        try:
            response: Response | None = await self._server.handler(request)
        except ConnectionResetError:  # the body never came whole: refused already, or gone
            response = None
        except Exception:  # the handler's own failures are answered, never raised into asyncio
            response = Response(500, "Internal error: the delivery was not handled\n", close=True)
        self._active = None
        if response is None or self._closing:
            self._close()
            return
        unread = not request.content.is_eof()
        last = not self._waiting and self._refusal is None and (self._ended or self._shutting)
        close = response.close or not request.keep_alive or unread or self._shutting or last
        # HTTP/1.0 closes after the answer unless told otherwise.
        self._send(request.method, response, close, keep_alive=exchange.http_1_0 and not close)
        if close:
            self._close()
        else:
            self._next()

    def _send(
        self, method: str, response: Response, close: bool, *, keep_alive: bool = False
    ) -> None:
        if response.status not in FINAL_STATUSES:  # a bug: never frame what no client can read
            log.error("a handler answered %r, not a final status: answered 500", response.status)
            response = Response(500, "Internal error: the delivery was not handled\n", close=True)
        status = response.status
        body = b"" if status in NO_CONTENT or status in EMPTY_CONTENT else response.text.encode()
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:  # a status without a phrase: Unknown
            phrase = "Unknown"
        lines = [f"HTTP/1.1 {status} {phrase}"]
        if status not in NO_CONTENT:
            lines.append("Content-Type: text/plain; charset=utf-8")
            lines.append(f"Content-Length: {len(body)}")
        lines.append(f"Date: {_http_date()}")
        lines.extend(f"{name}: {value}" for name, value in response.headers)
        if close:
            lines.append("Connection: close")
        elif keep_alive:
            lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.write(head if method == "HEAD" else head + body)

    def _refuse(self, status: int, reason: str) -> None:
        """Malformed, too large or cut short: nothing more is read; the refusal is answered after
        the requests before it (the one it is about is never handed over, or if it is being
        handled, its handler stops reading and this is its answer), then the connection closes."""
        if self._closing or self._refusal is not None:
            return
        self._cancel_timer()
        self._ended = True
        self._unparsed = None
        self._update_reading()
        refusal = Response(status, f"{reason}\n", close=True)
        current, self._current = self._current, None
        if current is not None:
            current.request.content.break_off()
            if current in self._waiting:
                self._waiting.remove(current)  # never handed over
            elif self._active is not None:  # it is being handled: this is its answer
                self._send("POST", refusal, close=True)
                self._close()
                return
        self._refusal = refusal
        self._next()

    def _head_timed_out(self) -> None:
        self._timer = None
        if self._busy() or self._closing:
            return
        if self._section == "head":
            self._refuse(408, "the request's headers did not arrive in time")
        else:
            self._close()  # an idle kept-alive connection: closed quietly

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def _update_reading(self) -> None:
        """Read while a request could be parsed and handed over: not while one waits behind the
        one being answered, nor while the client leaves answers unread, nor while more than
        ``BUFFER_BYTES`` of a body wait to be read by its handler."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        body = self._current.request.content if self._current is not None else None
        wanted = not (
            self._ended
            or self._waiting
            or self._write_paused
            or (body is not None and body.buffered > BUFFER_BYTES)
        )
        if wanted and self._unparsed is not None:
            # What was read already is parsed first (soon: this may run inside a callback of
            # the parser); the socket is read again once it is.
            if not self._parse_soon:
                self._parse_soon = True
                self._loop.call_soon(self._parse_unparsed)
            wanted = False
        if wanted and self._paused:
            self._paused = False
            transport.resume_reading()
        elif not wanted and not self._paused:
            self._paused = True
            transport.pause_reading()

    def _arm_head_timer(self) -> None:
        self._cancel_timer()
        self._timer = self._loop.call_later(self._server.read_timeout_s, self._head_timed_out)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _watch_writes(self, unsent: int | None = None) -> None:
        """While answers wait unsent, the client must take some of them every ``read_timeout_s``
        or it is dropped."""
        if unsent is None and self._write_timer is not None:
            return  # watched already
        self._write_timer = None
        transport = self._transport
        now = transport.get_write_buffer_size() if transport is not None else 0
        if not now:
            return
        if unsent is not None and now >= unsent:
            self.abort()  # nothing was taken in a whole read timeout
            return
        self._write_timer = self._loop.call_later(
            self._server.read_timeout_s, self._watch_writes, now
        )

    def _cancel_write_timer(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _close(self) -> None:
        """Close once what was written is sent; a client that does not read it within the read
        timeout is dropped."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
            if self._transport.get_write_buffer_size():
                self._watch_writes()
        self._closing = True
        self._cancel_timer()
        self._waiting.clear()
        self._unparsed = None

    # -- stopping --------------------------------------------------------------------------------

    def shut(self) -> None:
        """The server stops: an idle connection closes now, a busy one after its answer."""
        self._shutting = True
        self._waiting.clear()
        self._refusal = None
        if self._active is None:
            self._close()

    @property
    def active(self) -> asyncio.Task[None] | None:
        return self._active

    @property
    def waiting(self) -> int:
        """How many whole requests wait behind the one being answered."""
        return len(self._waiting)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()


class HttpServer:
    """Serves ``handler`` on a listening socket: ``bind()``, ``serve()``, ``stop()``."""

    def __init__(
        self, handler: Handler, *, read_timeout_s: float, max_connections: int | None = None
    ) -> None:
        self.handler = handler
        self.read_timeout_s = read_timeout_s
        self.max_connections = max_connections or _connection_bound()
        self.connections: set[HttpConnection] = set()
        self._server: asyncio.Server | None = None

    async def bind(self, sock: socket.socket) -> asyncio.Server:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HttpConnection(self), sock=sock, start_serving=False
        )
        return self._server

    async def stop(self, timeout_s: float = SHUTDOWN_S) -> None:
        """Stop accepting, let requests in flight finish (``timeout_s`` at most), close all."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for connection in list(self.connections):
            connection.shut()
        busy = [c.active for c in self.connections if c.active is not None]
        if busy:
            await asyncio.wait(busy, timeout=timeout_s)
        for connection in list(self.connections):
            connection.abort()
        if server is not None:
            with suppressed(log, "waiting for the receiver's connections to close"):
                await server.wait_closed()


def _check_codings(headers: CIMultiDict[str]) -> None:
    """A body is read as sent, or chunked: a transfer coding it would have to decode (gzip,
    deflate...) is a 501. A Content-Encoding is the sender's and kept: the signature is over the
    bytes as sent."""
    codings = [c.strip() for te in headers.getall("Transfer-Encoding", []) for c in te.split(",")]
    if codings and [c.lower() for c in codings] != ["chunked"]:
        shown = ", ".join(codings)[:100]
        raise _Refused(
            501,
            f"Transfer-Encoding {shown} is not supported: "
            "send the body with Content-Length, or chunked and nothing else",
        )


def _connection_bound() -> int:
    """``MAX_CONNECTIONS``, or half the file descriptors this process may open if that is less
    (macOS gives a shell 256)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return MAX_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, soft // 2))


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:200]


_date_cache: tuple[int, str] = (0, "")


def _http_date() -> str:
    """The Date header, formatted once a second."""
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, email.utils.formatdate(now, usegmt=True))
    return _date_cache[1]
