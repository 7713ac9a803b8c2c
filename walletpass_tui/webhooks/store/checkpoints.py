"""WAL checkpoints kept off the acknowledgement path, and a write-ahead log that stays bounded.

SQLite's automatic checkpoint copies the log into the database inside the commit that crosses its
threshold, so one delivery in a few hundred waits for it (and for an fsync of the database). Here
the writer's connection has it turned off; instead the bulk of the log is copied by a second
connection on its own thread (``Checkpointer``, PASSIVE: it never takes the write lock).

Copied frames stay in the log file until a commit finds it entirely copied and starts it over
from the beginning; under a steady stream that never happens by itself (frames committed while
the bulk copy runs are always left), and the log used to grow for as long as deliveries kept
coming (141 MB after four saturated minutes). So the writer bounds it itself (``LogBound``):
after each batch, deliveries waiting or not, once the log file is larger than ``bound`` it has a
bulk copy run at once, and when that has finished it copies what was committed meanwhile (a
PASSIVE checkpoint on its own connection: a few ms), and the next commit starts the log over and
cuts it back to ``bound / 2`` (``journal_size_limit``).

A reader in the middle of a read pins the frames it may need and so keeps the log from starting
over. The writer never waits for one (a commit waiting for a reader is a delivery waiting for a
query): while a reader holds the log, the log grows past the bound, and the writer tops up again
only after a regular bulk run that found no reader in the way, or, past twice the bound, after
every batch (a PASSIVE checkpoint: it copies what readers allow and returns), so the log starts
over at the first commit after the last reader let go. Without readers the log file so stays
under about ``2 * bound`` plus a batch; a reader that never ends its read keeps it growing, which
is why readers of this project read in short statements (a count runs in slices: queries.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import SqliteThread

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 64  # commits between PASSIVE checkpoints (or 2,000 rows)
CHECKPOINT_ROWS = 2000
LOG_BOUND_BYTES = 8 * 1024 * 1024  # a log file this large is finished by the writer, started over


def top_up_checkpoint(db: sqlite3.Connection) -> bool:
    """On the writer's thread, between two commits: copy what the bulk checkpoint left, so the
    log is complete in the file and the next commit starts it over. Whether it is complete (a
    reader may hold frames back)."""
    busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return bool(busy == 0 and frames == copied)


def copy_whole_log(db: sqlite3.Connection) -> bool:
    """On the writer's thread: copy every frame of the log into the database file (which is
    fsynced); whether nothing is left only in the log."""
    busy, frames, copied = db.execute("PRAGMA wal_checkpoint(FULL)").fetchone()
    return bool(busy == 0 and frames == copied)


class LogBound:
    """What the writer does about the log after a batch, given the log file's size.

    Past the bound it first has the bulk checkpoint run at once (on its own thread: the writer
    goes on committing), and tops up only once a bulk run begun after that has finished, so the
    writer copies only the frames committed meanwhile. A top-up a reader kept from finishing is
    tried again only after a regular bulk run that copied the whole log it saw (no reader was in
    its way any longer). Past twice the bound it tops up after every batch, whatever the bulk
    copy is doing. The writer never waits for a reader.
    """

    TOP_UP = "top up"

    def __init__(self, bound_bytes: int = LOG_BOUND_BYTES) -> None:
        self.bound = max(1, bound_bytes)
        self._bulk: int | None = None  # the bulk run the next top-up waits for
        self._held = False  # the last top-up found a reader in the way
        self.top_ups = 0
        self.held = 0  # top-ups a reader kept from finishing

    def step(self, log_bytes: int, checkpoints: Checkpointer) -> str | None:
        if log_bytes <= self.bound:
            self._bulk = None
            self._held = False
            return None
        if log_bytes > 2 * self.bound:
            return self.TOP_UP
        if self._bulk is None:
            self._bulk = checkpoints.run_soon()
            return None
        if checkpoints.finished < self._bulk:
            return None
        if self._held and not checkpoints.complete:  # a reader is still in the way
            self._bulk = checkpoints.started + 1  # the next regular run
            return None
        return self.TOP_UP

    def done(self, complete: bool) -> None:
        self.top_ups += 1
        self._held = not complete
        if not complete:
            self.held += 1


class Checkpointer:
    """PASSIVE checkpoints on a connection and thread of their own: they never take the write
    lock, so copying the log into the database never delays a delivery's commit."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread = SqliteThread("store-checkpoint")
        self._db: sqlite3.Connection | None = None
        self._task: asyncio.Future[None] | None = None
        self._commits = 0
        self._rows = 0
        self._again = False  # another run right after the one under way
        self._stopped = False  # closing: no run after the one under way
        self.started = 0  # runs begun
        self.finished = 0  # runs ended (the number of the last one)
        self.runs = 0  # runs that succeeded
        self.complete = False  # the last run copied the whole log it found (no reader in the way)
        self.on_end: Callable[[], None] | None = None  # called on the event loop after each run

    def note(self, rows: int) -> None:
        self._commits += 1
        self._rows += rows
        due = self._commits >= CHECKPOINT_EVERY or self._rows >= CHECKPOINT_ROWS
        if due and (self._task is None or self._task.done()):
            self._start()

    @property
    def busy(self) -> bool:
        """A run is under way."""
        return self._task is not None and not self._task.done()

    def run_soon(self) -> int:
        """A run now, or right after the one under way; returns its number (``finished``
        reaches it once it has ended)."""
        if self._task is None or self._task.done():
            self._start()
            return self.started
        self._again = True
        return self.started + 1

    def _start(self) -> None:
        self._commits = self._rows = 0
        self.started += 1
        number = self.started
        self._task = self._thread.run(self._checkpoint)
        self._task.add_done_callback(lambda _: self._ended(number))

    def _ended(self, number: int) -> None:
        self.finished = number
        if self._again and not self._stopped:
            self._again = False
            with contextlib.suppress(RuntimeError):  # the loop is closing
                self._start()
        if self.on_end is not None:
            self.on_end()

    def _checkpoint(self) -> None:
        try:
            if self._db is None:
                # mode=rw: never creates the history (it may have just been deleted: files.py)
                address = f"file:{quote(str(self._path.absolute()))}?mode=rw"
                self._db = sqlite3.connect(
                    address, uri=True, isolation_level=None, check_same_thread=False
                )
            busy, frames, copied = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.complete = busy == 0 and frames == copied
            self.runs += 1
        except (sqlite3.Error, OSError):
            self.complete = False  # a reader or another program in the way: the next one catches up

    async def disconnect(self) -> None:
        """Close the connection after the checkpoint under way (the history is started over);
        the next checkpoint opens a new one."""
        self._again = False
        if self._task is not None:
            with suppressed(log, "the last checkpoint"):
                await self._task

        def close() -> None:
            db, self._db = self._db, None
            if db is not None:
                db.close()

        with suppressed(log, "closing the checkpoint connection"):
            await self._thread.run(close)

    async def close(self) -> None:
        self._stopped = True
        if self._task is not None:
            with suppressed(log, "the last checkpoint"):
                await self._task
        if self._db is not None:
            with suppressed(log, "closing the checkpoint connection"):
                await self._thread.run(self._db.close)
        self._thread.close()
