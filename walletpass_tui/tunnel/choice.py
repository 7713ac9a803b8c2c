"""Which tunnel the settings ask for (``--tunnel``, ``[tunnel]`` in config.toml), and where it
forwards to.

::

    [tunnel]
    provider = "cloudflared"              # or "ngrok"; --tunnel overrides, --tunnel none turns off
    name = "hooks"                        # cloudflared only: a named tunnel (else a quick one)
    url = "https://hooks.example.com"     # the named tunnel's address, or your ngrok domain
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from walletpass_tui.config import Settings
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.text import printable
from walletpass_tui.tunnel.cloudflared import Cloudflared, CloudflaredOptions
from walletpass_tui.tunnel.ngrok_sdk import Ngrok
from walletpass_tui.tunnel.provider import Provider
from walletpass_tui.tunnel.public_url import plain_https_url


def tunnel_provider(settings: Settings) -> Provider | None:
    """The provider ``settings.tunnel`` names (None: no tunnel); ConfigError, one sentence,
    when its other settings do not fit it."""
    if not settings.tunnel:
        return None
    url = settings.tunnel_url
    if url is not None and plain_https_url(url) is None:
        raise ConfigError(
            f"The setting tunnel_url (from {settings.source_of('tunnel_url')}) must be "
            f"https://<host name> and nothing more, not {printable(url, 80)!r}."
        )
    if settings.tunnel == "ngrok":
        if settings.tunnel_name:
            raise ConfigError(
                "[tunnel] name is a cloudflared named tunnel; with ngrok give your domain as "
                "[tunnel] url."
            )
        return Ngrok(urlsplit(url).hostname if url else None)
    if settings.tunnel_name and not url:
        raise ConfigError(
            "The cloudflared tunnel named in [tunnel] name needs its address as [tunnel] url "
            "(https://<the host name routed to it>): cloudflared does not print it."
        )
    if url and not settings.tunnel_name:
        raise ConfigError(
            "[tunnel] url with cloudflared is a named tunnel's address: give its name as "
            "[tunnel] name too, or remove the url for a quick tunnel."
        )
    return Cloudflared(CloudflaredOptions(name=settings.tunnel_name, url=url))


def local_url(host: str, port: int) -> str:
    """The address a tunnel forwards to: the receiver's, loopback when it listens on every
    interface."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:  # a name (localhost): forwarded to as it is
        pass
    else:
        if address.is_unspecified:
            host = "::1" if address.version == 6 else "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"
