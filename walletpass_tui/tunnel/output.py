"""A tunnel program's output, read as hostile: line by line, each line and the whole bounded.

The program (``cloudflared``, or whatever answers to that name on PATH) may print anything: a
line without end, binary, escape sequences, megabytes a second. :class:`OutputLines` reads its
pipe in chunks of at most ``CHUNK`` bytes, cuts every line to ``MAX_LINE`` bytes (the rest of a
longer line is dropped, never kept), decodes it as ASCII with anything else replaced, and keeps
only the last ``TAIL_LINES`` lines (each escaped and cut for showing) to say why the program
stopped. ``total`` counts every byte read, the dropped rest of a long line included; with a
``limit`` set, ``next()`` raises :class:`TooMuchOutput` as soon as ``total`` passes it, even in
the middle of a line that never ends (a caller refuses a program that talks too much).
Once a tunnel is up its output is drained at most ``DRAIN_RATE`` bytes a second: a program that
prints without end is slowed down (its writes wait), never read faster than that.
"""

from __future__ import annotations

import asyncio
from collections import deque

from walletpass_tui.text import printable

CHUNK = 64 * 1024
MAX_LINE = 4096  # bytes of one line kept; cloudflared's longest is a few hundred
TAIL_LINES = 3
SHOWN = 160  # characters of a line shown in a message
DRAIN_RATE = 1024 * 1024  # bytes a second read from a running tunnel's program, at most


class TooMuchOutput(Exception):
    """More than the ``limit`` bytes were read."""


class OutputLines:
    """Lines of ``stream``, bounded. ``next()`` returns the next line (without its end) or None
    once the stream has ended; TooMuchOutput once more than ``limit`` bytes were read (None: no
    limit; a caller lifts it by setting ``limit`` to None)."""

    def __init__(self, stream: asyncio.StreamReader, limit: int | None = None) -> None:
        self._stream = stream
        self.limit = limit
        self._pending: deque[str] = deque()
        self._partial = bytearray()
        self._dropping = False  # the current line passed MAX_LINE: the rest of it is skipped
        self._ended = False
        self.total = 0
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)

    async def next(self) -> str | None:
        while not self._pending:
            if self._ended:
                return None
            chunk = await self._stream.read(CHUNK)
            if not chunk:
                self._ended = True
                if self._partial:
                    self._emit(bytes(self._partial))
                    self._partial.clear()
                continue
            self.total += len(chunk)
            if self.limit is not None and self.total > self.limit:
                raise TooMuchOutput(f"more than {self.limit} bytes")
            self._feed(chunk)
        return self._pending.popleft()

    def _feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not self._dropping:
                room = MAX_LINE - len(self._partial)
                self._partial += piece[:room]
                if len(piece) > room:
                    self._dropping = True
            if end < 0:
                return
            self._emit(bytes(self._partial))
            self._partial.clear()
            self._dropping = False
            start = end + 1

    def _emit(self, raw: bytes) -> None:
        line = raw.rstrip(b"\r").decode("ascii", errors="replace")
        self._pending.append(line)
        if line.strip():
            self.tail.append(printable(line.strip(), SHOWN))

    async def drain(self) -> None:
        """Read to the end, keeping only the tail (the program's pipe must never fill, or it
        would block writing its log)."""
        while True:
            before = self.total
            if await self.next() is None:
                return
            read = self.total - before
            if read:
                await asyncio.sleep(read / DRAIN_RATE)

    def last_words(self) -> str:
        """The program's last line, escaped, for a message; ``no output`` when it said nothing."""
        return self.tail[-1] if self.tail else "no output"
