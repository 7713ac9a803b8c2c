"""One subscriber's stream on the wire: written in bounded writes, never ahead of its socket.

aiohttp's ``StreamResponse.write`` hands whatever it gets to the transport and waits for the
transport to drain only now and then, so a subscriber that stops reading would keep whatever was
written for it in the relay's memory. ``EventStream`` instead sets the transport's write buffer
limits low (``WRITE_HIGH``/``WRITE_LOW``), writes without waiting, and says how much ``room`` the
transport has: its caller writes the events that fit (and one more at most) in one write, lets
go of the rest of its page, and waits in ``drained`` before reading on. A subscriber that stopped reading therefore holds at most ``WRITE_HIGH`` plus one
event, besides the kernel's socket buffer.

``drained`` is patient, not endless: a peer from which no byte drained for ``STALL_HEARTBEATS``
heartbeats is dropped (its connection reset, so the kernel lets go of its buffer too); it resumes
later with ``Last-Event-ID``. While it waits, the token is checked at every heartbeat as on an
idle stream, and the relay stopping ends the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_writer import StreamWriter

from walletpass_tui.relay.server.fanout import ChannelFanout

WRITE_HIGH = 32 * 1024  # past this many bytes waiting in the transport, stop writing
WRITE_LOW = 8 * 1024  # ... until it is back under this
STALL_HEARTBEATS = 2  # heartbeats without a byte drained before a subscriber is dropped


class PeerStalled(Exception):
    """The subscriber read nothing for too long."""


class EventStream:
    """Writes to one subscriber's prepared response and waits, with patience, for it to read."""

    def __init__(
        self,
        request: web.BaseRequest,
        writer: AbstractStreamWriter,
        fanout: ChannelFanout,
        *,
        heartbeat_s: float,
        stopped: asyncio.Future[None],
    ) -> None:
        transport = request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the subscriber went away")
        transport.set_write_buffer_limits(high=WRITE_HIGH, low=WRITE_LOW)
        self._transport = transport
        self._protocol = request.protocol
        self._writer = writer
        self._fanout = fanout
        self._heartbeat_s = heartbeat_s
        self._stopped = stopped

    @property
    def room(self) -> int:
        """Bytes the transport takes before it is full (events are written up to it, and one
        more at most)."""
        return max(0, WRITE_HIGH - self._transport.get_write_buffer_size())

    @property
    def full(self) -> bool:
        """The transport is over its high-water mark: write nothing more until ``drained``."""
        return self._protocol.writing_paused

    async def write(self, data: bytes) -> None:
        """Hand ``data`` to the transport without waiting for the peer to read it."""
        if self._transport.is_closing():
            raise ConnectionResetError("the subscriber went away")
        if isinstance(self._writer, StreamWriter):
            await self._writer.write(data, drain=False)
        else:  # pragma: no cover - aiohttp's own writer is a StreamWriter
            await self._writer.write(data)

    async def drained(self, still_valid: Callable[[], Awaitable[bool]]) -> bool:
        """Wait until the transport is back under its low-water mark: True to go on, False when
        the stream must end (the relay is stopping, the token was revoked; the connection is
        then reset, since the peer is not reading). Raises ``PeerStalled`` when no byte drained
        for ``STALL_HEARTBEATS`` heartbeats, ``ConnectionError`` when the peer went away."""
        if not self.full:
            return True
        drain = asyncio.ensure_future(self._writer.drain())
        drain.add_done_callback(_retrieved)  # a lost peer's error is ours, read or not
        self._fanout.stalled += 1
        try:
            waiting = self._transport.get_write_buffer_size()
            idle = 0
            while True:
                done, _ = await asyncio.wait(
                    {drain, self._stopped},
                    timeout=self._heartbeat_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if drain in done:
                    drain.result()
                    return True
                if self._stopped.done() or not await still_valid():
                    self.reset()
                    return False
                now = self._transport.get_write_buffer_size()
                if now < waiting:
                    waiting, idle = now, 0
                    continue
                idle += 1
                if idle >= STALL_HEARTBEATS:
                    self.reset()
                    raise PeerStalled
        finally:
            self._fanout.stalled -= 1
            if not drain.done():
                drain.cancel()

    def reset(self) -> None:
        """Drop the connection now, discarding what it has not read (a reset, not a close that
        would wait for a peer that is not reading)."""
        sock = self._transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError, AttributeError, ValueError):
                # no socket option here: the abort still closes it
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._transport.abort()


def _retrieved(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()
