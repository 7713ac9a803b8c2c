"""A tunnel through ngrok's agent SDK (the ``ngrok`` package, the ``[ngrok]`` extra).

The SDK runs the ngrok agent inside this process: no program to install, no port 4040. It needs
the user's authtoken (:mod:`walletpass_tui.tunnel.ngrok_config`: ``NGROK_AUTHTOKEN`` or ngrok's
own configuration file, never a flag) and forwards an ``https://`` endpoint (a random one, or
``[tunnel] url``'s domain when the account has one) to the receiver's address.

Everything the SDK is asked goes through one seam, :data:`Connect` (``sdk_connect`` by default),
which returns an :class:`NgrokSession`: the URL the SDK answered (untrusted until it passes
:func:`~walletpass_tui.tunnel.public_url.plain_https_url`), a wait for the SDK to report the
connection lost, and ``close``. Tests drive the provider through that seam; the SDK's own
failures (no network, a refused token) come from the real package. What the SDK says in an
error is cut to one line, escaped, and scrubbed of the authtoken before it is shown or logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from walletpass_tui import __version__
from walletpass_tui.text import printable
from walletpass_tui.tunnel.ngrok_config import NgrokCredentials, ngrok_credentials
from walletpass_tui.tunnel.provider import TunnelFailed, TunnelUnavailable
from walletpass_tui.tunnel.public_url import plain_https_url

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
# walletpass-tui is installed from a checkout: the SDK goes into the same environment.
INSTALL_HINT = (
    "install it where walletpass-tui runs (pipx inject walletpass-tui ngrok, or pip install "
    "ngrok in its environment; from a checkout: pip install '.[ngrok]')"
)


@dataclass(frozen=True)
class NgrokRequest:
    """What the seam is asked: forward ``domain`` (None: any) to ``local_url``."""

    local_url: str
    credentials: NgrokCredentials
    domain: str | None = None


class NgrokSession(Protocol):
    """What the seam answers: the SDK's session with one listener."""

    @property
    def url(self) -> str:
        """The listener's URL, as the SDK gave it (untrusted)."""
        ...

    async def disconnected(self) -> str:
        """Return when the SDK reports the connection to ngrok lost: why."""
        ...

    async def close(self) -> None: ...


Connect = Callable[[NgrokRequest], Awaitable[NgrokSession]]


class Ngrok:
    """The ngrok provider: credentials, the seam, the URL checked."""

    name = "ngrok"

    def __init__(
        self,
        domain: str | None = None,
        *,
        connect: Connect | None = None,
        credentials: Callable[[], NgrokCredentials] = ngrok_credentials,
    ) -> None:
        self.domain = domain
        self._connect = connect or sdk_connect
        self._credentials = credentials

    @property
    def describe(self) -> str:
        return f"the ngrok domain {self.domain}" if self.domain else "an ngrok tunnel"

    async def open(self, local_url: str) -> NgrokTunnel:
        credentials = self._credentials()
        session = await self._connect(NgrokRequest(local_url, credentials, self.domain))
        url = plain_https_url(session.url)
        if url is None:
            await session.close()
            raise TunnelUnavailable(
                "ngrok gave an address that is not a plain https:// host name "
                f"({printable(str(session.url), 80)}), so it is not used."
            )
        return NgrokTunnel(session, url)


class NgrokTunnel:
    """An open ngrok session, as the watcher sees it."""

    def __init__(self, session: NgrokSession, url: str) -> None:
        self.session = session
        self._url = url
        self._closed = False

    @property
    def public_url(self) -> str:
        return self._url

    async def closed(self) -> str:
        return await self.session.disconnected()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.session.close()


# -- the real SDK ----------------------------------------------------------------------------------


def failure_text(exc: BaseException, credentials: NgrokCredentials) -> str:
    """What the SDK said, on one line, escaped, without the authtoken."""
    parts = [str(a) for a in exc.args if str(a)] if exc.args else [type(exc).__name__]
    text = ": ".join(dict.fromkeys(parts))  # its args repeat themselves at times
    token = credentials.authtoken.reveal()
    if token:
        text = text.replace(token, "…")
    return printable(text, 200)


def sdk_failure(exc: BaseException, credentials: NgrokCredentials) -> Exception:
    """The error to raise for an SDK failure: a refused authtoken or domain is Unavailable (the
    same answer again and again), anything else a failed try."""
    said = failure_text(exc, credentials)
    lowered = said.lower()
    if "authtoken" in lowered or "authentication" in lowered or "err_ngrok_105" in lowered:
        return TunnelUnavailable(
            f"ngrok refused the authtoken from {credentials.source} ({said}); copy it again "
            "from your ngrok dashboard."
        )
    if "domain" in lowered and ("reserved" in lowered or "not found" in lowered):
        return TunnelUnavailable(
            f"ngrok refused the domain ({said}); check [tunnel] url in the config file."
        )
    return TunnelFailed(f"ngrok could not be reached ({said})")


class _SdkSession:
    """The ``ngrok`` package's session and listener behind :class:`NgrokSession`."""

    def __init__(self, session: object, listener: object, lost: asyncio.Future[str]) -> None:
        self._session = session
        self._listener = listener
        self._lost = lost

    @property
    def url(self) -> str:
        return str(self._listener.url())  # type: ignore[attr-defined]  # the SDK's Listener

    async def disconnected(self) -> str:
        return await asyncio.shield(self._lost)

    async def close(self) -> None:
        try:
            await self._session.close()  # type: ignore[attr-defined]  # the SDK's Session
        except Exception as exc:  # closing a session that failed: logged, nothing more to do
            log.info("ngrok session close failed: %s", printable(str(exc), 200))


async def sdk_connect(request: NgrokRequest) -> NgrokSession:
    """A session of the real SDK forwarding to ``request.local_url``."""
    try:
        import ngrok
    except ImportError:
        raise TunnelUnavailable(
            f"--tunnel ngrok needs ngrok's agent SDK (the ngrok package), which is not installed: "
            f"{INSTALL_HINT}."
        ) from None
    loop = asyncio.get_running_loop()
    lost: asyncio.Future[str] = loop.create_future()
    credentials = request.credentials

    def on_disconnect(addr: object, error: object) -> None:
        # Called on the SDK's own thread: never raise here (the SDK would stop reconnecting).
        why = printable(str(error or "no reason given"), 160)
        token = credentials.authtoken.reveal()
        why = why.replace(token, "…") if token else why

        def settle() -> None:
            if not lost.done():
                lost.set_result(f"ngrok lost its connection ({why})")

        loop.call_soon_threadsafe(settle)

    builder = (
        ngrok.SessionBuilder()
        .authtoken(credentials.authtoken.reveal())
        .client_info("walletpass-tui", __version__)
        .handle_disconnection(on_disconnect)
    )
    if credentials.connect_url:
        builder = builder.server_addr(credentials.connect_url)
    try:
        session = await asyncio.wait_for(builder.connect(), CONNECT_TIMEOUT_S)
    except TimeoutError:
        raise TunnelFailed(
            f"ngrok did not answer within {CONNECT_TIMEOUT_S:.0f} s (no network?)"
        ) from None
    except Exception as exc:  # the SDK raises ValueError (and others) with its reason
        raise sdk_failure(exc, credentials) from None
    try:
        endpoint = session.http_endpoint()
        if request.domain:
            endpoint = endpoint.domain(request.domain)
        listener = await asyncio.wait_for(
            endpoint.listen_and_forward(request.local_url), CONNECT_TIMEOUT_S
        )
    except BaseException as exc:
        await _SdkSession(session, None, lost).close()
        if isinstance(exc, TimeoutError):
            raise TunnelFailed(f"ngrok gave no endpoint within {CONNECT_TIMEOUT_S:.0f} s") from None
        if isinstance(exc, Exception):
            raise sdk_failure(exc, credentials) from None
        raise
    return _SdkSession(session, listener, lost)
