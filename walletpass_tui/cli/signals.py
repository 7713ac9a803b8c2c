"""Ctrl-C and SIGTERM as an event: long-running commands (``listen``, ``sim serve``) wait on it and
then stop cleanly (ports released, stores closed, exit 0) instead of dying with a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM while the block runs (on the running loop).

    Caught from the very start of the block, so a signal that arrives while a store is opened or a
    port bound still ends in a clean stop. Where the loop cannot catch signals (not the main thread,
    Windows) the event is only set by whoever else holds it.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    caught: list[signal.Signals] = []
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            # no signal handlers here: Ctrl-C still stops it
            loop.add_signal_handler(sig, stop.set)
            caught.append(sig)
    try:
        yield stop
    finally:
        for sig in caught:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                # not set, or the loop is gone: nothing to remove
                loop.remove_signal_handler(sig)
