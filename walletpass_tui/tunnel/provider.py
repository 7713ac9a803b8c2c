"""What every tunnel provider is: something that opens a public HTTPS URL onto a local address.

::

    provider.open("http://127.0.0.1:8787")  ->  OpenTunnel (public_url, closed(), close())
                                            or  TunnelUnavailable  (retrying will not help)
                                            or  TunnelFailed       (this try failed: try again)

A provider (``cloudflared.py``, ``ngrok_sdk.py``) turns whatever its program or SDK does into
these three answers; the watcher (``watch.py``) restarts it, with backoff, after a
``TunnelFailed`` or when an open tunnel's ``closed()`` returns, and stops after a
``TunnelUnavailable``. Every message is one sentence a person can act on, holding no secret.
"""

from __future__ import annotations

from typing import Protocol

from walletpass_tui.errors import WalletpassError


class TunnelUnavailable(WalletpassError):
    """The tunnel cannot start and trying again will not help (the program or the SDK is not
    installed, no authtoken, an answer refused); ``str()`` says what to do."""


class TunnelFailed(WalletpassError):
    """This try failed (the program exited, the service could not be reached); trying again
    later may work. ``str()`` says what happened, in one sentence."""


class OpenTunnel(Protocol):
    """A running tunnel: ``public_url`` (``https://<host>``, no path) forwards to the local
    address it was opened on."""

    @property
    def public_url(self) -> str: ...

    async def closed(self) -> str:
        """Return when the tunnel stops by itself: why, as one phrase."""
        ...

    async def close(self) -> None:
        """Stop it and everything it started (no process left behind). Safe to call twice."""
        ...


class Provider(Protocol):
    """A way to open tunnels: ``name`` says which (``cloudflared``, ``ngrok``)."""

    @property
    def name(self) -> str: ...

    @property
    def describe(self) -> str:
        """What it opens, for a person: ``a cloudflared quick tunnel``."""
        ...

    async def open(self, local_url: str) -> OpenTunnel:
        """A tunnel to ``local_url``; TunnelUnavailable or TunnelFailed when there is none."""
        ...
