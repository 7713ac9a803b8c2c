"""Endpoints a tunnel left behind: registered at a tunnel URL this home no longer has.

A free tunnel's URL changes at every start, and the service has no way to change an endpoint's
URL (only to create one; disabling or deleting is done in the workspace's settings). So when the
tunnel comes up somewhere new, the endpoints registered for an earlier tunnel of this home still
point at the old URL and every delivery to them fails. This module finds them, says so in one
sentence, and offers the command that registers the new URL.

An endpoint counts as a tunnel's when it was created with ``endpoints create --from-listener``
(``LocalEndpoint.tunnel``) or its host is one a tunnel hands out (``TUNNEL_DOMAINS``); disabled
ones, and ones already marked stale, are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from walletpass_tui.text import printable
from walletpass_tui.webhooks.endpoint_registry import LocalEndpoint

TUNNEL_DOMAINS = (
    "trycloudflare.com",
    "ngrok-free.app",
    "ngrok-free.dev",
    "ngrok.app",
    "ngrok.dev",
    "ngrok.io",
)


def _same_url(a: str, b: str) -> bool:
    def norm(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url.strip())
        return (parts.scheme.lower(), (parts.hostname or "").lower(), parts.path.rstrip("/"))

    return norm(a) == norm(b)


def is_tunnel_endpoint(endpoint: LocalEndpoint) -> bool:
    host = (urlsplit(endpoint.url).hostname or "").lower().rstrip(".")
    return endpoint.tunnel or any(host.endswith("." + domain) for domain in TUNNEL_DOMAINS)


def left_behind(endpoints: Iterable[LocalEndpoint], public_url: str) -> list[LocalEndpoint]:
    """The enabled tunnel endpoints, not marked stale, that point elsewhere than ``public_url``
    (the tunnel's URL with the receiver's path)."""
    return [
        e
        for e in endpoints
        if e.enabled and not e.stale and is_tunnel_endpoint(e) and not _same_url(e.url, public_url)
    ]


def registered_at(endpoints: Iterable[LocalEndpoint], public_url: str) -> list[LocalEndpoint]:
    """The enabled endpoints registered at ``public_url``."""
    return [e for e in endpoints if e.enabled and _same_url(e.url, public_url)]


def create_command(topics: Iterable[str], home_flag: str = "") -> str:
    """The command that registers the listener's URL for ``topics`` (both when none)."""
    flags = " ".join(
        f"--topic {t}" for t in (list(topics) or ["pass.activated", "pass.deactivated"])
    )
    return f"walletpass-tui endpoints create --from-listener {flags}{home_flag}"


def left_behind_notice(endpoint: LocalEndpoint, home_flag: str = "") -> str:
    """One sentence: where ``endpoint`` still points, and the command registering the new URL."""
    return (
        f"Endpoint {printable(endpoint.id, 40)} still points at {printable(endpoint.url, 120)}; "
        f"deliveries to it fail. Register this URL: {create_command(endpoint.topics, home_flag)}"
    )


def stale_note(replaced_by: str, url: str, when: str) -> str:
    """What is kept on an endpoint marked stale: why, and what to do in the workspace."""
    return (
        f"replaced by {replaced_by} ({url}) on {when}: its tunnel URL is gone; disable or delete "
        "it in your workspace's webhook settings"
    )
