"""Progress of long work on a terminal: one line on stderr, redrawn at most ten times a second and
cleared when the work ends ("exported 12,000 of 100,000").

Only a person watching a terminal sees it: when the stream is not a terminal (a pipe, a file, a
CI log) nothing at all is written, and commands that print JSON never ask for it. Standard
library only: light commands import this module.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

__all__ = ["Progress", "on_terminal"]

MIN_INTERVAL_S = 0.1  # at most ten redraws a second
_CLEAR = "\r\x1b[2K"  # back to the start of the line, erase it


def on_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (False for pipes, files, closed or replaced streams)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # no terminal behind it: not a tty
        return False


def _columns(stream: TextIO) -> int:
    """The terminal's width; 80 when it does not say (a new pseudo-terminal reports 0)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):  # no terminal size: the default width
        columns = 0
    return columns if columns > 0 else 80


class Progress:
    """``with Progress("exported", total) as progress: ... progress.update(done)``.

    ``enabled`` defaults to "``stream`` is a terminal"; pass False for ``--json`` or whenever the
    command's own output goes to the same terminal. ``clock`` is for tests.
    """

    def __init__(
        self,
        verb: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.verb = verb
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = on_terminal(self.stream) if enabled is None else enabled
        self._clock = clock
        self._last_draw: float | None = None
        self._shown = False
        self.draws = 0

    def text(self, done: int) -> str:
        if self.total is None:
            return f"{self.verb} {done:,}"
        return f"{self.verb} {done:,} of {self.total:,}"

    def update(self, done: int) -> None:
        """Say ``done`` items are finished; drawn only if the last draw is 0.1 s old."""
        if not self.enabled:
            return
        now = self._clock()
        if self._last_draw is not None and now - self._last_draw < MIN_INTERVAL_S:
            return
        self._last_draw = now
        line = self.text(done)[: max(1, _columns(self.stream) - 1)]
        if self._write(_CLEAR + line):
            self._shown = True
            self.draws += 1

    def close(self) -> None:
        """Erase the line, so what is printed next starts on a clean one."""
        if self._shown:
            self._write(_CLEAR)
            self._shown = False

    def _write(self, text: str) -> bool:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # the terminal went away: the work goes on without a display
            self._shown = False
            return False
        return True

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
