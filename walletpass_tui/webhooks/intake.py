"""One intake for every door a delivery comes in by: a POST to the local receiver, a delivery
relayed to this laptop, a POST to the relay's ingress.

``IntakeRequest`` is the one form of a request: its method, path and target, its headers (in the
order received, looked up case-insensitively, every line of a repeated one), where it came from,
when, and its body read within bounds. Adapters make one from the receiver's ``http_server.Request``,
from an aiohttp request (the relay); a relayed delivery makes its own
(``relayed.RelayedRequest.intake_request``), its body in memory.

``Intake`` runs the checks every door shares, in this order, each raising one
``Rejected(reason)`` (``reasons.py``: the status and the words are the same at every door):

1. ``check_head``: the method (POST; 405 with ``Allow: POST``), then the source: with an
   allow-list, the client (``SourcePolicy.client_address``: the one rule) must be in it (403). A relayed
   delivery carries no socket of this door's: the relay's ingress applied its own allow-list to
   the socket it saw.
2. ``read``: the raw body within ``max_body`` (a declared length over it refused before a byte is
   read; never read past it: 413, the connection closed) and the read timeout (408), then the
   headers: every name and value must be UTF-8 text (400 "malformed header", naming the header),
   since the signed content is text and bytes that are not cannot be shown or relayed faithfully.
3. ``verify``: the Standard Webhooks headers present, the timestamp within the tolerance of when
   the request was received, a ``v1`` signature matching one of the door's keys (``verify.py``).

What a door does around them is its own: its route (the receiver's path, the relay's slug), the
relay's quota, which keys it verifies with, how it stores and answers. ``stored_webhook_id`` is the
one rule for the id kept with a request (at most ``MAX_ID_CHARS`` characters); the signature is
always over the id as sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from multidict import MultiMapping

from walletpass_tui.text import printable
from walletpass_tui.webhooks.reasons import Reason, Rejected
from walletpass_tui.webhooks.request_body import BodyRequest, BodyTooLarge, read_body
from walletpass_tui.webhooks.sources import IPAddress, SourcePolicy
from walletpass_tui.webhooks.verify import HEADER_ID, SigningKey, Verdict, verify

if TYPE_CHECKING:
    from aiohttp import web

    from walletpass_tui.webhooks.http_server import Request

__all__ = [
    "MAX_ID_CHARS",
    "Intake",
    "IntakeRequest",
    "IntakeRules",
    "forwarded_for_text",
    "is_utf8",
    "stored_webhook_id",
]

MAX_ID_CHARS = 200  # of a webhook-id, as stored; the signature covers the whole id as sent
# A declared Content-Length may be up to 2^64 - 1 (llhttp) or 19 digits; the history's integers
# stop at 2^63 - 1, so a larger declared size is kept as that (the detail says the one declared).
MAX_STORED_SIZE = 2**63 - 1
FORWARDED_FOR = "X-Forwarded-For"
ALLOW_POST = {"Allow": "POST"}
_UNKNOWN = object()  # the client, before it is worked out

Headers = MultiMapping[str]  # CIMultiDict / CIMultiDictProxy: ordered pairs, case-insensitive


class IntakeRules(Protocol):
    """What the checks need of a door's options (``ReceiverOptions``, ``IngressOptions``)."""

    max_body: int
    read_timeout_s: float
    tolerance_s: float
    sources: SourcePolicy


class IntakeRequest:
    """A request and its bounded body, whichever door it came in by.

    ``peer``: the address it came from (the socket's peer; for a relayed delivery, the client
    the relay settled on). ``direct``: this door saw the socket (False for a relayed delivery).
    ``received``: when it arrived (aware); ``started``: ``time.perf_counter()`` then, for how long
    handling it took (0 when nobody measures it).
    """

    __slots__ = (
        "_body",
        "_client",
        "_source",
        "direct",
        "headers",
        "method",
        "path",
        "peer",
        "received",
        "started",
        "target",
    )

    def __init__(
        self,
        method: str,
        path: str,
        target: str,
        headers: Headers,
        peer: str | None,
        received: datetime,
        source: BodyRequest | None = None,
        body: bytes | None = None,
        direct: bool = True,
        started: float = 0.0,
    ) -> None:
        self.method = method
        self.path = path  # for routing: percent-decoded, without the query
        self.target = target  # as sent, query included
        self.headers = headers
        self.peer = peer
        self.received = received
        self.direct = direct
        self.started = started
        self._source = source  # where the body arrives from, or None when it is in memory
        self._body = body
        self._client: object = _UNKNOWN

    # -- adapters --------------------------------------------------------------------------------

    @classmethod
    def from_http(cls, request: Request, received: datetime, started: float = 0.0) -> IntakeRequest:
        """The receiver's own HTTP server's request (its body still arriving)."""
        # Positional: this runs for every delivery the receiver gets.
        return cls(
            request.method,
            request.path,
            request.path_qs,
            request.headers,
            request.remote,
            received,
            request,
            None,
            True,
            started,
        )

    @classmethod
    def from_aiohttp(cls, request: web.BaseRequest, received: datetime) -> IntakeRequest:
        """An aiohttp request (the relay's ingress), its body still arriving."""
        return cls(
            method=request.method,
            path=request.path,
            target=request.path_qs,
            headers=request.headers,
            peer=request.remote,
            received=received,
            source=request,
        )

    # -- what is known of it -------------------------------------------------------------------

    def forwarded_for(self) -> list[str]:
        """Every X-Forwarded-For line, in the order received."""
        return self.headers.getall(FORWARDED_FOR, [])

    def client(self, sources: SourcePolicy) -> IPAddress | None:
        """Who sent it, by the door's ``sources`` (``SourcePolicy.client_address``: the peer, or
        behind a trusted proxy the last untrusted hop of every X-Forwarded-For line), worked out
        once."""
        if self._client is _UNKNOWN:
            self._client = sources.client_address(self.peer, self.forwarded_for())
        return self._client  # type: ignore[return-value]  # worked out: no longer _UNKNOWN

    def webhook_id(self) -> str | None:
        """The webhook-id as it is stored (``stored_webhook_id``)."""
        return stored_webhook_id(self.headers.get(HEADER_ID))

    async def read_body(self, limit: int, timeout_s: float) -> bytes:
        """The raw body, never read past ``limit`` (BodyTooLarge) and within ``timeout_s``
        (TimeoutError); a body already in memory is held to the same limit."""
        if self._body is not None:
            if len(self._body) > limit:
                raise BodyTooLarge(len(self._body), declared=True)
            return self._body
        assert self._source is not None
        self._body = await read_body(self._source, limit, timeout_s)
        return self._body


class Intake:
    """The checks every door runs, in order (see the module's docstring), under ``rules``."""

    __slots__ = ("rules",)

    def __init__(self, rules: IntakeRules) -> None:
        self.rules = rules

    def check_head(self, request: IntakeRequest) -> None:
        """Before the body: the method, then the source (worked out only for an allow-list)."""
        if request.method != "POST":
            raise Rejected(
                Reason.METHOD_NOT_ALLOWED,
                printable(request.method, 40),
                answer="webhooks are POSTed",
                headers=ALLOW_POST,
            )
        sources = self.rules.sources
        if sources.allowed is None or not request.direct:
            return
        client = request.client(sources)
        if not sources.allows(client):
            raise Rejected(
                Reason.SOURCE_NOT_ALLOWED, str(client), answer=f"{client} is not an allowed source"
            )

    async def read(self, request: IntakeRequest) -> bytes:
        """The raw body within the limits, then the headers' text; returns the body."""
        rules = self.rules
        limit = rules.max_body
        try:
            body = await request.read_body(limit, rules.read_timeout_s)
        except BodyTooLarge as exc:
            said = f"{exc.size} bytes > {limit}" if exc.declared else f"more than {limit} bytes"
            raise Rejected(
                Reason.BODY_TOO_LARGE,
                said,
                answer=f"the limit is {limit} bytes",
                close=True,
                record={"body_size": min(exc.size, MAX_STORED_SIZE)},
            ) from None
        except TimeoutError:
            raise Rejected(
                Reason.REQUEST_TIMED_OUT,
                f"body not received within {rules.read_timeout_s:g} s",
                answer="the body did not arrive in time",
                close=True,
            ) from None
        _check_text(request.headers, body)
        return body

    def verify(self, request: IntakeRequest, body: bytes, keys: Sequence[SigningKey]) -> Verdict:
        """The signature, checked against ``keys`` at the time the request was received."""
        return verify(
            request.headers, body, keys, now=request.received, tolerance_s=self.rules.tolerance_s
        )


def stored_webhook_id(value: str | None) -> str | None:
    """The webhook-id kept with a request: at most ``MAX_ID_CHARS`` characters, None if absent."""
    return value[:MAX_ID_CHARS] if value else None


def forwarded_for_text(lines: Sequence[str]) -> str | None:
    """Every X-Forwarded-For line as one list, as kept with a request."""
    return ", ".join(lines) if lines else None


def is_utf8(text: str) -> bool:
    """The HTTP servers (the receiver's, aiohttp's) and JSON hand over bytes that were not
    UTF-8 as lone surrogates."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not valid, the caller says so
        return False
    return True


def _check_text(headers: Headers, body: bytes) -> None:
    """Every header name and value is UTF-8 text (ASCII, nearly always: looked at first)."""
    if all(map(str.isascii, headers.values())) and all(map(str.isascii, headers.keys())):
        return
    for name, value in headers.items():
        if not is_utf8(name):
            what = "a header name"
        elif not is_utf8(value):
            what = printable(name, 64)
        else:
            continue
        raise Rejected(
            Reason.MALFORMED_HEADER,
            f"{what} is not UTF-8 text",
            record={"body": body, "body_size": len(body)},
        )
