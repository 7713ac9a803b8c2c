"""Ask a relay about a channel: ``GET {relay}/channels/{slug}`` with the subscriber token answers
its name, ingress URL (what to register with the service), subscribe URL and, from relays that
say it, when it was created (``created_at_ms``: relayed received times cannot precede it).

``endpoints create --from-relay SUBSCRIBE_URL`` uses it, so nobody copies the ingress URL by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import aiohttp

from walletpass_tui.relay.link.failures import (
    RelayAuthError,
    RelayClientError,
    RelayUrlError,
    describe_failure,
)

MAX_ANSWER = 64 * 1024


@dataclass(frozen=True)
class ChannelInfo:
    name: str
    ingress_url: str
    subscribe_url: str
    verifies_at_edge: bool
    created_at_ms: int | None = None  # None: the relay does not say (an older one)


def info_url_of(subscribe_url: str) -> str:
    """``…/channels/SLUG/events`` -> ``…/channels/SLUG`` (what the relay answers about it)."""
    base = subscribe_url.split("?", 1)[0].rstrip("/")
    if base.endswith("/events"):
        base = base[: -len("/events")]
    return base


async def fetch_channel(subscribe_url: str, token: str, timeout_s: float = 10.0) -> ChannelInfo:
    """The channel's URLs; raises RelayClientError (its message says what to do)."""
    url = info_url_of(subscribe_url)
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "Accept-Encoding": "identity",
    }
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with (
            # Not inflated: a small compressed answer could inflate past any bound before read.
            aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session,
            session.get(url, headers=headers, allow_redirects=False) as response,
        ):
            if response.status == 401:
                raise RelayAuthError(
                    "The relay refused the token (401: wrong or revoked); pass the channel's "
                    "subscriber token with WALLETPASS_RELAY_TOKEN or --relay-token."
                )
            if response.status == 404:
                raise RelayUrlError(
                    f"{url} is not a relay channel (404); copy the subscribe URL from "
                    "'walletpass-tui relay channel add'."
                )
            if response.status != 200:
                raise RelayClientError(f"The relay answered {response.status} for {url}.")
            if response.headers.get("Content-Encoding", "identity").lower() != "identity":
                raise RelayClientError(f"{url} answered compressed though asked not to.")
            raw = b""
            while len(raw) <= MAX_ANSWER:  # read() may answer with less than asked
                chunk = await response.content.read(MAX_ANSWER + 1 - len(raw))
                if not chunk:
                    break
                raw += chunk
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
        why = describe_failure(exc, timeout_s)
        raise RelayClientError(
            f"Cannot reach the relay at {url} ({why}); check the URL and that 'walletpass-tui "
            "relay serve' runs.",
            why,
        ) from None
    try:
        if len(raw) > MAX_ANSWER:
            raise ValueError("too long")
        data = json.loads(raw)
        info = ChannelInfo(
            name=str(data["name"]),
            ingress_url=str(data["ingress_url"]),
            subscribe_url=str(data["subscribe_url"]),
            verifies_at_edge=bool(data.get("verifies_at_edge", False)),
            created_at_ms=_time_ms(data.get("created_at_ms")),
        )
    except (ValueError, KeyError, TypeError, RecursionError):
        raise RelayClientError(f"{url} did not answer as a relay channel does.") from None
    return info


def _time_ms(value: object) -> int | None:
    """A time in milliseconds as the relay writes it; anything else reads as not said."""
    if type(value) is int and 0 <= value < 2**53:
        return value
    return None
