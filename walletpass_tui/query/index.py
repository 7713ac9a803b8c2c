"""The field index: every stored body's values by path, in a file of its own next to the history.

``<history>-fields`` (0600, WAL, no fsync: it is rebuilt from the rows whenever it is missing,
damaged or of another history) holds

* ``paths``: each path seen (the learned schema's syntax), at most MAX_PATHS of them, with how many
  rows hold it;
* ``fv``: one entry per (path, row, value), ordered by path then row id (``WITHOUT ROWID``). A
  query reads one path's entries in row-id order, so the newest matches of a common value come at
  once and a count is one pass over one path's entries, never a parse of a body. A container is
  an entry with an empty blob (``has:`` finds it);
* ``few``: the values of the paths that took at most FEW_VALUES distinct ones (the filter box
  offers them), with their counts;
* ``meta``: ``indexed_upto``, the last history row indexed, and ``indexed_mark``, what tells that
  row from another row of the same id (when it arrived, its webhook-id: the schema learner's mark).

An index is used only for the history it was made from (``mark_sql``): one whose last row is past
the history's newest, or whose last row is in the history as another row (a history deleted and
started again, an index copied from another home), is started over by the indexer and not used by
a query meanwhile (every row is read one by one).

``Fields.step()`` indexes the rows after the mark: it copies a chunk of rows (at most CHUNK rows and
CHUNK_BYTES of bodies) out of the history in one statement, reads them with ``values.body_fields``
(the learner's rules) and writes their entries in one transaction that first moves the mark, so two
programs never index a row twice. It only reads the history, through WAL, never locking it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from walletpass_tui.query.values import body_fields
from walletpass_tui.webhooks.store import tables
from walletpass_tui.webhooks.store.files import FileId, file_id

log = logging.getLogger(__name__)

SUFFIX = "-fields"
FORMAT = "3"
CHUNK = 512  # rows per index transaction
CHUNK_BYTES = 8 * 1024 * 1024  # of bodies per chunk (a chunk takes at least one row)
MAX_PATHS = 10_000  # paths indexed; values at further new paths are not
FEW_VALUES = 12  # distinct values a path may take and still have them offered


def _row_mark(row: str) -> str:
    """The SQL of what tells a history row from another of the same id (``row``: its alias)."""
    return f"CAST({row}.received_at_ms AS TEXT) || ':' || IFNULL({row}.webhook_id, '')"


def mark_sql(index: str, history: str) -> str:
    """The last history row the index (attached as ``index``) holds, or NULL when it is the index
    of another history than the one attached as ``history``: its last row is past the history's
    newest, or is in the history as another row. A row pruned since is no sign either way."""
    return f"""
SELECT CASE
    WHEN u.upto <= 0 THEN 0
    WHEN u.upto > (SELECT COALESCE(MAX(id), 0) FROM {history}.attempts) THEN NULL
    WHEN EXISTS (SELECT 1 FROM {history}.attempts a WHERE a.id = u.upto
        AND ({_row_mark("a")}) IS NOT m.value) THEN NULL
    ELSE u.upto END
FROM (SELECT CAST(value AS INTEGER) AS upto FROM {index}.meta WHERE key = 'indexed_upto') u
LEFT JOIN {index}.meta m ON m.key = 'indexed_mark'
"""


# What a query reads (the index attached as ``fx`` to the history's connection).
MARK_SQL = mark_sql("fx", "main")

_CREATE = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('indexed_upto', '0');
INSERT OR IGNORE INTO meta(key, value) VALUES ('indexed_mark', '');
INSERT OR IGNORE INTO meta(key, value) VALUES ('format', '{FORMAT}');
CREATE TABLE IF NOT EXISTS paths (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL UNIQUE,
    rows INTEGER NOT NULL DEFAULT 0,
    many INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS fv (
    path INTEGER NOT NULL,
    id INTEGER NOT NULL,
    value NOT NULL,
    PRIMARY KEY (path, id, value)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS few (
    path INTEGER NOT NULL,
    value NOT NULL,
    count INTEGER NOT NULL,
    shown TEXT,
    PRIMARY KEY (path, value)
) WITHOUT ROWID;
"""

# The sizes first (no body is read), then the bodies of the rows that fit.
_NEXT_SIZES = "SELECT id, length(body) FROM history.attempts WHERE id > ? ORDER BY id LIMIT ?"
_BODIES = f"SELECT id, body, {_row_mark('a')} FROM history.attempts a WHERE id > ? AND id <= ? ORDER BY id"


def index_path(history: Path) -> Path:
    """Where the field index of the history at ``history`` is."""
    history = Path(history)
    return history.with_name(history.name + SUFFIX)


def discard(history: Path) -> None:
    """Remove the field index (and its companions): it is made again from the rows."""
    for file in tables.companions(index_path(history)):
        with contextlib.suppress(FileNotFoundError):  # already gone
            os.unlink(file)


@dataclass
class Step:
    rows: int = 0  # history rows read
    upto: int = 0  # the mark after the step


class Fields:
    """The index's connection (the history attached read-only as ``history``): one thread."""

    def __init__(self, history: Path, busy_timeout_ms: int = 5000) -> None:
        self.history = Path(history)
        self.path = index_path(self.history)
        self.busy_timeout_ms = busy_timeout_ms
        self._db: sqlite3.Connection | None = None
        self._paths: dict[str, int] = {}
        self._many: set[int] = set()
        self._files: tuple[FileId | None, FileId | None] = (None, None)  # index, history
        self._upto = 0  # the mark after the last step

    # -- opening -----------------------------------------------------------------------------

    def open(self) -> None:
        """Open the index, making it anew when it is damaged, foreign or of another history."""
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "malformed" not in str(exc):
                raise  # locked, unreadable: the caller tries again later
            log.info("The field index %s is damaged (%s); it is made again", self.path, exc)
            self.close()
            discard(self.history)
            self._open()

    def _open(self) -> None:
        history = file_id(self.history)  # before ATTACH: a history replaced meanwhile is followed
        if history is None:  # ATTACH would create an empty one
            raise sqlite3.OperationalError(f"there is no history at {self.history} to index")
        tables.make_private(self.path)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = OFF")  # rebuildable: no fsync
            for statement in tables.split_sql(_CREATE):
                db.execute(statement)
            found = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if found is None or found[0] != FORMAT:
                raise sqlite3.DatabaseError("database disk image is malformed (not a field index)")
            # Only read (nothing here writes to it): through WAL, never taking its write lock.
            db.execute("ATTACH DATABASE ? AS history", (str(self.history),))
        except BaseException:
            db.close()
            raise
        self._db = db
        self._files = (file_id(self.path), history)
        if not self.of_this_history():
            self.start_over()  # the index of another history (started again, or copied here)
        self._load_paths()
        self._upto = self.upto()

    def current(self) -> bool:
        """Whether the index and the history at their paths are the files it has open (one
        ``stat`` of each): either deleted or replaced, it opens them again (``step``)."""
        return self._db is not None and (file_id(self.path), file_id(self.history)) == self._files

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):  # closing: nothing is left to save
                db.close()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise sqlite3.OperationalError("the field index is not open")
        return self._db

    def _load_paths(self) -> None:
        rows = self._conn().execute("SELECT text, id, many FROM paths").fetchall()
        self._paths = {str(text): int(pid) for text, pid, _ in rows}
        self._many = {int(pid) for _, pid, many in rows if many}

    # -- marks -------------------------------------------------------------------------------

    def upto(self) -> int:
        row = (
            self._conn()
            .execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'indexed_upto'")
            .fetchone()
        )
        return int(row[0]) if row else 0

    def top(self) -> int:
        """The newest row of the history (0: none)."""
        row = self._conn().execute("SELECT COALESCE(MAX(id), 0) FROM history.attempts").fetchone()
        return int(row[0]) if row else 0

    def of_this_history(self) -> bool:
        """Whether the index was made from the history attached (see ``mark_sql``)."""
        row = self._conn().execute(mark_sql("main", "history")).fetchone()
        return row is not None and row[0] is not None

    def start_over(self) -> None:
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            for table in ("fv", "few", "paths"):
                db.execute(f"DELETE FROM {table}")
            db.execute("UPDATE meta SET value = '0' WHERE key = 'indexed_upto'")
            db.execute("UPDATE meta SET value = '' WHERE key = 'indexed_mark'")
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
                db.execute("ROLLBACK")
            raise
        self._paths, self._many = {}, set()

    # -- indexing ----------------------------------------------------------------------------

    def step(self, limit: int = CHUNK) -> Step:
        """Index up to ``limit`` rows past the mark (fewer when their bodies are large). The index
        deleted or replaced, or the history started over at its path, is opened again first (an
        index of another history is started over); while no history is there, nothing is done."""
        if not self.current():
            self.close()  # before a new file is made: closing removes a -wal by its name
            if not self.history.is_file():  # being started over: its store makes it
                return Step(0, self._upto)
            self.open()
        db = self._conn()
        if not self.of_this_history():  # the history was started over under us
            self.start_over()
        start = self.upto()
        sizes = db.execute(_NEXT_SIZES, (start, limit)).fetchall()
        if not sizes:
            self._upto = start
            return Step(0, start)
        last, total = sizes[0][0], 0
        for row_id, size in sizes:
            total += int(size or 0)
            if total > CHUNK_BYTES and row_id != sizes[0][0]:
                break
            last = row_id
        rows = db.execute(_BODIES, (start, last)).fetchall()
        entries: list[tuple[str, int, object]] = []
        written: dict[str, str] = {}
        # What tells the last row from another of its id ("": pruned meanwhile, no sign).
        mark = str(rows[-1][2]) if rows and rows[-1][0] == last else ""
        for row_id, body, _ in rows:
            if isinstance(body, str):
                body = body.encode("utf-8", "surrogatepass")
            found = body_fields(body or b"")
            for path, values in found.values.items():
                for value in dict.fromkeys(values):
                    entries.append((path, int(row_id), value))
            for folded, text in found.written.items():
                written.setdefault(folded, text)
        self._write(start, int(last), mark, entries, written)
        self._upto = int(last)
        return Step(len(rows), int(last))

    def _write(
        self,
        start: int,
        last: int,
        mark: str,
        entries: list[tuple[str, int, object]],
        written: dict[str, str],
    ) -> None:
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            if self.upto() != start:  # another program indexed these meanwhile
                db.execute("ROLLBACK")
                return
            ids = self._ids(dict.fromkeys(path for path, _, _ in entries))
            rows: Counter[int] = Counter()
            few: Counter[tuple[int, object]] = Counter()
            kept: list[tuple[int, int, object]] = []
            seen: set[tuple[int, int]] = set()
            for path, row_id, value in entries:
                pid = ids.get(path)
                if pid is None:
                    continue  # beyond MAX_PATHS
                kept.append((pid, row_id, value))
                if (pid, row_id) not in seen:
                    seen.add((pid, row_id))
                    rows[pid] += 1
                if pid not in self._many and value != b"":
                    few[(pid, value)] += 1
            db.executemany("INSERT OR IGNORE INTO fv (path, id, value) VALUES (?, ?, ?)", kept)
            db.executemany(
                "UPDATE paths SET rows = rows + ? WHERE id = ?", [(n, p) for p, n in rows.items()]
            )
            many = self._count_few(few, written)
            db.execute("UPDATE meta SET value = ? WHERE key = 'indexed_upto'", (str(last),))
            db.execute("UPDATE meta SET value = ? WHERE key = 'indexed_mark'", (mark,))
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
                db.execute("ROLLBACK")
            self._load_paths()  # ids handed out in the rolled back transaction are gone
            raise
        self._many |= many

    def _ids(self, paths: Iterable[str]) -> dict[str, int]:
        """Each path's id, a new one made for each new path in order while there is room."""
        db = self._conn()
        out: dict[str, int] = {}
        for path in paths:
            pid = self._paths.get(path)
            if pid is None:
                if len(self._paths) >= MAX_PATHS:
                    continue
                found = db.execute("INSERT INTO paths (text) VALUES (?) RETURNING id", (path,))
                pid = int(found.fetchone()[0])
                self._paths[path] = pid
            out[path] = pid
        return out

    def _count_few(self, few: Counter[tuple[int, object]], written: dict[str, str]) -> set[int]:
        """Add the chunk's values of the paths with few (with the text of the first one seen,
        as written); those that now have more are marked (and their values dropped). Returns
        the paths marked."""
        db = self._conn()
        db.executemany(
            "INSERT INTO few (path, value, count, shown) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (path, value) DO UPDATE SET count = count + excluded.count",
            [
                (p, v, n, written.get(v) if isinstance(v, str) else None)
                for (p, v), n in few.items()
            ],
        )
        touched = {p for p, _ in few}
        many: set[int] = set()
        for pid in touched:
            (distinct,) = db.execute("SELECT COUNT(*) FROM few WHERE path = ?", (pid,)).fetchone()
            if distinct > FEW_VALUES:
                many.add(pid)
                db.execute("DELETE FROM few WHERE path = ?", (pid,))
                db.execute("UPDATE paths SET many = 1 WHERE id = ?", (pid,))
        return many
