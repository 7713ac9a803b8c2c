"""Whether a URL is the receiver running on a home, and what ``check`` adds to its requests there.

A check of this home's own receiver carries the check token (``models.CHECK_HEADER``, made from
the home's test secret by ``home_secret.check_token``), so the receiver keeps its copies as the
check's and never counts them as deliveries. ``check`` on the command line and "Check my app"
in the dashboard both ask here; no other URL is ever sent the token.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from walletpass_tui.config import Settings
from walletpass_tui.runtime import instance

__all__ = ["ANY", "ANY_V4", "ANY_V6", "check_token_for", "same_receiver"]

# A receiver bound to every address (not a bind here: a name to recognise) is reached on loopback.
ANY_V4 = "0.0.0.0"  # noqa: S104
ANY_V6 = "::"
ANY = (ANY_V4, ANY_V6)


def same_receiver(url: str, running: str) -> bool:
    """Whether ``url`` reaches the receiver whose address is ``running`` (loopback names, and
    an address bound to every interface, taken as one)."""
    a, b = urlsplit(url), urlsplit(running)
    try:
        same_port = (a.port or 80) == (b.port or 80)
    except ValueError:  # a port out of range: not ours
        return False
    return (
        same_port
        and a.path.rstrip("/") == b.path.rstrip("/")
        and _local(a.hostname) == _local(b.hostname)
    )


def check_token_for(settings: Settings, url: str) -> str | None:
    """The check token when ``url`` is the receiver running on this home; None elsewhere, and
    when no receiver runs there or its state cannot be read."""
    try:
        found = instance.find(settings.home)
    except instance.InstanceError:  # a run directory not this user's: not a receiver of ours
        return None
    running = found.record.url if isinstance(found, instance.Running) and found.record else None
    if running is None or not same_receiver(url, running):
        return None
    from walletpass_tui.webhooks import home_secret  # not needed to compare addresses

    secret = home_secret.load(settings.home)
    return home_secret.check_token(secret) if secret is not None else None


def _local(host: str | None) -> str | None:
    """Every name of this machine as one, other hosts as they are."""
    if host is None or host in ANY or host == "localhost":
        return "this machine"
    try:
        return "this machine" if ipaddress.ip_address(host).is_loopback else host
    except ValueError:  # a name, not an address
        return host
