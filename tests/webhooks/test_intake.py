"""The intake's own rules, where the three doors' test does not reach: a relayed delivery's source
is the relay's to check, header names, bodies already in memory, every X-Forwarded-For line kept
on the relay's wire and given to the laptop, and what working out the client costs."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict

from walletpass_tui.config import Settings
from walletpass_tui.relay.events import RelayedDelivery
from walletpass_tui.relay.link.subscriber import RelaySubscriber
from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.ingress import IngressOptions
from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
from walletpass_tui.relay.server.storage.sqlite.database import RelayDB
from walletpass_tui.relay.server.storage.target import database_path
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks import sources
from walletpass_tui.webhooks.intake import Intake, IntakeRequest
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import VERIFIED
from walletpass_tui.webhooks.reasons import Reason, Rejected
from walletpass_tui.webhooks.relayed import RelayedRequest
from walletpass_tui.webhooks.sources import SourcePolicy
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"n" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_in"}}'


def _relayed(body: bytes = BODY, source: str = "198.51.100.7") -> RelayedRequest:
    now = datetime.now(UTC)
    headers = sign(SECRET, "msg_intake", body, now)
    return RelayedRequest.from_relay(
        relay_url="http://127.0.0.1:9/channels/x/events",
        cursor=1,
        received_at_ms=int(now.timestamp() * 1000),
        method="POST",
        path="/in/x",
        headers=list(headers.items()),
        body=body,
        source=source,
    )


async def test_a_relayed_delivery_is_not_refused_by_the_laptops_allow_list(
    tmp_path: Path,
) -> None:
    """The relay checked the source of the socket it saw against its own --allow-source; the
    laptop never sees that socket, so its own allow-list (for direct posts) does not apply."""
    options = ReceiverOptions(
        host="127.0.0.1",
        port=0,
        secrets=[SigningKey.from_secret(SECRET)],
        sources=SourcePolicy.build(["service"]),
    )
    runtime = DeliveryRuntime(
        Settings(home=tmp_path / "home", receiver_port=0), DeliverySetup(options=options)
    )
    async with runtime:
        stored = await runtime.accept(_relayed(source="198.51.100.7"))
    assert (stored.verdict, stored.status) == (VERIFIED, 200), stored.detail
    assert stored.remote_addr == "198.51.100.7"


class _Rules:
    max_body = 64
    read_timeout_s = 1.0
    tolerance_s = 300.0
    sources = SourcePolicy()


def _request(headers: list[tuple[str, str]], body: bytes = b"{}") -> IntakeRequest:
    return IntakeRequest(
        method="POST",
        path="/webhooks",
        target="/webhooks",
        headers=CIMultiDict(headers),
        peer="127.0.0.1",
        received=datetime.now(UTC),
        body=body,
    )


async def test_a_header_is_named_when_its_value_is_not_utf8_and_its_name_never_shown_raw() -> None:
    intake = Intake(_Rules())
    with pytest.raises(Rejected) as value:
        await intake.read(_request([("Host", "x"), ("X-Odd", "a\udcff")]))
    assert (value.value.reason, value.value.detail) == (
        Reason.MALFORMED_HEADER,
        "X-Odd is not UTF-8 text",
    )
    assert value.value.record["body"] == b"{}"  # the body is kept with the rejection
    with pytest.raises(Rejected) as name:
        await intake.read(_request([("X-\udcff", "v")]))
    assert name.value.detail == "a header name is not UTF-8 text"


async def test_a_body_in_memory_is_held_to_the_same_limit() -> None:
    intake = Intake(_Rules())
    assert await intake.read(_request([], b"x" * 64)) == b"x" * 64
    with pytest.raises(Rejected) as over:
        await intake.read(_request([], b"x" * 65))
    assert (over.value.reason, over.value.status) == (Reason.BODY_TOO_LARGE, 413)
    assert over.value.answer_text() == "Payload too large: the limit is 64 bytes\n"


async def test_the_relay_keeps_every_forwarded_for_line_and_the_client_they_give(
    tmp_path: Path,
) -> None:
    """What the relay relays says who the client was by the one rule, and every line the proxy
    and the sender wrote, as the local receiver keeps them."""
    home = tmp_path / "relay"
    db = RelayDB(database_path(home))
    try:
        issued = db.add_channel("lines", secret=SECRET)
    finally:
        db.close()
    relay = RelayServer(
        RelayOptions(
            home=home,
            host="127.0.0.1",
            port=0,
            ingress=IngressOptions(sources=SourcePolicy.build(["203.0.113.0/24"])),
        )
    )
    await relay.start()
    got: list[RelayedDelivery] = []
    arrived = asyncio.Event()

    async def on_delivery(delivery: RelayedDelivery) -> None:
        got.append(delivery)
        arrived.set()

    try:
        headers = sign(SECRET, "msg_lines", BODY, datetime.now(UTC))
        lines = [("X-Forwarded-For", "198.51.100.7"), ("X-Forwarded-For", "203.0.113.9")]
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                ingress_url(relay.url, issued.channel.slug),
                data=BODY,
                headers=[*headers.items(), *lines],
            ) as answer,
        ):
            assert answer.status == 200, await answer.text()
        subscriber = RelaySubscriber(
            subscribe_url(relay.url, issued.channel.slug),
            issued.token,
            on_delivery=on_delivery,
            backoff_initial_s=0.05,
        )
        task = asyncio.create_task(subscriber.run())
        try:
            async with asyncio.timeout(30):  # "did not hang"
                await arrived.wait()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    finally:
        await relay.stop()
    delivery = got[0]
    assert delivery.forwarded_for == "198.51.100.7, 203.0.113.9"
    assert delivery.client == "203.0.113.9"  # the proxy's (last) line: allowed
    assert delivery.source == "127.0.0.1"


# -- the client-address rule's cost is bounded by the hops it walks ---------------------------


def test_what_a_sender_wrote_left_of_the_client_is_not_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind a tunnel anyone can send 64 KiB of X-Forwarded-For; the proxy appends the real
    client last. Walking from the right stops there: the thousands of hops to its left are never
    parsed (before, each was, on the event loop, for every request)."""
    parsed: list[str | None] = []
    real = sources._address

    def counting(text: str | None) -> object:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(sources, "_address", counting)
    written = ", ".join(["127.0.0.1"] * 1600)  # about 16 KiB a line, loopback: trusted hops
    lines = [written] * 4 + ["198.51.100.7"]
    policy = SourcePolicy.build(["service"])
    assert policy.client_address("127.0.0.1", lines) == ipaddress.ip_address("198.51.100.7")
    assert len(parsed) == 2  # the peer, and the proxy's hop


_HOP = st.sampled_from(["127.0.0.1", "::1", "10.0.0.3", "198.51.100.7", "203.0.113.9", "junk", ""])


def _eager(policy: SourcePolicy, peer: str, lines: list[str]) -> object:
    """The rule as first written: every hop parsed, then walked from the right."""
    direct = sources._address(peer)
    if direct is None or not lines or not sources._within(direct, policy.trusted_proxies):
        return direct
    hops = [sources._address(part) for line in lines for part in line.split(",")]
    for hop in reversed(hops):
        if hop is None:
            return direct
        if not sources._within(hop, policy.trusted_proxies):
            return hop
    return hops[0] or direct


@given(
    lines=st.lists(st.lists(_HOP, min_size=1, max_size=4).map(", ".join), max_size=4),
    peer=st.sampled_from(["127.0.0.1", "10.0.0.1", "198.51.100.1"]),
)
def test_walking_only_what_it_needs_gives_the_client_every_hop_parsed_would(
    lines: list[str], peer: str
) -> None:
    policy = SourcePolicy.build(["service"], trust=["127.0.0.0/8", "::1", "10.0.0.0/8"])
    assert policy.client_address(peer, lines) == _eager(policy, peer, lines)
