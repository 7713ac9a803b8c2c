"""Why a request got no answer, in one sentence: the one place httpx's exceptions are read.

httpx reports a refused port, a name that does not resolve and a certificate nobody trusts alike,
as ``ConnectError``; the reason is further down the exception's chain (``__cause__`` and
``__context__``, and the members of an ``ExceptionGroup`` when several addresses were tried).
``why_no_answer`` walks that chain (bounded) and names the failure a person can act on::

    UNTRUSTED_CERT   the certificate of HOST is not trusted (self-signed or unknown CA)
    EXPIRED_CERT     the certificate of HOST has expired
    WRONG_NAME_CERT  the certificate of HOST is for another name
    TLS              the TLS handshake with HOST failed (the reason)
    NO_SUCH_HOST     HOST does not resolve
    REFUSED          connection refused (is your app running?)
    UNREACHABLE      HOST cannot be reached (no route to it)
    TIMEOUT          timed out: no answer within N s
    NOT_HTTP         HOST answered with something that is not HTTP
    CLOSED           the connection was closed without an answer
    CUT              the connection was closed in the middle of the answer
    RESET            the connection was reset before the answer was complete
                     (or: closed while the request was being sent)
    OTHER            the exception's own name and text, clipped

Forwards, replays and the check record the sentence, said of the user's own app by ``to_target``
(a certificate it does not trust tells how to trust it: ``--ca-bundle FILE`` or ``--insecure``);
the service's client picks its own wording from the kind.

A peer that writes a line of anything but HTTP and hangs up looks to httpx exactly like one that
hangs up without a word ("Server disconnected without sending a response"). ``watched_transport``
is httpx's own transport whose connections keep the first bytes each request's answer brought
(``FIRST_BYTES_KEPT`` of them, in the ``received()`` block around the request), so the two are
told apart and the not-HTTP sentence shows what did arrive.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import ssl
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpcore
import httpx

from walletpass_tui.text import printable

MAX_CHAIN = 32  # exceptions looked at in one chain: a cycle or a huge group cannot hold us
TIMED_OUT = "timed out"
FIRST_BYTES_KEPT = 64
FIRST_BYTES_SHOWN = 40


class Failure(StrEnum):
    UNTRUSTED_CERT = "untrusted_cert"
    EXPIRED_CERT = "expired_cert"
    WRONG_NAME_CERT = "wrong_name_cert"
    TLS = "tls"
    NO_SUCH_HOST = "no_such_host"
    REFUSED = "refused"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    NOT_HTTP = "not_http"
    CLOSED = "closed"
    CUT = "cut"
    RESET = "reset"
    OTHER = "other"

    @property
    def no_connection(self) -> bool:
        """No connection could be made (refused, no such host, no route, a TLS handshake that
        failed): nothing of the request reached the peer, and a retry now would fail alike."""
        return self.is_tls or self in (Failure.REFUSED, Failure.NO_SUCH_HOST, Failure.UNREACHABLE)

    @property
    def is_tls(self) -> bool:
        return self in (
            Failure.UNTRUSTED_CERT,
            Failure.EXPIRED_CERT,
            Failure.WRONG_NAME_CERT,
            Failure.TLS,
        )


@dataclass(frozen=True)
class NoAnswer:
    kind: Failure
    text: str  # one sentence, lower case first, no final period: it is quoted inside others

    def __str__(self) -> str:
        return self.text


def chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, breadth first: causes, contexts and group members."""
    seen: list[BaseException] = []
    queue: list[BaseException] = [exc]
    while queue and len(seen) < MAX_CHAIN:
        current = queue.pop(0)
        if any(current is s for s in seen):
            continue
        seen.append(current)
        if isinstance(current, BaseExceptionGroup):
            queue.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                queue.append(linked)
    return seen


def _host(url: str | httpx.URL) -> str:
    try:
        host = httpx.URL(str(url)).host
    except (httpx.InvalidURL, TypeError, ValueError):
        # no host to name in the message: it says so without one
        host = ""
    return printable(host or "the target", 200)


def _certificate(error: ssl.SSLCertVerificationError, host: str) -> NoAnswer:
    message = (getattr(error, "verify_message", None) or str(error)).lower()
    if "expired" in message:
        return NoAnswer(Failure.EXPIRED_CERT, f"the certificate of {host} has expired")
    if "hostname mismatch" in message or "ip address mismatch" in message:
        return NoAnswer(Failure.WRONG_NAME_CERT, f"the certificate of {host} is for another name")
    return NoAnswer(
        Failure.UNTRUSTED_CERT,
        f"the certificate of {host} is not trusted (self-signed or unknown CA)",
    )


def _tls(error: ssl.SSLError, host: str) -> NoAnswer:
    reason = (error.reason or "").lower().replace("_", " ")
    if reason in ("wrong version number", "record layer failure", "http request"):
        return NoAnswer(
            Failure.TLS,
            f"{host} did not answer in TLS (does it serve http://, not https://?)",
        )
    shown = printable(reason or str(error), 120)
    return NoAnswer(Failure.TLS, f"the TLS handshake with {host} failed ({shown})")


def why_no_answer(
    exc: BaseException, url: str | httpx.URL, timeout_s: float, received: bytes = b""
) -> NoAnswer:
    """The one sentence for ``exc``, raised while sending to ``url`` (``timeout_s``: the limit the
    caller set, named in the timeout sentence; ``received``: the first bytes the peer sent, when
    known)."""
    host = _host(url)
    found = chain(exc)
    for error in found:
        if isinstance(error, ssl.SSLCertVerificationError):
            return _certificate(error, host)
    for error in found:
        if isinstance(error, ssl.SSLError):
            return _tls(error, host)
    for error in found:
        if isinstance(error, socket.gaierror):
            if error.errno == socket.EAI_AGAIN:
                return NoAnswer(
                    Failure.NO_SUCH_HOST,
                    f"{host} could not be resolved (the name server did not answer: "
                    "check your network)",
                )
            return NoAnswer(Failure.NO_SUCH_HOST, f"{host} does not resolve")
    if any(isinstance(e, httpx.ConnectTimeout) for e in found):
        return NoAnswer(
            Failure.TIMEOUT,
            f"{TIMED_OUT}: {host} did not accept the connection within {timeout_s:g} s",
        )
    if any(isinstance(e, httpx.TimeoutException | TimeoutError) for e in found):
        return NoAnswer(Failure.TIMEOUT, f"{TIMED_OUT}: no answer within {timeout_s:g} s")
    # Several addresses tried (IPv6 and IPv4 of one name): a refusal says most.
    if any(
        isinstance(e, ConnectionRefusedError)
        or (isinstance(e, OSError) and e.errno == errno.ECONNREFUSED)
        for e in found
    ):
        return NoAnswer(Failure.REFUSED, "connection refused (is your app running?)")
    unreachable = (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL)
    if any(isinstance(e, OSError) and e.errno in unreachable for e in found):
        return NoAnswer(Failure.UNREACHABLE, f"{host} cannot be reached (no route to it)")
    if isinstance(exc, httpx.RemoteProtocolError):
        message = str(exc)
        if "without sending complete message body" in message:
            return NoAnswer(Failure.CUT, "the connection was closed in the middle of the answer")
        if message.startswith("Server disconnected without sending a response") and not received:
            return NoAnswer(Failure.CLOSED, "the connection was closed without an answer")
        shown = ""
        if received:
            text = received[:FIRST_BYTES_SHOWN].decode("ascii", "backslashreplace")
            more = "…" if len(received) > FIRST_BYTES_SHOWN else ""
            shown = f" ('{printable(text)}'{more})"
        return NoAnswer(Failure.NOT_HTTP, f"{host} answered with something that is not HTTP{shown}")
    if isinstance(exc, httpx.ConnectError) and str(url).lower().startswith("https:"):
        # The peer closed the connection during the handshake (anyio's EndOfStream).
        return NoAnswer(
            Failure.TLS,
            f"the TLS handshake with {host} failed (it closed the connection; does it serve "
            "https?)",
        )
    if isinstance(exc, httpx.WriteError) or any(isinstance(e, BrokenPipeError) for e in found):
        return NoAnswer(Failure.RESET, "the connection was closed while the request was being sent")
    if isinstance(exc, httpx.ReadError) or any(isinstance(e, ConnectionResetError) for e in found):
        return NoAnswer(Failure.RESET, "the connection was reset before the answer was complete")
    text = str(exc) or type(exc).__name__
    return NoAnswer(Failure.OTHER, printable(f"{type(exc).__name__}: {text}", 300))


TRUST_HOW = "pass --ca-bundle FILE with your CA, or --insecure"


def to_target(failure: NoAnswer) -> NoAnswer:
    """``failure`` as said of a request to the user's own app, whose certificates the command's
    flags can trust: an untrusted one says how to trust it, one for another name how to skip it."""
    if failure.kind is Failure.UNTRUSTED_CERT:
        return NoAnswer(failure.kind, f"{failure.text}: {TRUST_HOW}")
    if failure.kind is Failure.WRONG_NAME_CERT:
        return NoAnswer(
            failure.kind, f"{failure.text}: use the name it was made for, or pass --insecure"
        )
    return failure


# -- the first bytes of an answer ------------------------------------------------------------------

_RECEIVED: ContextVar[bytearray | None] = ContextVar("walletpass_received", default=None)


@contextlib.contextmanager
def received() -> Iterator[bytearray]:
    """The first bytes the peer sends while the block runs (through a ``watched_transport``)."""
    seen = bytearray()
    token = _RECEIVED.set(seen)
    try:
        yield seen
    finally:
        _RECEIVED.reset(token)


class _WatchedStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        seen = _RECEIVED.get()
        if data and seen is not None and len(seen) < FIRST_BYTES_KEPT:
            seen += data[: FIRST_BYTES_KEPT - len(seen)]
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        inner = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return _WatchedStream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _WatchedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _WatchedStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_unix_socket(path, timeout, socket_options)
        return _WatchedStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def watched_transport(**options: Any) -> httpx.AsyncHTTPTransport:
    """httpx's own transport (``options`` as for it) whose connections keep the first bytes of
    each answer for ``received()``. httpx has no public way to hand its connection pool a network
    backend; where the pool's attribute is not found (another httpx), the transport works as
    usual and a not-HTTP peer that hangs up reads as one that closed without an answer."""
    transport = httpx.AsyncHTTPTransport(**options)
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if pool is not None and isinstance(backend, httpcore.AsyncNetworkBackend):
        pool._network_backend = _WatchedBackend(backend)
    return transport
