"""The receiver's options and its port, without the HTTP server: binding the port is a plain
socket, so a command (the dashboard) can take it, and fail on a taken port with one line, before
the HTTP server is imported. ``receiver.py`` serves HTTP on the socket bound here."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from walletpass_tui.config.receiver_path import url_path
from walletpass_tui.errors import WalletpassError
from walletpass_tui.webhooks.injection import Injection
from walletpass_tui.webhooks.sources import SourcePolicy

if TYPE_CHECKING:
    from walletpass_tui.webhooks.verify import SigningKey

DEFAULT_READ_TIMEOUT_S = 10.0


class ReceiverError(WalletpassError):
    """The receiver cannot start (the port is taken, say); the message says what to do."""


@dataclass
class ReceiverOptions:
    host: str = "127.0.0.1"
    port: int = 8787
    path: str = "/webhooks"
    tolerance_s: float = 300
    max_body: int = 1024 * 1024
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    secrets: Sequence[SigningKey] = ()
    sources: SourcePolicy = field(default_factory=SourcePolicy)
    injection: Injection = field(default_factory=Injection)
    # Requests that carry it in CHECK_HEADER are check's (home_secret.check_token): kept noted
    # as such, never counted as deliveries.
    check_token: str | None = field(default=None, repr=False)


async def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to the first address ``host`` resolves to, listening (a sender connecting
    before anything serves it waits in the backlog); raises ReceiverError when it cannot be had."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, _, _, _, address = infos[0]
        sock = socket.create_server(address, family=family, backlog=128)
    except OSError as exc:
        raise ReceiverError(bind_error(host, port, exc)) from None
    sock.setblocking(False)
    return sock


def bind_error(host: str, port: int, exc: OSError) -> str:
    """One sentence saying why ``host:port`` cannot be listened on, and what to do."""
    where = f"{host}:{port}"
    if exc.errno in (98, 48):  # EADDRINUSE (Linux, macOS)
        return f"Port {port} is already in use on {host}; pick another with --port."
    if exc.errno in (13,):
        return f"Not allowed to listen on {where}; use a port above 1024."
    return f"Cannot listen on {where} ({exc.strerror or exc})."


def bound_address(sock: socket.socket, host: str) -> tuple[str, int]:
    """(host, port) a listening socket took (the port chosen when 0 was asked for)."""
    return (host, sock.getsockname()[1])


def receiver_url(options: ReceiverOptions, bound: tuple[str, int] | None) -> str:
    host, port = bound or (options.host, options.port)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}{url_path(options.path)}"
