"""The schema file: ``<history>-schemas`` beside the history, 0600, WAL, never fsynced (it can
always be learned again from the history), its format, and opening it with the history attached.

A file that is damaged, foreign or of another format is deleted and made anew; nothing stored in
the history is ever at stake. The catalog's rows in it are read and written by ``storage.py``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.webhooks.store import tables as history_tables

log = logging.getLogger(__name__)

SUFFIX = "-schemas"
FORMAT = 4  # PRAGMA user_version of the schema file; another one is rebuilt

_CREATE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('learned_upto', '0'), ('version', '0'),
    ('topics_not_learned', '0');
CREATE TABLE IF NOT EXISTS groups (
    grp TEXT PRIMARY KEY,
    samples INTEGER NOT NULL,
    not_json INTEGER NOT NULL,
    next_seq INTEGER NOT NULL,
    untracked BLOB NOT NULL,
    untracked_more INTEGER NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    last_webhook_id TEXT,
    skipped INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS paths (
    grp TEXT NOT NULL,
    path TEXT NOT NULL,
    parent TEXT,
    segment TEXT NOT NULL,
    key TEXT NOT NULL,
    depth INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    types TEXT NOT NULL,
    seen INTEGER NOT NULL,
    holders INTEGER NOT NULL,
    objects INTEGER NOT NULL,
    arrays INTEGER NOT NULL,
    example TEXT,
    open INTEGER NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    first_webhook_id TEXT,
    first_attempt_id INTEGER,
    last_seen_ms INTEGER NOT NULL,
    last_webhook_id TEXT,
    vals TEXT,
    PRIMARY KEY (grp, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS drift (
    id INTEGER PRIMARY KEY,
    grp TEXT NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    was TEXT,
    now TEXT,
    baseline TEXT NOT NULL,
    attempt_id INTEGER,
    webhook_id TEXT,
    seen_at_ms INTEGER NOT NULL,
    count INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    variant TEXT NOT NULL DEFAULT '',
    note TEXT,
    UNIQUE (grp, path, kind, variant)
);
CREATE INDEX IF NOT EXISTS drift_by_attempt ON drift(attempt_id);
CREATE INDEX IF NOT EXISTS drift_by_time ON drift(seen_at_ms, id);
CREATE TABLE IF NOT EXISTS templates_seen (digest BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skipped (
    attempt_id INTEGER PRIMARY KEY,
    grp TEXT NOT NULL,
    webhook_id TEXT,
    seen_at_ms INTEGER NOT NULL,
    why TEXT NOT NULL
);
"""

_TABLES = ("meta", "groups", "paths", "drift", "templates_seen", "skipped")


def schemas_path(history: Path) -> Path:
    """Where the schemas learned from the history at ``history`` are kept."""
    return history.with_name(history.name + SUFFIX)


def discard(history: Path) -> None:
    """Delete the schema file and its companions: it is learned again from the history."""
    for file in history_tables.companions(schemas_path(history)):
        with contextlib.suppress(FileNotFoundError):  # already gone
            os.unlink(file)


def connect(
    history: Path, busy_timeout_ms: int, *, history_optional: bool = False
) -> sqlite3.Connection:
    """The schema file's connection, the history attached as ``history`` (read only by us); a
    damaged or foreign file is deleted and made anew. With ``history_optional`` a history that
    does not exist yet reads as an empty one (the templates are learned before any delivery)."""
    try:
        return _connect(history, busy_timeout_ms, history_optional)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and not _damaged(exc):
            raise  # locked, unreadable directory...: not the file's fault
        what = "is not one this program made" if isinstance(exc, Foreign) else "is damaged"
        log.info("the schema file of %s %s (%s): it is made anew", history, what, exc)
    discard(history)
    return _connect(history, busy_timeout_ms, history_optional)


class Foreign(sqlite3.DatabaseError):
    """What is at the schema path is not a file this program made (a symlink, another
    program's database, a table of ours with other columns): it is deleted, never written
    into (a symlink's target is left alone), and made anew."""


@functools.cache
def _layout() -> tuple[dict[str, list[tuple[Any, ...]]], set[str]]:
    """Our tables (each one's columns as ``PRAGMA table_info`` gives them) and indexes."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(_CREATE)
        return _layout_of(db)
    finally:
        db.close()


def _layout_of(db: sqlite3.Connection) -> tuple[dict[str, list[tuple[Any, ...]]], set[str]]:
    tables: dict[str, list[tuple[Any, ...]]] = {}
    indexes: set[str] = set()
    for kind, name in db.execute(
        "SELECT type, name FROM main.sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    ).fetchall():
        if kind == "table":
            tables[name] = db.execute(f"PRAGMA main.table_info({_quoted(name)})").fetchall()
        elif kind == "index":
            indexes.add(name)
        else:  # a view or a trigger: never ours
            tables[f"{kind} {name}"] = []
    return tables, indexes


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def not_ours(db: sqlite3.Connection) -> str | None:
    """Why the open database is not a schema file this program made (or is making): a table,
    index, view or trigger it never makes, or one of its tables with other columns; None when
    everything there is ours (an empty file too). Reads only."""
    tables, indexes = _layout_of(db)
    ours, our_indexes = _layout()
    for name, columns in tables.items():
        if name not in ours:
            return f"it holds {name!r:.60}, which walletpass-tui never makes"
        if columns != ours[name]:
            return f"its table {name} has other columns than walletpass-tui gives it"
    for name in indexes - our_indexes:
        return f"it holds the index {name!r:.60}, which walletpass-tui never makes"
    return None


def links(path: Path) -> str | None:
    """``<name> is a symlink`` for the first of the schema file's files that is one (a file
    this program makes is never a link: it is deleted, never followed); None when none is."""
    for file in history_tables.companions(path):
        if os.path.islink(file):
            return f"{file.name} is a symlink"
    return None


def _damaged(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return any(w in text for w in ("malformed", "not a database", "corrupt", "no such table"))


class WrongFormat(sqlite3.DatabaseError):
    """The schema file was written in another format: rebuilt."""


# What is read of a history, as an empty one in memory: a history that does not exist yet.
_EMPTY_HISTORY = """
CREATE TABLE history.attempts (id INTEGER PRIMARY KEY, webhook_id TEXT, received_at_ms INTEGER,
    topic TEXT, verdict TEXT, body BLOB, attempt_no INTEGER, body_differs INTEGER);
CREATE TABLE history.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _connect(
    history: Path, busy_timeout_ms: int, history_optional: bool = False
) -> sqlite3.Connection:
    path = schemas_path(history)
    linked = links(path)
    if linked:  # deleted by connect(), its target never opened
        raise Foreign(linked)
    for file in (history, path):
        refused = history_tables.not_files(file)
        if refused:  # never opened: SQLite would wait on a FIFO forever
            raise SchemaError(
                f"Payload schemas cannot be learned: {refused}; move that file aside or use "
                "another --home."
            )
    missing = not history.is_file()
    if missing and not history_optional:  # ATTACH would create an empty one
        raise SchemaError(f"There is no history at {history} to learn payload schemas from.")
    history_tables.make_private(path)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = OFF")  # learned again from the history if lost
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version not in (0, FORMAT):
            raise WrongFormat(f"schema file format {version}")
        foreign = not_ours(db)  # before anything is written into it
        if foreign:
            raise Foreign(f"not a schema file: {foreign}")
        db.executescript(_CREATE)
        db.execute(f"PRAGMA user_version = {FORMAT}")
        check(db)
        if missing:
            db.execute("ATTACH DATABASE ':memory:' AS history")
            db.executescript(_EMPTY_HISTORY)
        else:
            db.execute("ATTACH DATABASE ? AS history", (str(history),))
    except BaseException:
        db.close()
        raise
    return db


def check(db: sqlite3.Connection) -> None:
    """Raise DatabaseError when the file is damaged (it is small: a full quick check)."""
    row = db.execute("PRAGMA main.quick_check").fetchone()
    if row is None or row[0] != "ok":
        raise sqlite3.DatabaseError("database disk image is malformed")
    for table in _TABLES:
        db.execute(f"SELECT * FROM main.{table} LIMIT 1").fetchall()


def identity(history: Path) -> tuple[int, int] | None:
    """The schema file's (device, inode), None when it is gone: a file deleted or replaced
    under a running learner is noticed and made anew."""
    try:
        st = os.stat(schemas_path(history))
    except OSError:  # no schema file: none to reuse
        return None
    return st.st_dev, st.st_ino
