"""The one rule for a URL a tunnel hands us: ``https://`` and a plain DNS host name, nothing else.

Whatever gives it (the ngrok agent's local API, the cloudflared program's output, the ngrok
SDK) is untrusted: any local user can bind the agent's port, and a program on PATH may not be
the one the user meant. Only a well-formed ``https://`` URL with a plain DNS host name is taken:
no IP address, port, user, path, query or fragment, nothing that is not printable ASCII, at most
``MAX_URL`` characters. The receiver's path is added by the caller.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from walletpass_tui.api.urls import UrlError, check_url

MAX_URL = 300


def plain_https_url(value: Any) -> str | None:
    """``value`` without a trailing slash when it is ``https://<dns name>``, else None."""
    if not isinstance(value, str) or not value.isascii() or len(value) > MAX_URL:
        return None
    try:
        url = check_url(value, schemes=("https",))
        parts = urlsplit(url)
        port = parts.port
    except (UrlError, ValueError):  # not an https tunnel URL: skipped
        return None
    host = parts.hostname or ""
    if port is not None or parts.query or parts.path not in ("", "/") or "." not in host:
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:  # a name, not an address: kept
        return url.rstrip("/")
    return None  # an address, not a tunnel's host name
