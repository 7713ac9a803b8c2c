"""Ctrl-C, SIGTERM and SIGHUP (the terminal closed) as a clean stop: long-running commands
(``listen``, ``sim serve``) wait on an event, the dashboard and the demo exit their app; then
they stop in order (the tunnel's program stopped, ports released, stores closed, exit 0) instead
of dying with a traceback, or dying at once and leaving a ``cloudflared`` running."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

# SIGHUP is what closing the terminal window (or tmux kill-session, or ssh dropping) sends.
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
# A full-screen app reads Ctrl-C as a key (the terminal is in raw mode): only the others.
APP_STOP_SIGNALS = tuple(sig for sig in STOP_SIGNALS if sig != signal.SIGINT)


@contextlib.contextmanager
def on_signals(callback: Callable[[], object], signals: Sequence[int]) -> Iterator[None]:
    """``callback`` is called (on the running loop) for each of ``signals`` while the block runs.

    Where the loop cannot catch signals (not the main thread, Windows) nothing is caught: the
    signal does what it did before.
    """
    loop = asyncio.get_running_loop()
    caught: list[int] = []
    for sig in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            # no signal handlers here: the signal keeps its default
            loop.add_signal_handler(sig, callback)
            caught.append(sig)
    try:
        yield
    finally:
        for sig in caught:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                # not set, or the loop is gone: nothing to remove
                loop.remove_signal_handler(sig)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event set by SIGINT, SIGTERM or SIGHUP while the block runs (on the running loop).

    Caught from the very start of the block, so a signal that arrives while a store is opened or a
    port bound still ends in a clean stop.
    """
    stop = asyncio.Event()
    with on_signals(stop.set, STOP_SIGNALS):
        yield stop


def exit_app_on_signals(exit_app: Callable[[], object]) -> contextlib.AbstractContextManager[None]:
    """SIGTERM and SIGHUP end a full-screen app (``app.exit``) while the block runs, so what it
    runs (the receiver, its tunnel) closes in order."""
    return on_signals(exit_app, APP_STOP_SIGNALS)


def last_words(out: TextIO, text: str) -> None:
    """Print ``text`` as the command's last line; dropped when the terminal it would go to has
    closed (SIGHUP stopped the command: the write fails with EIO, or EPIPE for a pipe), and the
    stream pointed at /dev/null so that Python's own flush at exit does not fail again."""
    try:
        print(text, file=out, flush=True)
    except OSError as exc:
        if exc.errno not in (errno.EIO, errno.EPIPE):
            raise
        with contextlib.suppress(OSError, ValueError):  # already gone: nothing left to quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
