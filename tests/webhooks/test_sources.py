"""SourcePolicy: the service's published addresses, and X-Forwarded-For only from trusted proxies."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.webhooks.sources import SourceError, SourcePolicy, parse_networks

SERVICE_V4 = ("44.228.126.217", "50.112.21.217", "52.24.126.164", "54.148.139.208")
INSIDE_V6 = (
    "2600:1f24:64:8000::1",
    "2600:1f24:64:80ff:ffff:ffff:ffff:ffff",
    "2600:1f24:64:8042::7",
)
OUTSIDE_V6 = (
    "2600:1f24:64:8100::",
    "2600:1f24:64:7fff:ffff:ffff:ffff:ffff",
    "2600:1f24:65:8000::1",
)


def ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


@pytest.fixture
def service() -> SourcePolicy:
    return SourcePolicy.build(["service"])


@pytest.mark.parametrize("address", SERVICE_V4 + INSIDE_V6)
def test_service_allow_list_accepts_the_published_addresses(
    service: SourcePolicy, address: str
) -> None:
    assert service.allows(ip(address))


@pytest.mark.parametrize(
    "address",
    (
        "44.228.126.216",
        "44.228.126.218",
        "50.112.21.218",
        "54.148.139.209",
        "127.0.0.1",
        "10.0.0.1",
        "::1",
        *OUTSIDE_V6,
    ),
)
def test_service_allow_list_refuses_everything_else(service: SourcePolicy, address: str) -> None:
    assert not service.allows(ip(address))


def test_unknown_client_is_refused_by_an_allow_list_and_allowed_without_one(
    service: SourcePolicy,
) -> None:
    assert not service.allows(None)
    assert SourcePolicy().allows(None)
    assert SourcePolicy().allows(ip("203.0.113.9"))


def test_ipv4_mapped_ipv6_peer_counts_as_its_ipv4_address(service: SourcePolicy) -> None:
    client = service.client_address("::ffff:44.228.126.217", None)
    assert client == ip("44.228.126.217")
    assert service.allows(client)


def test_parse_networks_mixes_service_cidrs_and_single_addresses() -> None:
    nets = parse_networks(["service", "203.0.113.0/24", " 198.51.100.7 ", "2001:db8::/32"])
    assert ipaddress.ip_network("203.0.113.0/24") in nets
    assert ipaddress.ip_network("198.51.100.7/32") in nets
    assert ipaddress.ip_network("2600:1f24:64:8000::/56") in nets
    assert len(nets) == 5 + 3


@pytest.mark.parametrize("bad", ["", "nope", "300.1.1.1", "10.0.0.0/40", "service,10.0.0.1"])
def test_parse_networks_explains_a_bad_entry(bad: str) -> None:
    with pytest.raises(SourceError, match="not an address or CIDR"):
        parse_networks([bad])


def test_direct_peer_is_the_client_without_forwarded_for() -> None:
    policy = SourcePolicy()
    assert policy.client_address("203.0.113.5", None) == ip("203.0.113.5")
    assert policy.client_address(None, "1.2.3.4") is None


def test_forwarded_for_is_believed_from_loopback_by_default() -> None:
    policy = SourcePolicy()
    assert policy.client_address("127.0.0.1", "44.228.126.217") == ip("44.228.126.217")
    assert policy.client_address("::1", "50.112.21.217") == ip("50.112.21.217")


def test_forwarded_for_is_ignored_from_an_untrusted_peer() -> None:
    policy = SourcePolicy()
    assert policy.client_address("203.0.113.5", "44.228.126.217") == ip("203.0.113.5")


def test_forwarded_for_walks_from_the_right_past_trusted_proxies() -> None:
    policy = SourcePolicy.build(trust=["127.0.0.0/8", "10.0.0.0/8"])
    # A client can prepend anything; the rightmost address not a trusted proxy is who connected.
    assert policy.client_address("127.0.0.1", "44.228.126.217, 198.51.100.9, 10.1.2.3") == ip(
        "198.51.100.9"
    )
    # Every hop trusted: the leftmost is the client.
    assert policy.client_address("127.0.0.1", "10.0.0.7, 10.0.0.8") == ip("10.0.0.7")


def test_malformed_forwarded_for_is_not_trusted() -> None:
    policy = SourcePolicy()
    assert policy.client_address("127.0.0.1", "unknown, 44.228.126.217") == ip("44.228.126.217")
    assert policy.client_address("127.0.0.1", "44.228.126.217, garbage") == ip("127.0.0.1")
    assert policy.client_address("127.0.0.1", "[2600:1f24:64:8000::5]") == ip(
        "2600:1f24:64:8000::5"
    )


def test_trusting_nobody_ignores_every_forwarded_for() -> None:
    policy = SourcePolicy.build(["service"], trust=[])
    client = policy.client_address("127.0.0.1", "44.228.126.217")
    assert client == ip("127.0.0.1")
    assert not policy.allows(client)


def test_trust_proxy_elsewhere_makes_a_loopback_forwarded_for_a_spoof() -> None:
    policy = SourcePolicy.build(["service"], trust=["192.0.2.1/32"])
    assert policy.client_address("127.0.0.1", "44.228.126.217") == ip("127.0.0.1")
    assert policy.client_address("192.0.2.1", "44.228.126.217") == ip("44.228.126.217")


# -- several X-Forwarded-For lines are one list ----------------------------------------------------

_HOP = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.sampled_from(["127.0.0.1", "::1", "44.228.126.217", "198.51.100.7", "garbage", ""]),
)


def test_every_forwarded_for_line_counts_so_a_spoofed_first_line_cannot_pass(
    service: SourcePolicy,
) -> None:
    """The sender writes a service address; the tunnel appends the real client on a second line."""
    lines = ["44.228.126.217", "198.51.100.7"]
    client = service.client_address("127.0.0.1", lines)
    assert client == ip("198.51.100.7") and not service.allows(client)
    assert service.client_address("127.0.0.1", ["44.228.126.217"]) == ip("44.228.126.217")


@given(lines=st.lists(st.lists(_HOP, min_size=1, max_size=3), min_size=1, max_size=4))
def test_header_lines_mean_the_same_as_one_joined_header(lines: list[list[str]]) -> None:
    policy = SourcePolicy.build(["service"])
    texts = [", ".join(hops) for hops in lines]
    assert policy.client_address("127.0.0.1", texts) == policy.client_address(
        "127.0.0.1", ", ".join(texts)
    )


@given(
    earlier=st.lists(st.lists(_HOP, min_size=1, max_size=3), max_size=3),
    last=st.ip_addresses(v=4).filter(lambda a: not a.is_loopback),
)
def test_the_last_untrusted_hop_is_the_client_whatever_came_before(
    earlier: list[list[str]], last: ipaddress.IPv4Address
) -> None:
    policy = SourcePolicy.build(["service"])
    lines = [*(", ".join(hops) for hops in earlier), str(last)]
    assert policy.client_address("127.0.0.1", lines) == last
