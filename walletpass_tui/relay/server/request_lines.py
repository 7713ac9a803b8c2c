"""One line per request on ``relay serve``'s terminal, so an operator sees its traffic:

    2026-05-04T09:12:30Z  POST  in/team                 200     4.1 ms
    2026-05-04T09:12:31Z  GET   channels/team/events    200     2.3 ms  stream opened
    2026-05-04T09:12:32Z  POST  in/? (slug 3fQx…)       404     0.4 ms

When (UTC), the method, what was asked for (a channel by its name, escaped; never an ingress
slug whole however the path is spelt, never a token, never a query), the status and the milliseconds until the answer (for
an event stream: until it opened; nothing more is printed when it ends). ``relay serve --quiet``
prints none. A thread writes them, all that waits in one write, so a busy relay makes one write
for many requests, and a terminal that stops reading holds up nothing.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import threading
import time
from collections.abc import Callable
from typing import TextIO

from walletpass_tui.logs import scrub
from walletpass_tui.text import printable

log = logging.getLogger(__name__)

SLUG_SHOWN = 4  # characters of an unknown slug: enough to tell two apart, not to post to one
PATH_SHOWN = 60
MAX_WAITING = 10_000  # lines waiting for the terminal; past it they are counted, not kept

Names = Callable[[str], str | None]  # a slug's channel name, if it is one


# A run of a slug's characters this long may be one (a slug is 22), or hold one: shown by its
# first SLUG_SHOWN characters, wherever it is in a path that is not exactly a route (``//in/S``,
# ``/relay/in/S`` behind a proxy that keeps its prefix, ``/IN/S``, ``/a/../in/S``).
_SLUG_LIKE = re.compile(r"[A-Za-z0-9_-]{16,}")


def what_was_asked(path: str, names: Names) -> str:
    """The request's target as the line shows it: channels by name, slugs never whole, however
    the path is spelt."""
    for prefix in ("/in/", "/channels/"):
        if path.startswith(prefix):
            slug, _, tail = path[len(prefix) :].partition("/")
            shown = f"{prefix[1:]}{_channel(slug, names)}"
            return f"{shown}/{_other(tail, 20)}" if tail else shown
    return _other(path, PATH_SHOWN)


def _other(path: str, limit: int) -> str:
    """Any other path: slug-like runs cut to their first characters, escaped, cut to ``limit``,
    token and secret shapes scrubbed."""
    cut = _SLUG_LIKE.sub(lambda run: run.group()[:SLUG_SHOWN] + "…", path)
    return scrub(printable(cut, limit))


def _channel(slug: str, names: Names) -> str:
    name = names(slug) if slug else None
    if name is not None:
        return printable(name, 64)
    if not slug:
        return "?"
    return f"? (slug {printable(slug[:SLUG_SHOWN], 20)}…)"


class RequestLines:
    """Where the lines go (a text stream; None: nowhere). A thread of its own writes them, so a
    terminal that stops reading (a paused pager) never holds up the event loop: past
    ``MAX_WAITING`` lines waiting, lines are dropped and counted, and the count is printed once
    the terminal reads again."""

    def __init__(self, out: TextIO | None, *, clock: Callable[[], float] = time.time) -> None:
        self._out = out
        self._clock = clock
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._dropped = 0
        self._second = -1
        self._stamp = ""

    @property
    def on(self) -> bool:
        return self._out is not None

    def add(self, method: str, what: str, status: int, ms: float, note: str = "") -> None:
        if self._out is None:
            return
        if self._queue.qsize() >= MAX_WAITING:  # the terminal does not keep up: counted
            self._dropped += 1
            return
        second = int(self._clock())
        if second != self._second:  # formatted once a second
            self._second = second
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
        line = f"{self._stamp}  {printable(method, 8):<6}{what:<24}  {status:>3}  {ms:>7.1f} ms"
        if self._thread is None:
            self._thread = threading.Thread(target=self._write, name="relay-lines", daemon=True)
            self._thread.start()
        self._queue.put(f"{line}  {note}" if note else line)

    def close(self) -> None:
        """Write what waits (for at most a moment: the terminal may not be reading)."""
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(timeout=2)  # a terminal that reads nothing: the thread is left behind

    def _write(self) -> None:
        out = self._out
        assert out is not None
        while True:
            lines = [self._queue.get()]
            with contextlib.suppress(queue.Empty):  # all that waits, in one write
                while len(lines) < MAX_WAITING:
                    lines.append(self._queue.get_nowait())
            stop = None in lines
            text = [line for line in lines if line is not None]
            dropped, self._dropped = self._dropped, 0
            if dropped:
                text.append(f"({dropped:,} request lines not printed: the terminal fell behind)")
            try:
                if text:
                    out.write("\n".join(text) + "\n")
                    out.flush()
            except (OSError, ValueError) as exc:  # a closed terminal: the relay goes on serving
                log.debug("relay: request lines not written (%s); no more are", exc)
                self._out = None
                return
            if stop:
                return
