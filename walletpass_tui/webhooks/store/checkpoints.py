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
cuts it back to ``bound / 2`` (``journal_size_limit``). A reader in the middle of a read pins the
frames it may need and so keeps the log from starting over: past twice the bound the writer
waits for readers, at most RESTART_WAIT_MS (a RESTART checkpoint), and if one still holds on it
waits again only once the log has grown by another ``bound``. The log file so stays under about
``2 * bound`` plus a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from pathlib import Path
from urllib.parse import quote

from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import SqliteThread

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 64  # commits between PASSIVE checkpoints (or 2,000 rows)
CHECKPOINT_ROWS = 2000
LOG_BOUND_BYTES = 8 * 1024 * 1024  # a log file this large is finished by the writer, started over
RESTART_WAIT_MS = 1000  # past twice the bound, the writer waits this long for readers, at most


def top_up_checkpoint(db: sqlite3.Connection) -> bool:
    """On the writer's thread, between two commits: copy what the bulk checkpoint left, so the
    log is complete in the file and the next commit starts it over. Whether it is complete (a
    reader may hold frames back)."""
    busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return bool(busy == 0 and frames == copied)


def restart_log(db: sqlite3.Connection, wait_ms: int, busy_timeout_ms: int) -> bool:
    """On the writer's thread: copy the whole log and wait (``wait_ms`` at most) until no reader
    uses it, so the next commit starts it over. Whether that worked."""
    db.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        busy, frames, copied = db.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
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
    writer copies only the frames committed meanwhile; past twice the bound it waits for
    readers (RESTART) whatever the bulk copy is doing.
    """

    TOP_UP = "top up"
    RESTART = "restart"

    def __init__(self, bound_bytes: int = LOG_BOUND_BYTES) -> None:
        self.bound = max(1, bound_bytes)
        self._restart_above = 2 * self.bound
        self._bulk: int | None = None  # the bulk run the top-up waits for
        self.top_ups = 0
        self.restarts = 0

    def step(self, log_bytes: int, checkpoints: Checkpointer) -> str | None:
        if log_bytes <= self.bound:
            self._restart_above = 2 * self.bound
            self._bulk = None
            return None
        if log_bytes > self._restart_above:
            return self.RESTART
        if self._bulk is None:
            self._bulk = checkpoints.run_soon()
            return None
        return self.TOP_UP if checkpoints.finished >= self._bulk else None

    def done(self, step: str, complete: bool, log_bytes: int) -> None:
        if step == self.RESTART:
            self.restarts += 1
            if not complete:  # a reader holds on: wait for readers again a bound later
                self._restart_above = log_bytes + self.bound
        else:
            self.top_ups += 1


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

    def note(self, rows: int) -> None:
        self._commits += 1
        self._rows += rows
        due = self._commits >= CHECKPOINT_EVERY or self._rows >= CHECKPOINT_ROWS
        if due and (self._task is None or self._task.done()):
            self._start()

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

    def _checkpoint(self) -> None:
        try:
            if self._db is None:
                # mode=rw: never creates the history (it may have just been deleted: files.py)
                address = f"file:{quote(str(self._path.absolute()))}?mode=rw"
                self._db = sqlite3.connect(
                    address, uri=True, isolation_level=None, check_same_thread=False
                )
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.runs += 1
        except (sqlite3.Error, OSError):
            pass  # a reader or another program in the way: the next one catches up

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
