"""The history database's schema: private files, migrations, the checks at open, and what a
failure means to a person (locked, damaged, read-only, from a newer version).

Everything here runs on the writer's thread with a plain ``sqlite3`` connection.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from walletpass_tui.logs import suppressed
from walletpass_tui.private_files import not_regular
from walletpass_tui.webhooks.models import StoreError
from walletpass_tui.webhooks.store import activity, relay_marks
from walletpass_tui.webhooks.store.checkpoints import LOG_BOUND_BYTES

log = logging.getLogger(__name__)

SCHEMA_VERSION = 9
DEFAULT_BUSY_TIMEOUT_MS = 5000
DIGEST_BYTES = 16

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        webhook_id TEXT,
        attempt_no INTEGER NOT NULL DEFAULT 1,
        received_at_ms INTEGER NOT NULL,
        remote_addr TEXT,
        forwarded_for TEXT,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        headers TEXT NOT NULL,
        body BLOB NOT NULL,
        body_size INTEGER NOT NULL,
        verdict TEXT NOT NULL,
        reason TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        endpoint_id TEXT,
        status INTEGER NOT NULL,
        processing_ms REAL NOT NULL DEFAULT 0,
        topic TEXT,
        pass_id TEXT,
        note TEXT
    );
    CREATE INDEX attempts_by_message ON attempts(webhook_id, id);
    CREATE INDEX attempts_by_verdict ON attempts(verdict, id);
    CREATE INDEX attempts_by_topic ON attempts(topic, id);
    CREATE INDEX attempts_by_time ON attempts(received_at_ms);
    CREATE TABLE messages (
        webhook_id TEXT PRIMARY KEY,
        topic TEXT,
        pass_id TEXT,
        attempts INTEGER NOT NULL,
        verified_attempts INTEGER NOT NULL,
        first_received_at_ms INTEGER NOT NULL,
        last_received_at_ms INTEGER NOT NULL,
        last_attempt_id INTEGER NOT NULL,
        reason TEXT NOT NULL,
        endpoint_id TEXT,
        last_status INTEGER NOT NULL
    );
    CREATE INDEX messages_by_last ON messages(last_received_at_ms);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    2: """
    CREATE VIRTUAL TABLE attempts_fts USING fts5(
        webhook_id, topic, body, content='', tokenize="unicode61 tokenchars '_-'"
    );
    INSERT INTO meta(key, value) VALUES ('fts_indexed_upto', '0')
        ON CONFLICT(key) DO NOTHING;
    """,
    3: """
    CREATE TABLE forwards (
        id INTEGER PRIMARY KEY,
        attempt_id INTEGER NOT NULL,
        webhook_id TEXT,
        kind TEXT NOT NULL,
        mode TEXT NOT NULL,
        target TEXT NOT NULL,
        state TEXT NOT NULL,
        tries INTEGER NOT NULL DEFAULT 0,
        next_try_at_ms INTEGER NOT NULL DEFAULT 0,
        created_at_ms INTEGER NOT NULL,
        finished_at_ms INTEGER,
        status INTEGER,
        latency_ms REAL,
        response_headers TEXT,
        response_body BLOB,
        error TEXT,
        note TEXT,
        request_body BLOB
    );
    CREATE INDEX forwards_pending ON forwards(state, target, id);
    CREATE INDEX forwards_by_message ON forwards(webhook_id, id);
    """,
    # Search by any part of a word (trigrams); the index is rebuilt in the background after the
    # upgrade. Each message remembers a digest of its first body, so a later attempt with the same
    # webhook-id but another body is flagged.
    4: """
    DROP TABLE attempts_fts;
    CREATE VIRTUAL TABLE attempts_fts USING fts5(
        webhook_id, topic, body, content='', tokenize='trigram', detail=none
    );
    UPDATE meta SET value = '0' WHERE key = 'fts_indexed_upto';
    ALTER TABLE attempts ADD COLUMN body_differs INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN first_digest BLOB;
    UPDATE messages SET first_digest = (
        SELECT wp_digest(a.topic, a.body) FROM attempts a
        WHERE a.webhook_id = messages.webhook_id ORDER BY a.id LIMIT 1
    );
    UPDATE attempts SET body_differs = 1 WHERE attempt_no > 1 AND webhook_id IS NOT NULL
        AND wp_digest(topic, body) IS NOT (
            SELECT m.first_digest FROM messages m WHERE m.webhook_id = attempts.webhook_id
        );
    """,
    # Deliveries that came through a relay: its subscribe URL and the channel's cursor, stored in
    # the delivery's own commit, so a restart resumes after the last one and never stores one twice.
    5: """
    ALTER TABLE attempts ADD COLUMN relay_url TEXT;
    ALTER TABLE attempts ADD COLUMN relay_cursor INTEGER;
    CREATE UNIQUE INDEX attempts_by_relay ON attempts(relay_url, relay_cursor)
        WHERE relay_cursor IS NOT NULL;
    """,
    # The search index moved to a file of its own (indexer.py), filled off the commit path. The
    # meta key stays: ids at or below it are never handed out again.
    6: """
    DROP TABLE IF EXISTS attempts_fts;
    """,
    # A relay link's low-water mark: every cursor at or below it is stored (see relay_marks.py).
    # A link resumes after it, so a delivery whose write failed is fetched again even when later
    # ones were committed before the process died.
    7: """
    CREATE TABLE relay_marks (relay_url TEXT PRIMARY KEY, low_water INTEGER NOT NULL);
    """,
    # The history counted by minute as it is written (activity.py; an existing history is
    # counted once by the upgrade, see UPGRADES); forwards found by when they were queued (the
    # activity query) and by their attempt (pruning).
    8: f"""
    {activity.CREATE};
    CREATE INDEX forwards_by_time ON forwards(created_at_ms);
    CREATE INDEX forwards_by_attempt ON forwards(attempt_id);
    """,
    # Relayed deliveries and marks kept by channel, not by the subscribe URL's spelling (filled by
    # relay_marks.by_channel, see UPGRADES): the same channel under another URL is not fetched,
    # stored or forwarded again.
    9: """
    ALTER TABLE attempts ADD COLUMN relay_channel TEXT;
    DROP INDEX attempts_by_relay;
    CREATE UNIQUE INDEX attempts_by_relay ON attempts(relay_channel, relay_cursor)
        WHERE relay_channel IS NOT NULL;
    ALTER TABLE relay_marks RENAME TO relay_marks_by_url;
    CREATE TABLE relay_marks (channel TEXT PRIMARY KEY, low_water INTEGER NOT NULL);
    """,
}

Progress = Callable[[int, int], None]  # (done, total) while an upgrade counts an old history

# Work of a migration step beyond its SQL, in the same transaction.
UPGRADES: dict[int, Callable[[sqlite3.Connection, Progress | None], None]] = {
    8: activity.build,
    9: relay_marks.by_channel,
}


def digest(topic: str | None, body: bytes) -> bytes:
    """What two attempts of one message must share: a hash of the topic and the body bytes."""
    h = hashlib.blake2b(digest_size=DIGEST_BYTES)
    h.update((topic or "").encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(body)
    return h.digest()


# -- private files --------------------------------------------------------------------------------


def companions(path: Path) -> tuple[Path, ...]:
    """The database file and the files SQLite keeps next to it."""
    return (path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")))


def not_files(path: Path) -> str | None:
    """Why SQLite must not open the database at ``path``: ``<file> is a FIFO, not a regular
    file`` for the first of its files (the database, its log, its shared memory, its journal)
    that is a FIFO, a device, a socket or a directory, which SQLite would wait on forever or
    misuse; None when each is a regular file or missing. Every opening of a home's database
    asks this first (a stat each, nothing opened)."""
    for file in companions(path):
        try:
            refused = not_regular(os.stat(file))
        except OSError:  # missing (SQLite makes it), or SQLite says what is wrong
            continue
        if refused:
            return f"{file} is {refused}"
    return None


def make_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does, and tighten any existing companion.
    OSError (EINVAL) when one of its files is not a regular file (:func:`not_files`).

    SQLite creates ``-wal`` and ``-shm`` with the database file's mode, so once the file is 0600
    they are too, whatever the umask and the directory's mode.

    Only a missing file is opened here: closing any descriptor of a file drops every POSIX lock
    the process holds on it, and another connection of this process may hold SQLite's (a second
    store on the same history, the relay's connections); an existing file is only chmod-ed.
    """
    refused = not_files(path)
    if refused:
        raise OSError(errno.EINVAL, refused)
    if not path.exists():
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process: fine
            os.close(os.open(path, flags, 0o600))
    for file in companions(path):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            # gone or not ours: SQLite says so when it opens it
            if file.stat().st_mode & 0o077:
                os.chmod(file, 0o600)


# -- opening --------------------------------------------------------------------------------------


def connect_writer(
    path: Path,
    busy_timeout_ms: int,
    log_limit_bytes: int = LOG_BOUND_BYTES // 2,
    progress: Progress | None = None,
) -> sqlite3.Connection:
    """The one write connection: private file, WAL (synced by wal_sync), migrated, checked and probed.

    Raises StoreError (with what to do) for every problem, so none surfaces mid-request.
    ``progress(done, total)``: how far an upgrade that counts an old history got.
    """
    try:
        make_private(path)
    except OSError as exc:
        raise StoreError(explain(exc, path)) from None
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.create_function("wp_digest", 2, digest, deterministic=True)
        configure(db, busy_timeout_ms, log_limit_bytes)
        migrate(db, path, progress)
        quick_check(db)
        probe_write(db)
    except StoreError:
        _close(db)
        raise
    except (sqlite3.Error, ValueError, OSError) as exc:
        _close(db)
        raise StoreError(explain(exc, path)) from None
    return db


def configure(
    db: sqlite3.Connection, busy_timeout_ms: int, log_limit_bytes: int = LOG_BOUND_BYTES // 2
) -> None:
    db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    row = db.execute("PRAGMA journal_mode = WAL").fetchone()
    if row is None or str(row[0]).lower() != "wal":
        raise sqlite3.OperationalError("attempt to write a readonly database")
    # NORMAL: a commit writes the log without waiting for the disk; the writer then fsyncs the
    # log on a thread of its own before anybody hears of the commit (wal_sync.py), so every
    # commit is on disk before a webhook is acknowledged, and the next batch need not wait.
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    # Checkpoints run on their own connection, off the acknowledgement path (see writer.py).
    db.execute("PRAGMA wal_autocheckpoint = 0")
    # A log started over is cut back to this size (see checkpoints.py).
    db.execute(f"PRAGMA journal_size_limit = {int(log_limit_bytes)}")


def migrate(db: sqlite3.Connection, path: Path, progress: Progress | None = None) -> None:
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise too_new(version, path)
    if version == SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        # Another program (a second receiver started at the same moment) may have migrated
        # while this one waited for the write lock: the version is read again under the lock.
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise too_new(version, path)
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in split_sql(MIGRATIONS[step]):
                db.execute(statement)
            upgrade = UPGRADES.get(step)
            if upgrade is not None:
                upgrade(db, progress)
            db.execute(f"PRAGMA user_version = {step}")
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
            db.execute("ROLLBACK")
        raise


def too_new(version: int, path: Path) -> StoreError:
    return StoreError(
        f"The history database {path} was written by a newer walletpass-tui (schema "
        f"{version}, this one knows {SCHEMA_VERSION}); upgrade walletpass-tui or use another "
        "--home."
    )


_TABLES = ("attempts", "messages", "meta", "forwards", "activity")


def quick_check(db: sqlite3.Connection) -> None:
    """A check whose cost does not grow with the file: the schema, and the first and last rows of
    every table and index (the pages a write touches first). SQLite's own checks walk the whole
    file; this catches a damaged header, a cut-off file and a garbled schema in milliseconds."""
    names = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master")}
    missing = [t for t in _TABLES if t not in names]
    if missing:
        raise sqlite3.DatabaseError(f"database disk image is malformed (no {missing[0]} table)")
    for table in _TABLES:
        key = "minute" if table == "activity" else "rowid"  # activity has no rowid
        for order in ("ASC", "DESC"):
            db.execute(f"SELECT * FROM {table} ORDER BY {key} {order} LIMIT 1").fetchall()
    # One MIN or MAX per query: SQLite answers those from the index's edge; two in one query
    # would scan the whole index.
    for table, column in _INDEXED_COLUMNS:
        for edge in ("MIN", "MAX"):
            db.execute(f"SELECT {edge}({column}) FROM {table}").fetchall()


_INDEXED_COLUMNS = (
    ("attempts", "received_at_ms"),
    ("attempts", "webhook_id"),
    ("attempts", "verdict"),
    ("attempts", "topic"),
    ("messages", "webhook_id"),
    ("messages", "last_received_at_ms"),
    ("forwards", "state"),
    ("forwards", "webhook_id"),
)


def probe_write(db: sqlite3.Connection) -> None:
    """SQLite notices a read-only file or another program's write lock only at the first write:
    write (and roll it back) now, so it is reported at open."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("UPDATE meta SET value = value WHERE key = 'fts_indexed_upto'")
    finally:
        db.execute("ROLLBACK")


def split_sql(script: str) -> list[str]:
    statements, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        joined = "\n".join(current)
        if sqlite3.complete_statement(joined):
            statements.append(joined.strip())
            current = []
    return [s for s in statements if s]


def _close(db: sqlite3.Connection | None) -> None:
    if db is not None:
        with suppressed(log, "closing the history"):
            db.close()


# -- what a failure means -------------------------------------------------------------------------


FULL_BELOW_BYTES = 1024 * 1024  # free space under which "disk I/O error" means a full disk


def disk_is_full(path: Path) -> bool:
    """Whether the file system holding ``path`` has (next to) no space left: SQLite says "disk
    I/O error", not "disk is full", when its ``-shm`` cannot grow on a full disk."""
    try:
        found = os.statvfs(path.parent)
    except (OSError, AttributeError):  # gone, or no statvfs (Windows)
        return False
    return found.f_bavail * found.f_frsize < FULL_BELOW_BYTES


def explain(exc: BaseException, path: Path) -> str:
    """One sentence naming the file, what is wrong and what to do."""
    if isinstance(exc, StoreError):
        return str(exc)
    text = str(exc).lower()
    if "not a regular file" in text:  # not_files: never opened
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return (
            f"The history database {path} cannot be used ({why}); move that file aside (a new "
            "one is made) or use another --home."
        )
    if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
        text = f"{exc.strerror or exc}".lower()
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"The disk holding {path} is full; free some space, then try again."
        if "permission" in text or "read-only" in text:
            return f"The history database {path} cannot be written; check its permissions or use another --home."
        return f"The history database {path} cannot be opened ({exc.strerror or exc}); check the directory exists and is writable."
    if "locked" in text or "busy" in text:
        return (
            f"The history database {path} is locked by another program; close it (another "
            "walletpass-tui?) or use another --home."
        )
    if "readonly" in text or "read-only" in text or "permission" in text:
        return f"The history database {path} cannot be written; check its permissions or use another --home."
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return (
            f"The history database {path} is damaged; move it aside (a new one will be created) "
            "or restore a backup."
        )
    if "unable to open" in text:
        return f"The history database {path} cannot be opened; check the directory exists and is writable."
    if "disk is full" in text or ("disk i/o error" in text and disk_is_full(path)):
        return f"The disk holding {path} is full; free some space, then try again."
    if "disk i/o error" in text:
        return (
            f"The history database {path} could not be written or read ({exc}); check the disk "
            "it is on (space, errors, a file size limit), then try again."
        )
    if isinstance(exc, sqlite3.Error | ValueError):
        return f"The history database {path} failed ({exc})."
    return f"Storing into {path} failed ({type(exc).__name__}: {exc})."
