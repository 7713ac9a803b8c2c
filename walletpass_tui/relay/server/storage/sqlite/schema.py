"""The relay's SQLite schema, and opening the file: WAL, ``synchronous = FULL``, foreign keys,
the file private to its user, the schema created or refused when a newer relay wrote it.

Cursors are the ``deliveries`` table's AUTOINCREMENT key: increasing in commit order and never
reused, even after pruning, so a subscriber's "after N" always means the same thing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

from walletpass_tui.private_files import ensure_private_dir
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.webhooks.store.tables import make_private

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS channels (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    slug TEXT NOT NULL UNIQUE,
    secret TEXT,
    quota_bytes INTEGER NOT NULL,
    used_bytes INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id INTEGER PRIMARY KEY,
    channel_id INTEGER NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    revoked_at_ms INTEGER
);
CREATE TABLE IF NOT EXISTS deliveries (
    cursor INTEGER PRIMARY KEY AUTOINCREMENT,
    channel_id INTEGER NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    received_at_ms INTEGER NOT NULL,
    webhook_id TEXT,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_by_channel ON deliveries (channel_id, cursor);
CREATE INDEX IF NOT EXISTS deliveries_by_time ON deliveries (received_at_ms);
CREATE TABLE IF NOT EXISTS rejected (
    id INTEGER PRIMARY KEY,
    channel_id INTEGER NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    received_at_ms INTEGER NOT NULL,
    status INTEGER NOT NULL,
    reason TEXT NOT NULL,
    webhook_id TEXT,
    source TEXT,
    headers TEXT NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS rejected_by_channel ON rejected (channel_id, id);
"""


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating) the relay database; every problem is a RelayStoreError."""
    try:
        ensure_private_dir(path.parent)
    except OSError as exc:
        raise RelayStoreError(
            f"Cannot create the data directory {path.parent} ({exc.strerror or exc}); "
            "choose another with --home or WALLETPASS_HOME."
        ) from None
    try:
        make_private(path)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise RelayStoreError(f"{path} cannot use write-ahead logging (mode {mode}).")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RelayStoreError(
                f"{path} was written by a newer walletpass-tui (schema {version}); upgrade it."
            )
        if version < SCHEMA_VERSION:
            db.execute("BEGIN IMMEDIATE")
            for statement in _statements(SCHEMA):
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
    except (sqlite3.Error, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise RelayStoreError(f"Cannot open the relay database {path} ({why}).") from None
    return db


def _statements(script: str) -> Iterator[str]:
    for part in script.split(";"):
        if part.strip():
            yield part.strip()
