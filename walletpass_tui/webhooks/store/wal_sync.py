"""The write-ahead log's fsync, on a thread of its own: a commit is on disk before anybody hears
of it, but the next batch does not wait for the disk.

The writer's connection commits with ``synchronous = NORMAL``: the commit writes its frames into
the log (``write()``) and returns. ``WalSync.after_commit()`` then gives a future that is done
once an ``fsync`` of the log file, begun after that commit, has returned: the same file and the
same call SQLite makes at every commit under FULL, so a commit is exactly as durable when its
future is done. Deliveries are answered, and listeners told, only then.

Meanwhile the writer's thread already writes the next batch: one fsync covers every commit made
before it began (at most one runs and one waits), and the writer no longer waits for the disk
before taking the next batch. A failed fsync fails every commit it covered (their senders get a
503 and deliver again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import SqliteThread
from walletpass_tui.webhooks.models import StoreError

log = logging.getLogger(__name__)


class WalSync:
    """One fsync under way at most, and one more for the commits made while it runs."""

    def __init__(self, path: Path) -> None:
        self._log = path.with_name(path.name + "-wal")
        self._fd: int | None = None
        self._fd_lock = threading.Lock()  # the sync thread and, now and then, the writer's
        self._thread = SqliteThread("store-sync")
        self._running: asyncio.Future[None] | None = None
        self._queued: asyncio.Future[None] | None = None
        self.syncs = 0
        self.on_end: Callable[[], None] | None = None  # called on the event loop after each fsync

    @property
    def busy(self) -> bool:
        return self._running is not None

    def after_commit(self) -> asyncio.Future[None]:
        """Done once everything committed before this call is on disk."""
        loop = asyncio.get_running_loop()
        if self._running is None:
            self._running = self._start(loop)
            return self._running
        if self._queued is None:
            self._queued = loop.create_future()
        return self._queued

    def after_earlier(self) -> asyncio.Future[None] | None:
        """Done once every sync asked for so far is (None: none is under way); keeps listeners
        hearing of commits in order when one needs no sync of its own."""
        return self._queued or self._running

    def _start(
        self, loop: asyncio.AbstractEventLoop, done: asyncio.Future[None] | None = None
    ) -> asyncio.Future[None]:
        """An fsync on the sync thread; ``done`` (a queued future, or a new one) is settled with
        its outcome, and the queued callers' fsync starts right after."""
        settled: asyncio.Future[None] = done or loop.create_future()
        work = self._thread.run(self.fsync_now)

        def finished(work: asyncio.Future[None]) -> None:
            exc = work.exception() if not work.cancelled() else _not_synced(self._log)
            if not settled.done():
                if exc is None:
                    settled.set_result(None)
                else:
                    settled.set_exception(exc)
            queued, self._queued = self._queued, None
            self._running = self._start(loop, queued) if queued is not None else None
            if self.on_end is not None:
                self.on_end()

        work.add_done_callback(finished)
        return settled

    def fsync_now(self) -> None:
        """The log file's written frames to disk; raises StoreError. On the sync thread, or on
        the writer's right after a commit when no sync is under way and nothing else waits for
        the writer (one trip to a thread instead of two for a lone delivery)."""
        with self._fd_lock:
            self._fsync_locked()

    def _fsync_locked(self) -> None:
        try:
            if self._fd is not None and os.fstat(self._fd).st_nlink == 0:
                os.close(self._fd)  # the log was deleted and made anew: sync the new one
                self._fd = None
            if self._fd is None:
                # Read-only is enough for fsync on POSIX; Windows needs write access for it.
                flags = os.O_RDONLY if os.name != "nt" else os.O_RDWR
                # O_NONBLOCK: a FIFO put in the log's place cannot stop this thread (its fsync
                # fails instead, and says so); a regular file ignores it.
                self._fd = os.open(self._log, flags | getattr(os, "O_NONBLOCK", 0))
            os.fsync(self._fd)
        except OSError as exc:
            raise StoreError(
                f"The history database's log {self._log} could not be written to disk "
                f"({exc.strerror or exc}); check the disk, then deliver again."
            ) from None
        self.syncs += 1

    async def drain(self) -> None:
        """Wait for every fsync asked for so far (whatever its outcome)."""
        pending = [f for f in (self._running, self._queued) if f is not None]
        if pending:
            await asyncio.wait(pending)

    def forget_file(self) -> None:
        """The log file is another one now (the history was started over): the next fsync opens
        it. Only once every fsync asked for is done (``drain``)."""
        with self._fd_lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):  # closing a descriptor being dropped
                    os.close(self._fd)
                self._fd = None

    async def synced(self) -> None:
        """Wait until everything committed before this call is on disk; raises StoreError. The
        future is shared: a waiter that is cancelled must not cancel it for the others."""
        await asyncio.shield(self.after_commit())

    async def close(self) -> None:
        """After every sync asked for; the file descriptor is closed with the thread."""
        pending = [f for f in (self._running, self._queued) if f is not None]
        if pending:
            await asyncio.wait(pending)

        def finish() -> None:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

        with suppressed(log, "closing the history's log for syncing"):
            await self._thread.run(finish)
        self._thread.close()


def _not_synced(log: Path) -> StoreError:
    return StoreError(f"The history database's log {log} was not written to disk (closing).")
