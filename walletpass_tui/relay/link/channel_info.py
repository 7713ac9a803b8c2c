"""Ask a relay about a channel: ``GET {relay}/channels/{slug}`` with the subscriber token answers
its name, ingress URL (what to register with the service) and subscribe URL.

``endpoints create --from-relay SUBSCRIBE_URL`` uses it, so nobody copies the ingress URL by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import aiohttp

from walletpass_tui.relay.link.subscriber import RelayAuthError, RelayClientError, RelayUrlError

MAX_ANSWER = 64 * 1024


@dataclass(frozen=True)
class ChannelInfo:
    name: str
    ingress_url: str
    subscribe_url: str
    verifies_at_edge: bool


def info_url_of(subscribe_url: str) -> str:
    """``…/channels/SLUG/events`` -> ``…/channels/SLUG`` (what the relay answers about it)."""
    base = subscribe_url.split("?", 1)[0].rstrip("/")
    if base.endswith("/events"):
        base = base[: -len("/events")]
    return base


async def fetch_channel(subscribe_url: str, token: str, timeout_s: float = 10.0) -> ChannelInfo:
    """The channel's URLs; raises RelayClientError (its message says what to do)."""
    url = info_url_of(subscribe_url)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
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
            raw = await response.content.read(MAX_ANSWER + 1)
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise RelayClientError(
            f"Cannot reach the relay at {url} ({str(exc) or type(exc).__name__}); check the URL "
            "and that 'walletpass-tui relay serve' runs."
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
        )
    except (ValueError, KeyError, TypeError):
        raise RelayClientError(f"{url} did not answer as a relay channel does.") from None
    return info
