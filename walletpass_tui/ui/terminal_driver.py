"""The dashboard's terminal driver: Textual's own, except that a terminal that has gone away
(its window closed, tmux killed, ssh dropped) swallows what is written to it.

Textual writes the screen from a thread of its own through a queue of 30 writes. When the
terminal hangs up, a write fails with EIO (EPIPE where the output is a pipe), that thread dies,
and the next writes fill its queue and block the event loop for good: the app never finishes
exiting, so what it runs (the receiver, a tunnel's ``cloudflared``) is never stopped. Here those
writes are dropped instead (nobody can see them), and the app stops in order.
"""

from __future__ import annotations

import errno
import logging
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.driver import Driver

log = logging.getLogger(__name__)

# What a write to a terminal that has hung up fails with: EIO for a tty whose other side has
# closed, EPIPE for a pipe whose reader has gone, ENXIO for a device that is no longer there.
TERMINAL_GONE = frozenset({errno.EIO, errno.EPIPE, errno.ENXIO})


class TerminalOutput:
    """``file`` (the terminal Textual draws on), whose writes are dropped once the terminal is
    gone rather than raising in Textual's output thread."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.gone = False

    def _failed(self, exc: OSError) -> None:
        if exc.errno not in TERMINAL_GONE:
            raise exc
        if not self.gone:
            self.gone = True
            log.info("the terminal has gone away (%s): the screen is no longer drawn", exc)

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._file.write(text)
            except OSError as exc:  # re-raised unless the terminal is gone, logged once
                self._failed(exc)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._file.flush()
            except OSError as exc:  # re-raised unless the terminal is gone, logged once
                self._failed(exc)

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return self._file.isatty()


if sys.platform != "win32":
    from textual.drivers.linux_driver import LinuxDriver

    class HangupSafeDriver(LinuxDriver):
        """Textual's POSIX driver, drawing through TerminalOutput."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if self._file is not None:  # None: no stderr at all (pythonw), nothing drawn
                # Textual only writes, flushes and asks fileno() of it (a file-like by duck type)
                self._file = TerminalOutput(self._file)  # type: ignore[assignment]


def hangup_safe(driver_class: type[Driver]) -> type[Driver]:
    """The driver to use instead of ``driver_class``, the one Textual chose: HangupSafeDriver for
    Textual's POSIX terminal driver, any other (headless tests, a browser's, Windows) as it is."""
    if sys.platform != "win32" and driver_class is LinuxDriver:
        return HangupSafeDriver
    return driver_class
