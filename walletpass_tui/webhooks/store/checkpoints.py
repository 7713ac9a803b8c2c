"""WAL checkpoints kept off the acknowledgement path.

SQLite's automatic checkpoint copies the log into the database inside the commit that crosses its
threshold, so one delivery in a few hundred waits for it (and for an fsync of the database). Here
the writer's connection has it turned off; instead the bulk of the log is copied by a second
connection on its own thread (PASSIVE: it never takes the write lock). Copied frames stay in the
log file until a commit finds it entirely copied and starts it over; under a steady stream that
never happens by itself, so once the file passes TOP_UP_BYTES the writer, when no delivery waits,
copies the few frames committed meanwhile (a short pause, a few times a minute at 200/s) and the
next commit starts the log over (cut back to ``journal_size_limit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHECKPOINT_EVERY = 64  # commits between PASSIVE checkpoints (or 2,000 rows)
CHECKPOINT_ROWS = 2000
TOP_UP_BYTES = 8 * 1024 * 1024  # a log file this large is finished by the writer and started over
LOG_SIZE_LIMIT = 4 * 1024 * 1024  # what a started-over log file is cut back to


def top_up_checkpoint(db: sqlite3.Connection) -> None:
    """On the writer's thread, between two commits: copy what the bulk checkpoint left, so the
    log is complete in the file and the next commit starts it over (it stops growing)."""
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def copy_whole_log(db: sqlite3.Connection) -> bool:
    """On the writer's thread: copy every frame of the log into the database file (which is
    fsynced); whether nothing is left only in the log."""
    busy, frames, copied = db.execute("PRAGMA wal_checkpoint(FULL)").fetchone()
    return busy == 0 and frames == copied


class Checkpointer:
    """PASSIVE checkpoints on a connection and thread of their own: they never take the write
    lock, so copying the log into the database never delays a delivery's commit."""

    def __init__(self, path: Path) -> None:
        self.top_up_due = False  # a bulk checkpoint ran: the writer should finish it when idle
        self.on_done: Callable[[], None] = lambda: None  # on the event loop, after each run
        self._path = path
        self._log = path.with_name(path.name + "-wal")
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="store-checkpoint")
        self._db: sqlite3.Connection | None = None
        self._task: asyncio.Future[None] | None = None
        self._commits = 0
        self._rows = 0
        self.runs = 0

    def note(self, rows: int) -> None:
        self._commits += 1
        self._rows += rows
        due = self._commits >= CHECKPOINT_EVERY or self._rows >= CHECKPOINT_ROWS
        if due and (self._task is None or self._task.done()):
            self._commits = self._rows = 0
            loop = asyncio.get_running_loop()
            self._task = loop.run_in_executor(self._executor, self._checkpoint)
            self._task.add_done_callback(lambda _: self.on_done())

    def _checkpoint(self) -> None:
        try:
            if self._db is None:
                self._db = sqlite3.connect(
                    self._path, isolation_level=None, check_same_thread=False
                )
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.runs += 1
            if os.path.getsize(self._log) > TOP_UP_BYTES:
                self.top_up_due = True
        except (sqlite3.Error, OSError):
            pass  # a reader or another program in the way: the next one catches up

    async def disconnect(self) -> None:
        """Close the connection after the checkpoint under way (the history is started over);
        the next checkpoint opens a new one."""
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        self.top_up_due = False

        def close() -> None:
            db, self._db = self._db, None
            if db is not None:
                db.close()

        with contextlib.suppress(Exception):
            await asyncio.get_running_loop().run_in_executor(self._executor, close)

    async def close(self) -> None:
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        if self._db is not None:
            with contextlib.suppress(Exception):
                self._db.close()
        self._executor.shutdown(wait=False)
