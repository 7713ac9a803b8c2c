"""The search index in a file of its own, kept up to date by a thread of its own.

The index lives next to the history as ``<history>-search`` (0600, WAL, no fsync: it can always be
rebuilt from the rows). Its connection attaches the history and reads new rows through WAL, so
indexing never takes the history's write lock and never delays a delivery's commit: the writer
only wakes the indexer after each commit, and the indexer, after gathering commits for up to
COALESCE_S (``settled()`` cuts that short), catches up in chunks on its own thread (``INSERT ...
SELECT`` inside SQLite, so the event loop does not wait for the GIL meanwhile). Deliveries come
first (``pacing.py``): while commits keep arriving, the indexer takes at most BUSY_SHARE of a
core; while the receiver is saturated, YIELD_SHARE (until MAX_BEHIND rows behind): it falls
behind rather than slow the receiver, and catches up as soon as the rush is over; a search reads
the rows past the index one by one meanwhile (``INDEXED_UPTO_SQL``).

The indexer's thread runs at the process's own priority on purpose: at the lowest one it starved on
a busy machine while holding a read snapshot, and the history's write-ahead log, which cannot start
over past a reader, grew without bound.

The index serves only the history it was made from. Its meta records its last row
(``indexed_upto``) and what tells that row from another of the same id (``indexed_mark``: when it
arrived, its webhook-id). An index whose last row is past the history's newest, or is in the
history as another row (the index of another home copied or restored beside this history, or one
left by a history started again), is not used by a search (``mark_sql``: every row is looked at
instead) and the indexer starts it over, a chunk at a time (``index_chunk``). An index from before
the mark was recorded is started over the same way.

A damaged index file is moved out of the way and rebuilt; deliveries are never at stake.
Rows pruned from the history stay in the index until it is rebuilt: searches join the index with
the rows and confirm every word against them, so such entries are never shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import TypeVar

from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import SqliteThread
from walletpass_tui.webhooks.store import tables
from walletpass_tui.webhooks.store.pacing import Pace
from walletpass_tui.webhooks.store.search import INDEX_BODY_BYTES

T = TypeVar("T")
SUFFIX = "-search"
CHUNK = 1024  # rows per index transaction (only the indexer waits for it)
OPEN_CHUNKS = 16  # rows a crash left unindexed are searchable at open, up to this many chunks
RETRY_S = 0.5  # after a failed step (another program holds the index file), try again this late
# After a commit wakes it, the indexer waits this long for more (unless settled() hurries it): one
# index transaction for every few commits instead of one per commit, so at a steady rate it runs
# less often next to the receiver (fewer trips to its thread, fewer waits for the interpreter).
COALESCE_S = 0.05
# Of a core, while commits keep arriving: below saturation (in SQLite, without the interpreter's
# lock: the receiver keeps the other core), and while the receiver is saturated (pacing.py).
# Tokenizing a body takes longer than receiving it: at saturation the index falls behind and
# catches up afterwards.
BUSY_SHARE = 0.5
YIELD_SHARE = 0.05

_INDEXED = (
    "COALESCE(webhook_id, ''), COALESCE(topic, ''), "
    f"CAST(substr(body, 1, {INDEX_BODY_BYTES}) AS TEXT)"
)
_CREATE = """
CREATE VIRTUAL TABLE IF NOT EXISTS attempts_fts USING fts5(
    webhook_id, topic, body, content='', tokenize='trigram', detail=none
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('indexed_upto', '0');
"""


def _row_mark(row: str) -> str:
    """The SQL of what tells a history row from another of the same id (``row``: its alias)."""
    return f"CAST({row}.received_at_ms AS TEXT) || ':' || IFNULL({row}.webhook_id, '')"


def mark_sql(index: str, history: str) -> str:
    """The last history row the index (attached as ``index``) holds, or NULL when it is the
    index of another history than the one attached as ``history``: its last row is past the
    history's newest (ids below the history's ``fts_indexed_upto`` are never handed out again),
    it has no mark (written before marks were kept), or its last row is in the history as another
    row. A row pruned since is no sign either way."""
    return f"""
SELECT CASE
    WHEN u.upto <= 0 THEN 0
    WHEN u.upto > MAX(
        (SELECT COALESCE(MAX(id), 0) FROM {history}.attempts),
        COALESCE((SELECT CAST(value AS INTEGER) FROM {history}.meta
            WHERE key = 'fts_indexed_upto'), 0)) THEN NULL
    WHEN m.value IS NULL THEN NULL
    WHEN EXISTS (SELECT 1 FROM {history}.attempts a WHERE a.id = u.upto
        AND ({_row_mark("a")}) IS NOT m.value) THEN NULL
    ELSE u.upto END
FROM (SELECT CAST(value AS INTEGER) AS upto FROM {index}.meta WHERE key = 'indexed_upto') u
LEFT JOIN {index}.meta m ON m.key = 'indexed_mark'
"""


# What a search reads before it uses the index attached as ``idx``: rows past it are committed
# but not indexed yet (the indexer runs behind the writer), and are looked at one by one; NULL
# (the index of another history) and every row is.
INDEXED_UPTO_SQL = mark_sql("idx", "main")


# The rows of one chunk, copied from the history before the index is written (index_chunk).
_PENDING = (
    "CREATE TEMP TABLE IF NOT EXISTS pending "
    "(id INTEGER PRIMARY KEY, webhook_id TEXT, topic TEXT, body TEXT, mark TEXT)"
)

log = logging.getLogger(__name__)


def index_path(path: Path) -> Path:
    """Where the search index of the history at ``path`` lives."""
    return path.with_name(path.name + SUFFIX)


def connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """The index's connection with the history attached as ``history``; a damaged index file is
    moved aside and a new one is built."""
    try:
        return _connect(path, busy_timeout_ms)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "malformed" not in str(exc):
            raise
    discard(path)
    return _connect(path, busy_timeout_ms)


def discard(path: Path) -> None:
    """Remove the index file (and its companions): it is rebuilt from the rows."""
    for file in tables.companions(index_path(path)):
        with contextlib.suppress(FileNotFoundError):  # already gone
            os.unlink(file)


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    ipath = index_path(path)
    tables.make_private(ipath)
    db = sqlite3.connect(ipath, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = OFF")  # rebuildable: no fsync for the index
        db.executescript(_CREATE)
        check(db)
        db.execute(_PENDING)
        db.execute("ATTACH DATABASE ? AS history", (str(path),))
    except BaseException:
        db.close()
        raise
    return db


def check(db: sqlite3.Connection) -> None:
    """A quick look that the index file is an index (raises DatabaseError if damaged)."""
    upto(db)
    db.execute("SELECT rowid FROM attempts_fts WHERE attempts_fts MATCH 'abc' LIMIT 1").fetchall()


def upto(db: sqlite3.Connection) -> int:
    row = db.execute(
        "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'indexed_upto'"
    ).fetchone()
    return int(row[0]) if row else 0


def of_this_history(db: sqlite3.Connection) -> bool:
    """Whether the index was made from the history attached (see ``mark_sql``)."""
    row = db.execute(mark_sql("main", "history")).fetchone()
    return row is not None and row[0] is not None


def start_over(db: sqlite3.Connection) -> None:
    """Empty the index: it is filled again from the history's first row."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("INSERT INTO attempts_fts(attempts_fts) VALUES ('delete-all')")
        db.execute("UPDATE meta SET value = '0' WHERE key = 'indexed_upto'")
        db.execute("DELETE FROM meta WHERE key = 'indexed_mark'")
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
            db.execute("ROLLBACK")
        raise


def index_chunk(db: sqlite3.Connection, limit: int = CHUNK) -> int:
    """Index up to ``limit`` history rows past the high-water mark; returns how many.

    Two steps, so the history is read only for as long as it takes to copy the rows: the rows
    go into a temporary table in one statement of their own (the read of the history ends with
    it), then the index is written from that table. A reader holds back the frames of the
    history's write-ahead log it may need, and so keeps the log from starting over: tokenizing
    a chunk takes far longer than copying it (see checkpoints.py).

    The index transaction starts by writing the index's mark, so two programs on one history
    never index a row twice; the history is only read (never locked for writing). An index of
    another history (``of_this_history``) is started over first.
    """
    while True:
        if not of_this_history(db):
            log.info("The search index beside %s is of another history; made again", _name(db))
            start_over(db)
        count = _index_pending(db, limit)
        if count is not None:
            return count


def _name(db: sqlite3.Connection) -> str:
    row = db.execute("SELECT file FROM pragma_database_list WHERE name = 'history'").fetchone()
    return str(row[0]) if row else "the history"


def _index_pending(db: sqlite3.Connection, limit: int) -> int | None:
    """One chunk (see ``index_chunk``); None when another program started the index over after
    the rows were copied (they are copied again)."""
    copied_after = upto(db)
    db.execute("DELETE FROM temp.pending")
    db.execute(
        f"INSERT INTO temp.pending SELECT id, {_INDEXED}, {_row_mark('a')} FROM history.attempts a "
        "WHERE id > ? ORDER BY id LIMIT ?",
        (copied_after, limit),
    )
    db.execute("BEGIN")
    try:
        db.execute("UPDATE meta SET value = value WHERE key = 'indexed_upto'")
        start = upto(db)  # another program may have indexed some meanwhile
        if start < copied_after:  # or started it over: the rows before the copy are not in it
            db.execute("COMMIT")
            return None
        row = db.execute("SELECT COUNT(*), MAX(id) FROM temp.pending WHERE id > ?", (start,))
        count, last = row.fetchone()
        if count:
            db.execute(
                "INSERT INTO attempts_fts(rowid, webhook_id, topic, body) "
                "SELECT id, webhook_id, topic, body FROM temp.pending WHERE id > ? ORDER BY id",
                (start,),
            )
            db.execute("UPDATE meta SET value = ? WHERE key = 'indexed_upto'", (str(last),))
            db.execute(
                "INSERT OR REPLACE INTO meta(key, value) "
                "SELECT 'indexed_mark', mark FROM temp.pending WHERE id = ?",
                (last,),
            )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
                db.execute("ROLLBACK")
        raise
    finally:
        with contextlib.suppress(sqlite3.Error):
            # emptying a scratch table: a failing connection says so elsewhere
            db.execute("DELETE FROM temp.pending")
    return int(count)


class Indexer:
    """The index's connection, its thread, and the loop that catches up after each commit."""

    def __init__(
        self,
        path: Path,
        db: sqlite3.Connection,
        busy_timeout_ms: int,
        thread: SqliteThread | None = None,
    ) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = db
        self._busy_timeout_ms = busy_timeout_ms
        self._thread = thread or SqliteThread("store-indexer")  # the one that opened ``db``
        self._wake = asyncio.Event()
        self._now = asyncio.Event()  # settled() waits: index without coalescing
        self._behind = True  # unknown at open
        self._task: asyncio.Task[None] | None = None
        self.pace = Pace(max_share=BUSY_SHARE, yield_share=YIELD_SHARE)
        self.failures = 0

    @classmethod
    async def open(cls, path: Path, busy_timeout_ms: int) -> Indexer:
        """Open (or rebuild) the index and index what a crash left out, up to OPEN_CHUNKS."""
        thread = SqliteThread("store-indexer")
        try:
            db = await thread.run(connect, path, busy_timeout_ms)
        except BaseException:
            thread.close()
            raise
        indexer = cls(path, db, busy_timeout_ms, thread)
        try:
            for _ in range(OPEN_CHUNKS):
                if (await indexer._run_step())[0] < CHUNK:
                    indexer._behind = False
                    break
        except BaseException:
            await indexer.close()
            raise
        return indexer

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="store-indexer")
        if self._behind:
            self._wake.set()

    def wake(self, batch: object = None) -> None:
        """New rows were committed: index them soon (a listener of the writer; ``batch``: the
        rows of that commit)."""
        if batch is not None:
            self.pace.arrived(batch)
        self._behind = True
        self._wake.set()

    def hurry(self) -> None:
        """Index what is committed now, without waiting for more commits or a pause first."""
        self._now.set()
        self.pace.hurry()

    @property
    def idle(self) -> bool:
        """Every row committed before the last wake-up is searchable (or indexing failed)."""
        return not self._behind

    async def _run_step(self) -> tuple[int, float]:
        return await self._thread.run(self._step)

    def _step(self) -> tuple[int, float]:
        """One chunk, on the index's thread (with the connection it has then: see disconnect):
        the rows indexed, and the CPU time that took."""
        started = time.thread_time()
        count = index_chunk(self._db, CHUNK) if self._db is not None else 0
        return count, time.thread_time() - started

    async def disconnect(self) -> None:
        """Close the connection after the step under way (the history is started over)."""

        def close() -> None:
            db, self._db = self._db, None
            if db is not None:
                db.close()

        with suppressed(log, "closing the search index"):
            await self._thread.run(close)

    async def connect(self) -> None:
        """Open the index of the history at the path again (it exists: the writer made it); an
        index of the history that was deleted is started over (see ``_connect``)."""
        self._db = await self._thread.run(connect, self.path, self._busy_timeout_ms)
        self.wake()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            if not self._now.is_set():
                # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows the cancel
                # close() sends when settled() hurries it at the same moment (close() would
                # then wait forever).
                with contextlib.suppress(TimeoutError):  # the coalescing wait ended
                    async with asyncio.timeout(COALESCE_S):
                        await self._now.wait()
            self._now.clear()
            self._wake.clear()
            try:
                await self._catch_up()
            except Exception:  # nothing stored is at stake
                log.info("Indexing the history for search failed; tried again", exc_info=True)
                self.failures += 1
                await self._recover()
                self._behind = False  # settled() must not wait for an index that cannot be made
                await asyncio.sleep(RETRY_S)
                continue
            if not self._wake.is_set():
                self._behind = False

    async def _catch_up(self) -> None:
        """Index every row committed, a chunk at a step; while commits keep arriving, each step
        is followed by a pause that leaves the cores to the receiver (``pacing.py``)."""
        while True:
            began = time.monotonic()
            count, cpu = await self._run_step()  # in SQLite: its CPU time is what it takes
            self.pace.measure(count, cpu)
            caught_up = count < CHUNK  # the next step coalesces first: part of the pause
            if not self._now.is_set():
                await self.pace.pause(cpu, began, then=COALESCE_S if caught_up else 0.0)
            if caught_up:
                return

    async def _recover(self) -> None:
        """A damaged index file is rebuilt; anything else (locked, a damaged history) waits."""
        if self._db is None or not self.path.exists():
            return  # the history is being started over: it opens the index again
        try:
            await self._thread.run(check, self._db)
        except sqlite3.DatabaseError:
            log.info("The search index %s is damaged; it is made again", self.path)
            with suppressed(log, "closing the damaged search index"):
                await self._thread.run(self._db.close)
            with suppressed(log, "making the search index again"):
                await self._thread.run(discard, self.path)
                self._db = await self._thread.run(connect, self.path, self._busy_timeout_ms)
                self._wake.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await self._task
        await self.disconnect()
        self._thread.close()
