"""Why following a relay stops, or one connection to it ends, in this project's words.

``RelayClientError`` (and its 401 and 404 kinds) stops following: its message says what to do.
``RelayRefused``: what the relay answered or sent breaks the rules; that connection is dropped
and a new one resumes after the last cursor handled. ``describe_failure``: a connection that
failed (refused, not resolved, TLS, silence, a broken stream), never the library's message alone.
Everything quoted from the relay or the network is untrusted and shown through ``printable``.
"""

from __future__ import annotations

import socket

import aiohttp

from walletpass_tui.errors import WalletpassError
from walletpass_tui.text import printable


class RelayClientError(WalletpassError):
    """The relay cannot be followed; the message says what to do. ``why``: the cause in the
    words a connection's line uses (``nothing answers at host:port (connection refused): is the
    relay running?``), when it is one of those."""

    def __init__(self, message: str, why: str | None = None) -> None:
        super().__init__(message)
        self.why = why


class RelayAuthError(RelayClientError):
    pass


class RelayUrlError(RelayClientError):
    pass


class RelayRefused(Exception):
    """What the relay sent breaks the rules: this connection is dropped and a new one resumes
    after the last cursor handled. Not raised out of ``run()``."""


def check_answer(response: aiohttp.ClientResponse, url: str) -> None:
    """Stop at a 401 (the token) or a 404 (the URL), with what to do; refuse an answer that is
    not the relay's stream: a redirect, another content type, a compressed body. Any other
    status is left to the caller (a connection that ends, tried again)."""
    status = response.status
    if status == 401:
        raise RelayAuthError(
            "The relay refused the token (401: wrong or revoked); get a new one with "
            "'walletpass-tui relay channel token NAME' on the relay and pass it with "
            "--relay-token."
        )
    if status == 404:
        raise RelayUrlError(
            f"{url} is not a relay subscribe URL (404); copy it from "
            "'walletpass-tui relay channel add'."
        )
    if 300 <= status < 400:
        where = printable(response.headers.get("Location", "nowhere"), 200)
        raise RelayRefused(
            f"the relay redirected to {where} ({status}); redirects are not followed (the token "
            "would go with them): give that URL with --relay if it is the relay's"
        )
    if status != 200:
        return
    kind = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if kind != "text/event-stream":
        raise RelayRefused(
            f"the relay answered 200 with {printable(kind or 'no content type', 60)!r}, not an "
            "event stream (a proxy or a captive portal in the way?)"
        )
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise RelayRefused(
            f"the relay compressed the stream ({printable(encoding, 40)}) though asked not to"
        )


def describe_failure(exc: BaseException, idle_timeout_s: float) -> str:
    """Why a connection to the relay failed, in this project's words (never the library's
    message alone)."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        where = _where(exc)
        cause = _first_line(exc.certificate_error)
        return f"the TLS certificate of {where} is not trusted ({cause})"
    if isinstance(exc, aiohttp.ClientSSLError):
        return f"TLS with {_where(exc)} failed ({_first_line(exc.os_error)})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _connect_failure(exc, idle_timeout_s)
    if isinstance(exc, TimeoutError):
        return f"nothing from the relay in {idle_timeout_s:g} s"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the relay closed the connection before answering"
    if isinstance(exc, aiohttp.ClientResponseError):  # its HTTP parser refused the answer
        said = (exc.message or type(exc).__name__).splitlines()[0]
        return f"the relay's answer is not HTTP that can be read ({printable(said, 200)})"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"the relay's stream broke off ({_first_line(exc)})"
    if isinstance(exc, ConnectionResetError | aiohttp.ClientOSError):
        return f"the connection to the relay was lost ({_first_line(exc)})"
    return f"cannot reach the relay ({_first_line(exc)})"


def _connect_failure(exc: aiohttp.ClientConnectorError, idle_timeout_s: float) -> str:
    where = _where(exc)
    cause = exc.os_error
    if isinstance(cause, socket.gaierror):
        return f"cannot find the relay's host {printable(str(exc.host), 100)} (its name does not resolve)"
    if isinstance(cause, ConnectionRefusedError):
        return f"nothing answers at {where} (connection refused): is the relay running?"
    if isinstance(cause, TimeoutError):
        return f"no answer from {where} in {idle_timeout_s:g} s"
    reason = cause.strerror if cause.strerror else _first_line(cause)
    return f"cannot reach the relay at {where} ({printable(str(reason), 120)})"


def _where(exc: aiohttp.ClientConnectorError) -> str:
    host = printable(str(exc.host), 100)
    return f"[{host}]:{exc.port}" if ":" in host else f"{host}:{exc.port}"


def _first_line(exc: BaseException) -> str:
    text = (str(exc) or type(exc).__name__).splitlines()[0]
    return printable(text, 200)
