"""The receiver's side of the control channel (``control.py`` says what goes over it): a Unix
socket served to viewers, each bounded in count, size, time and rate, none ever waited for."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from walletpass_tui.runtime.control import (
    MAX_MESSAGE,
    MAX_TEXT,
    MAX_TOLD,
    PROTOCOL,
    REQUESTS,
    accept_each,
    bind_private,
    decode,
    encode,
    peer_uid,
)

log = logging.getLogger(__name__)

MAX_CLIENTS = 64
MAX_UNREAD = 64 * 1024
MESSAGE_TIMEOUT_S = 5.0
MAX_REQUESTS_PER_S = 20
WATCH_S = 1.0  # how often the socket's file is looked at (one stat)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``, None when there is none."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:  # no file there: None says so
        return None
    return (found.st_dev, found.st_ino)


class Handler(Protocol):
    """What the server asks of the receiver it serves."""

    def hello(self) -> dict[str, Any]:
        """``instance``, ``state`` and ``upto`` for a viewer that just connected."""
        ...

    def request(self, op: str, message: Mapping[str, Any], viewer: object) -> None:
        """Do ``op``, asked by ``viewer`` (the same object for every request of one connection);
        ValueError or RuntimeError saying why it cannot be done."""
        ...

    def left(self, viewer: object) -> None:
        """``viewer``'s connection is gone (it closed, or was dropped): what it asked for may end
        with it."""
        ...

    def after_hello(self) -> list[dict[str, Any]]:
        """What a viewer is told once, right after the hello (the forward targets' options)."""
        ...


@dataclass
class ServerCounts:
    """What the server turned away, for tests and debug logs."""

    strangers: int = 0  # another uid
    over_limit: int = 0  # one viewer too many
    slow: int = 0  # left too much unread
    broke_rules: int = 0  # garbage, too large, too slow, too many requests


class ControlServer:
    """Serves viewers on a Unix socket at ``path``; ``broadcast`` never waits for any of them."""

    def __init__(
        self,
        path: Path,
        handler: Handler,
        *,
        max_clients: int | None = None,
        max_unread: int | None = None,
        message_timeout_s: float | None = None,
        max_requests_per_s: float | None = None,
        watch_s: float | None = None,
    ) -> None:
        """Bounds not given are this module's (read now, so a test may lower them)."""
        self.path = Path(path)
        self.handler = handler
        self.max_clients = max_clients or MAX_CLIENTS
        self.max_unread = max_unread or MAX_UNREAD
        self.message_timeout_s = message_timeout_s or MESSAGE_TIMEOUT_S
        self.max_requests_per_s = max_requests_per_s or MAX_REQUESTS_PER_S
        self.counts = ServerCounts()
        self.viewers: set[_Viewer] = set()
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._watching: asyncio.Task[None] | None = None
        self._bound: tuple[int, int] | None = None  # the socket file bound: (device, inode)
        self.watch_s = watch_s or WATCH_S
        self.rebinds = 0  # times the socket file was found gone and made again

    async def start(self) -> None:
        """Bind (a socket left by a receiver that died is replaced: the caller holds the home)
        and accept viewers until ``stop()``; a socket file removed meanwhile (a cleaner of old
        files, a careless ``rm``) is made again within ``watch_s``."""
        self._bind()
        self._watching = asyncio.create_task(self._watch(), name="control socket watch")

    def _bind(self) -> None:
        sock = bind_private(self.path, 128)  # a burst of connections waits here, never refused
        try:
            self._bound = _identity(self.path)
        except BaseException:
            sock.close()
            raise
        old_task, old_sock = self._accepting, self._sock
        self._sock = sock
        self._accepting = asyncio.create_task(self._accept(sock), name="control accept")
        if old_task is not None:
            old_task.cancel()
        if old_sock is not None:
            old_sock.close()

    async def _watch(self) -> None:
        """Look at the socket's file every ``watch_s``: gone or another file, bind again (the
        viewers connected keep their connections; the next ones find the new socket)."""
        failing = False
        while True:
            await asyncio.sleep(self.watch_s)
            try:
                if _identity(self.path) == self._bound:
                    continue
                self._bind()
            except OSError as exc:  # said once while it lasts; tried again next time
                if not failing:
                    log.warning("control channel: cannot make its socket again (%s)", exc)
                failing = True
                continue
            failing = False
            self.rebinds += 1
            log.warning("control channel: its socket %s was removed; made it again", self.path)

    async def stop(self) -> None:
        """Stop accepting, close every viewer (they see the receiver go) and remove the socket."""
        watching, self._watching = self._watching, None
        if watching is not None:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await watching
        task, self._accepting = self._accepting, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await task
        for viewer in list(self.viewers):
            viewer.transport.abort()
        self.viewers.clear()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
            with contextlib.suppress(FileNotFoundError):  # already gone
                os.unlink(self.path)

    def broadcast(self, message: Mapping[str, Any], but: object = None) -> None:
        """Send ``message`` to every viewer (``but`` that one) now (into its socket buffer;
        never waits)."""
        if not self.viewers:
            return
        line = encode(message)
        for viewer in list(self.viewers):
            if viewer is not but:
                viewer.send(line)

    def tell(self, viewer: object, message: Mapping[str, Any]) -> None:
        """Send ``message`` to one viewer (the one ``Handler.request`` was given), if it is still
        connected; never waits."""
        if viewer in self.viewers:
            assert isinstance(viewer, _Viewer)
            viewer.send(encode(message))

    async def _accept(self, sock: socket.socket) -> None:
        await accept_each(sock, "control channel", self._connect)

    async def _connect(self, conn: socket.socket) -> None:
        if not self._admit(conn):
            conn.close()
            return
        try:
            await asyncio.get_running_loop().connect_accepted_socket(lambda: _Viewer(self), conn)
        except OSError as exc:
            log.debug("control channel: a viewer left at once (%s)", exc)
            conn.close()

    def _admit(self, conn: socket.socket) -> bool:
        try:
            uid = peer_uid(conn)
        except OSError:  # no peer credentials: refused
            return False
        if uid is not None and uid != os.geteuid():
            self.counts.strangers += 1
            log.warning("control channel: refused a process of uid %d", uid)
            return False
        if len(self.viewers) >= self.max_clients:
            self.counts.over_limit += 1
            reason = f"{self.max_clients} dashboards are attached already; close one first"
            with contextlib.suppress(OSError):  # the refused peer may be gone: refused anyway
                conn.send(encode({"type": "error", "reason": reason}))
            return False
        return True


class _Viewer(asyncio.Protocol):
    """One attached dashboard's connection, as the receiver sees it."""

    def __init__(self, server: ControlServer) -> None:
        self.server = server
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self._buffer = bytearray()
        self._timer: asyncio.TimerHandle | None = None
        self._tokens = float(server.max_requests_per_s)
        self._refilled = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        self.transport.set_write_buffer_limits(high=self.server.max_unread)
        self._refilled = asyncio.get_running_loop().time()
        self.server.viewers.add(self)
        try:
            hello = {"type": "hello", "protocol": PROTOCOL, **self.server.handler.hello()}
            self.send(encode(hello))
            for message in self.server.handler.after_hello():
                self.send(encode(message, MAX_TOLD))
        except Exception:  # a bug of the receiver's side must not stop it
            log.exception("control channel: the hello could not be made")
            self.transport.abort()

    def send(self, line: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(line)

    def pause_writing(self) -> None:
        """More than ``max_unread`` bytes wait for this viewer: it is dropped, never waited for."""
        self.server.counts.slow += 1
        self.server.viewers.discard(self)  # sent nothing more from now on
        log.info("control channel: dropped a viewer that stopped reading")
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while not self.transport.is_closing():
            end = self._buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._handle(line)
        if self.transport.is_closing():
            return
        if len(self._buffer) >= MAX_MESSAGE:
            self._fail(f"a message larger than {MAX_MESSAGE} bytes")
        elif self._buffer and self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.server.message_timeout_s, self._too_slow)
        elif not self._buffer and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _too_slow(self) -> None:
        self._timer = None
        self._fail(f"a message not finished within {self.server.message_timeout_s:g} s")

    def _handle(self, line: bytes) -> None:
        try:
            message = decode(line)
        except ValueError as exc:  # answered to the peer with its reason
            self._fail(str(exc))
            return
        if not self._take_token():
            self._fail(f"more than {self.server.max_requests_per_s:g} requests a second")
            return
        rid = message.get("id")
        if rid is not None and (type(rid) is not int or not 0 <= rid < 2**31):
            self._fail("a request id that is not a small whole number")
            return
        op = message.get("op")
        if op not in REQUESTS:
            self._reply(rid, f"no such request ({', '.join(REQUESTS)} are known)")
            return
        try:
            self.server.handler.request(str(op), message, self)
        except (ValueError, RuntimeError) as exc:  # answered to the peer with its reason
            self._reply(rid, str(exc)[:MAX_TEXT] or "refused")
        else:
            self._reply(rid, None)

    def _take_token(self) -> bool:
        now = asyncio.get_running_loop().time()
        rate = self.server.max_requests_per_s
        self._tokens = min(rate, self._tokens + (now - self._refilled) * rate)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def _reply(self, rid: int | None, refused: str | None) -> None:
        reply: dict[str, Any] = {"type": "reply", "id": rid, "ok": refused is None}
        if refused is not None:
            reply["reason"] = refused
        self.send(encode(reply))

    def _fail(self, reason: str) -> None:
        """Say which rule was broken, then close (abort a moment later if it is not read)."""
        self.server.counts.broke_rules += 1
        self._buffer.clear()
        self.send(encode({"type": "error", "reason": reason}))
        self.transport.close()
        asyncio.get_running_loop().call_later(1.0, self.transport.abort)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.viewers.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            self.server.handler.left(self)
        except Exception:  # a bug of the receiver's side must not stop it
            log.exception("control channel: a viewer's leaving could not be handled")
