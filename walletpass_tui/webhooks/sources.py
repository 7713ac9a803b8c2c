"""Which client addresses may post webhooks, and who that client is behind a tunnel.

The service posts from a published set of addresses (spec section 6, rule 7). Behind a tunnel
(ngrok, cloudflared) the direct peer is local, so the client is taken from ``X-Forwarded-For``, but
only when the direct peer is a trusted proxy (loopback by default): anyone else could write that
header. Every ``X-Forwarded-For`` line counts: several lines are one list, in order (RFC 9110
5.3), so a line the sender wrote first cannot stand in for the hop the proxy appended last. The
``Forwarded`` header is not read.

Every door asks through ``intake.py`` (``IntakeRequest.client``), which hands this rule every line
of the header: the local receiver and the relay's ingress settle on the same client.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from walletpass_tui.errors import WalletpassError

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

SERVICE_SOURCES: tuple[str, ...] = (
    "44.228.126.217/32",
    "50.112.21.217/32",
    "52.24.126.164/32",
    "54.148.139.208/32",
    "2600:1f24:64:8000::/56",
)
LOOPBACK: tuple[str, ...] = ("127.0.0.0/8", "::1/128")


class SourceError(WalletpassError, ValueError):
    """An allow-list entry that is not an address range; the message says which."""


def parse_networks(entries: Iterable[str]) -> list[IPNetwork]:
    """``service`` expands to the service's published addresses; anything else is a CIDR or address."""
    networks: list[IPNetwork] = []
    for entry in entries:
        entry = entry.strip()
        if entry == "service":
            networks.extend(ipaddress.ip_network(n) for n in SERVICE_SOURCES)
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise SourceError(
                f"{entry!r} is not an address or CIDR range (e.g. 203.0.113.0/24) nor 'service'."
            ) from None
    return networks


def _address(text: str | None) -> IPAddress | None:
    if not text:
        return None
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    try:
        addr = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:  # not an address: no source
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _within(addr: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    return any(addr.version == net.version and addr in net for net in networks)


@dataclass(frozen=True)
class SourcePolicy:
    allowed: tuple[IPNetwork, ...] | None = None  # None: every source is allowed
    trusted_proxies: tuple[IPNetwork, ...] = field(
        default_factory=lambda: tuple(ipaddress.ip_network(n) for n in LOOPBACK)
    )

    @classmethod
    def build(cls, allow: Iterable[str] = (), trust: Iterable[str] | None = None) -> SourcePolicy:
        allow = list(allow)
        allowed = tuple(parse_networks(allow)) if allow else None
        if trust is None:
            return cls(allowed=allowed)
        return cls(allowed=allowed, trusted_proxies=tuple(parse_networks(trust)))

    def client_address(
        self, peer: str | None, forwarded_for: str | Sequence[str] | None
    ) -> IPAddress | None:
        """The client: the direct peer, or from X-Forwarded-For when the peer is a trusted proxy.

        ``forwarded_for``: every line of the header in the order received (a single string is
        one line: pass them all, as ``intake`` does).
        X-Forwarded-For lists client, proxy1, proxy2...; walking it from the right, the first
        address that is not itself a trusted proxy is the client. Only the hops walked are
        parsed: what a sender wrote to the left of the client costs nothing to read.
        """
        direct = _address(peer)
        lines = [forwarded_for] if isinstance(forwarded_for, str) else list(forwarded_for or ())
        if direct is None or not lines or not _within(direct, self.trusted_proxies):
            return direct
        leftmost: IPAddress | None = None
        for line in reversed(lines):
            for part in reversed(line.split(",")):
                hop = _address(part)
                if hop is None:
                    return direct  # a malformed chain: trust nothing in it
                if not _within(hop, self.trusted_proxies):
                    return hop
                leftmost = hop
        return leftmost or direct

    def allows(self, client: IPAddress | None) -> bool:
        if self.allowed is None:
            return True
        return client is not None and _within(client, self.allowed)
