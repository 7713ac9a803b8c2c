"""A local runtime's receiver port: a plain socket bound when the runtime opens (a port in use
fails there, before any screen is drawn), and the receiver built on it the first time it is
needed (``serve()``, or a feed's first delivery).

The receiver's HTTP server and forwarding (httpx) take a while to import: the import runs in a
thread, so the loop it shares (the dashboard's first frames, its keys) keeps its turns. Callers
at the same moment get the same receiver.
"""

from __future__ import annotations

import asyncio
import importlib
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from walletpass_tui.webhooks.listening import ReceiverOptions, bound_address, listening_socket

if TYPE_CHECKING:  # imported when first needed
    from walletpass_tui.webhooks.receiver import Receiver

RECEIVER_MODULE = "walletpass_tui.webhooks.receiver"


class ReceiverPort:
    """The bound socket, then the receiver serving on it."""

    def __init__(self) -> None:
        self.receiver: Receiver | None = None
        self.bound: tuple[str, int] | None = None  # (host, port) once bound
        self._socket: socket.socket | None = None
        self._building = asyncio.Lock()  # one receiver, however many ask for it at once

    async def bind(self, options: ReceiverOptions) -> None:
        """The port bound (ReceiverError, one sentence, when it cannot be); nothing accepted."""
        self._socket = await listening_socket(options.host, options.port)
        self.bound = bound_address(self._socket, options.host)

    async def receiver_on_it(self, build: Callable[[], Receiver]) -> Receiver | None:
        """The receiver, ``build()`` (once its module is imported) and bound to the socket the
        first time; None when nothing is bound (no receiver, or closed)."""
        if self.receiver is not None or self._socket is None:
            return self.receiver
        async with self._building:
            if self.receiver is not None or self._socket is None:
                return self.receiver  # built by another caller while this one waited
            if RECEIVER_MODULE not in sys.modules:
                await asyncio.to_thread(importlib.import_module, RECEIVER_MODULE)
            receiver = build()
            sock, self._socket = self._socket, None
            try:
                await receiver.bind(sock)
            except BaseException:
                sock.close()
                raise
            self.receiver = receiver
        return self.receiver

    async def close(self) -> None:
        """The receiver stopped (requests in flight answered) and the port released."""
        receiver, self.receiver = self.receiver, None
        if receiver is not None:
            await receiver.stop()
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self.bound = None
