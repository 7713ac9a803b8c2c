"""The same hostile requests through all three doors a delivery comes in by, and the same answers.

* the local receiver: raw bytes over a socket to a real ``DeliveryRuntime`` on 127.0.0.1;
* the relay's ingress: the same bytes to a real ``RelayServer`` in this event loop;
* a relayed delivery: the same request as the relay writes it on the wire (``delivery_data``),
  read back as a subscriber reads it and handed to the runtime where the relay link hands it
  over (``feed.relayed_request`` then ``runtime.accept``).

Each door must give the same status and reason: the receiver's and the relayed delivery's as
stored in the history, the relay's in its answer, which must read as the receiver's does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from walletpass_tui.config import Settings
from walletpass_tui.relay.events import RelayedDelivery, delivery_data
from walletpass_tui.relay.link.feed import relayed_request
from walletpass_tui.relay.server.channels import ingress_url
from walletpass_tui.relay.server.ingress import IngressOptions
from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
from walletpass_tui.relay.server.storage.sqlite.database import RelayDB
from walletpass_tui.relay.server.storage.target import database_path
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.reasons import Reason
from walletpass_tui.webhooks.sources import SourcePolicy
from walletpass_tui.webhooks.verify import SigningKey

SECRET = "whsec_" + base64.b64encode(b"d" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"e" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_door"}}'
MAX_BODY = 4096
RELAY_URL = "http://127.0.0.1:9/channels/doors/events"
# Loopback may post (the tests connect from it) and so may 203.0.113.0/24; loopback is also the
# trusted proxy whose X-Forwarded-For is believed.
ALLOWED = ["127.0.0.0/8", "203.0.113.0/24"]

Header = tuple[bytes, bytes]


def signature(secret: str, msg_id: bytes, ts: int, body: bytes) -> bytes:
    """Spec section 5, by hand (independent of verify.py)."""
    key = base64.b64decode(secret.split("_", 1)[1])
    digest = hmac.new(key, msg_id + b".%d." % ts + body, hashlib.sha256).digest()
    return b"v1," + base64.b64encode(digest)


def signed(
    msg_id: bytes | None = None, *, body: bytes = BODY, ts: int | None = None, secret: str = SECRET
) -> list[Header]:
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}".encode()
    ts = int(time.time()) if ts is None else ts
    return [
        (b"webhook-id", msg_id),
        (b"webhook-timestamp", str(ts).encode()),
        (b"webhook-signature", signature(secret, msg_id, ts, body)),
        (b"content-type", b"application/json"),
    ]


def without(name: bytes, headers: list[Header]) -> list[Header]:
    return [(k, v) for k, v in headers if k != name]


def replaced(name: bytes, value: bytes, headers: list[Header]) -> list[Header]:
    return [(k, value if k == name else v) for k, v in headers]


@dataclass(frozen=True)
class Request:
    method: str
    headers: list[Header]
    body: bytes
    sent: bytes | None = None  # the body bytes actually written (None: all of it)


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], Request]  # built when sent: timestamps are now's
    status: int
    reason: Reason
    # Why the relayed door cannot see this case (None: it can).
    not_relayed: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


NO_SOCKET = (
    "a relayed delivery brings no socket of this door's: the relay's ingress applied its own "
    "allow-list to the peer and X-Forwarded-For it saw (the relay row of this case proves it)"
)
IN_MEMORY = "a relayed delivery's body is in memory: there is nothing to wait for"


def _post(headers: list[Header], body: bytes = BODY, **kw: Any) -> Request:
    return Request("POST", headers, body, **kw)


def _too_large() -> Request:
    body = b"x" * (MAX_BODY + 1)
    # Both HTTP doors refuse it on its declared length before reading a byte: none is sent.
    return _post(signed(body=body), body, sent=b"")


CASES = [
    Case("valid", lambda: _post(signed()), 200, Reason.OK),
    Case(
        "missing-webhook-id",
        lambda: _post(without(b"webhook-id", signed())),
        400,
        Reason.MISSING_HEADERS,
    ),
    Case(
        "webhook-id-not-utf8",
        lambda: _post(signed(b"msg_\xff\xfe")),
        400,
        Reason.MALFORMED_HEADER,
    ),
    Case("201-char-webhook-id", lambda: _post(signed(b"m" * 201)), 200, Reason.OK),
    Case(
        "missing-signature",
        lambda: _post(without(b"webhook-signature", signed())),
        400,
        Reason.MISSING_HEADERS,
    ),
    Case(
        "malformed-timestamp",
        lambda: _post(replaced(b"webhook-timestamp", b"soon", signed())),
        400,
        Reason.MALFORMED_TIMESTAMP,
    ),
    Case(
        "stale-timestamp",
        lambda: _post(signed(ts=int(time.time()) - 3600)),
        401,
        Reason.TIMESTAMP_TOO_OLD,
    ),
    Case(
        "wrong-signature",
        lambda: _post(signed(secret=OTHER)),
        401,
        Reason.NO_MATCH,
    ),
    Case("body-over-max-body", _too_large, 413, Reason.BODY_TOO_LARGE),
    Case("get", lambda: Request("GET", signed(body=b""), b""), 405, Reason.METHOD_NOT_ALLOWED),
    Case(
        # The sender wrote an allowed address; the proxy (loopback, trusted) appended the real
        # client on a line of its own. Every line counts: the client is the proxy's hop.
        "disallowed-source-behind-a-proxy",
        lambda: _post(
            [
                *signed(),
                (b"X-Forwarded-For", b"203.0.113.9"),
                (b"X-Forwarded-For", b"198.51.100.7"),
            ]
        ),
        403,
        Reason.SOURCE_NOT_ALLOWED,
        not_relayed=NO_SOCKET,
    ),
    Case(
        "header-not-utf8",
        lambda: _post([*signed(), (b"X-Odd", b"\xff\xfe")]),
        400,
        Reason.MALFORMED_HEADER,
    ),
    Case(  # UTF-8 text that is not ASCII is text: accepted
        "header-utf8-not-ascii",
        lambda: _post([*signed(), (b"X-Name", "café ✓".encode())]),
        200,
        Reason.OK,
    ),
    Case(
        "stalled-body",
        lambda: _post(signed(), sent=BODY[:10]),
        408,
        Reason.REQUEST_TIMED_OUT,
        not_relayed=IN_MEMORY,
        options={"read_timeout_s": 0.5},
    ),
]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str


def raw_request(request: Request, path: str) -> bytes:
    head = b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (request.method.encode(), path.encode())
    head += b"".join(b"%s: %s\r\n" % pair for pair in request.headers)
    head += b"Content-Length: %d\r\n\r\n" % len(request.body)
    return head + (request.body if request.sent is None else request.sent)


async def exchange(port: int, data: bytes) -> Answer:
    """Write ``data`` and read one answer (its head, and its body by Content-Length)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(30):  # "did not hang"
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
        return Answer(int(lines[0].split()[1]), headers, body.decode())
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


@dataclass
class Doors:
    runtime: DeliveryRuntime
    relay: RelayServer
    ingress_path: str

    async def receiver(self, request: Request) -> Answer:
        assert self.runtime.bound is not None
        return await exchange(self.runtime.bound[1], raw_request(request, "/webhooks"))

    async def relay_ingress(self, request: Request) -> Answer:
        assert self.relay.bound is not None
        return await exchange(self.relay.bound[1], raw_request(request, self.ingress_path))

    async def relayed(self, request: Request) -> Attempt:
        """As the relay writes it on the wire, as a subscriber reads it, as the link hands it
        over. Header bytes that are not UTF-8 travel as the HTTP servers hand them over: lone
        surrogates, which JSON carries."""
        headers = [
            (k.decode("latin-1"), v.decode("utf-8", "surrogateescape")) for k, v in request.headers
        ]
        data = delivery_data(
            received_at_ms=int(time.time() * 1000),
            method=request.method,
            path="/in/doors",
            headers=headers,
            body=request.body,
            source="127.0.0.1",
            forwarded_for=None,
            client="127.0.0.1",
            channel="doors",
        )
        delivery = RelayedDelivery.parse(1, data)
        return await self.runtime.accept(relayed_request(delivery, RELAY_URL))

    async def stored(self) -> Attempt:
        """The one attempt the receiver stored (not one that came through a relay)."""
        rows = await self.runtime.store.log_page(limit=100)
        found = [await self.runtime.store.attempt(r.id) for r in rows]
        attempts = [a for a in found if a is not None and a.relay_url is None]
        assert len(attempts) == 1, attempts
        return attempts[0]


@contextlib.asynccontextmanager
async def doors(
    tmp_path: Path, sources: SourcePolicy | None = None, **options: Any
) -> AsyncIterator[Doors]:
    """The three doors under the same rules: the same secret, body limit, tolerance, allow-list
    and trusted proxies (loopback)."""
    sources = sources or SourcePolicy.build(ALLOWED)
    receiver = ReceiverOptions(
        host="127.0.0.1",
        port=0,
        max_body=MAX_BODY,
        secrets=[SigningKey.from_secret(SECRET)],
        sources=sources,
        **options,
    )
    runtime = DeliveryRuntime(
        Settings(home=tmp_path / "laptop", receiver_port=0), DeliverySetup(options=receiver)
    )
    relay_home = tmp_path / "relay"
    db = RelayDB(database_path(relay_home))
    try:
        issued = db.add_channel("doors", secret=SECRET)
    finally:
        db.close()
    relay = RelayServer(
        RelayOptions(
            home=relay_home,
            host="127.0.0.1",
            port=0,
            ingress=IngressOptions(max_body=MAX_BODY, sources=sources, **options),
        )
    )
    async with runtime:
        await runtime.serve()
        await relay.start()
        try:
            path = ingress_url(relay.url, issued.channel.slug).removeprefix(relay.url)
            yield Doors(runtime, relay, path)
        finally:
            await relay.stop()


def _same_words(text: str) -> str:
    """An answer's words, with the seconds a timestamp is off (the doors' clocks tick) masked."""
    return re.sub(r"\d+ s old", "N s old", text)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_the_same_hostile_request_gets_the_same_answer_at_every_door(
    tmp_path: Path, case: Case
) -> None:
    expected = (case.status, case.reason.value)
    request = case.make()
    async with doors(tmp_path, **case.options) as at:
        answer = await at.receiver(request)
        stored = await at.stored()
        relay_answer = await at.relay_ingress(request)
        relayed = None if case.not_relayed else await at.relayed(request)

    # The local receiver: answered, and stored with the reason.
    assert (answer.status, stored.status, stored.reason) == (case.status, *expected)
    # The relay's ingress: the same status, and the same words as the receiver's answer.
    assert relay_answer.status == case.status, relay_answer.text
    assert _same_words(relay_answer.text) == _same_words(answer.text)
    assert relay_answer.headers.get("allow") == answer.headers.get("allow")
    if case.status >= 400:
        assert answer.text.startswith(f"{case.reason.phrase}: ")
    # A relayed delivery: stored with the same status and reason.
    if relayed is not None:
        assert (relayed.status, relayed.reason) == expected, relayed.detail
        assert relayed.relay_url == RELAY_URL
    if case.name == "201-char-webhook-id":  # verified over the whole id, kept cut to 200
        assert stored.webhook_id == "m" * 200
        assert relayed is not None and relayed.webhook_id == "m" * 200


# -- the client-address rule: the same client at the receiver and at the relay ---------------

XFF_INPUTS: list[tuple[list[bytes], str]] = [
    ([], "127.0.0.1"),  # no header: the peer
    ([b"198.51.100.7"], "198.51.100.7"),
    ([b"203.0.113.9", b"198.51.100.7"], "198.51.100.7"),  # a sender's line, then the proxy's
    ([b"203.0.113.9, 10.0.0.1", b"198.51.100.7"], "198.51.100.7"),
    ([b"198.51.100.7, 127.0.0.1"], "198.51.100.7"),  # a trusted hop is passed over
    ([b"203.0.113.9", b"garbage"], "127.0.0.1"),  # a malformed chain: trust none of it
    ([b"::1", b"127.0.0.1"], "::1"),  # every hop trusted: the first one
    ([b" 203.0.113.9 ", b"[2001:db8::2]"], "2001:db8::2"),
]


async def test_x_forwarded_for_gives_the_same_client_at_the_receiver_and_the_relay(
    tmp_path: Path,
) -> None:
    """Every X-Forwarded-For line counts at both doors: the client each settles on (named in its
    403, under an allow-list none of them is in) is the same, and the one the rule gives."""
    async with doors(tmp_path, SourcePolicy.build(["192.0.2.0/24"])) as at:
        for lines, client in XFF_INPUTS:
            request = _post([*signed(), *((b"X-Forwarded-For", line) for line in lines)])
            answer = await at.receiver(request)
            relay_answer = await at.relay_ingress(request)
            said = f"Forbidden: {client} is not an allowed source\n"
            assert (answer.status, answer.text) == (403, said), lines
            assert (relay_answer.status, relay_answer.text) == (403, said), lines
