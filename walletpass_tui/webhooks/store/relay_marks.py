"""A relay link's low-water mark, on the writer's thread: every cursor at or below it is stored.

The link writes it after the rows it covers have committed (never before), so after a crash it is
at worst behind: the link then resumes after it and skips the cursors stored above it.

A batch made only of relayed deliveries does not wait for an fsync of its own (the writer commits
with ``synchronous = NORMAL`` and fsyncs the log for the others: see wal_sync.py): the relay
keeps every delivery on disk, and nobody waits for a 2xx from this store. Nor does a mark: it is
written after the rows it covers, in the same log. A killed process loses nothing committed (the
write-ahead log is in the system's cache); a power cut may lose the last such commits, but the
log is replayed only up to its first missing frame, so their cursors and any mark written after
them go too, and the link fetches them again. Deliveries posted to the local receiver, alone or
in a batch with relayed ones, are fsynced before their 2xx as before.
"""

from __future__ import annotations

import sqlite3


def start(db: sqlite3.Connection, relay_url: str) -> int:
    """The mark for ``relay_url``; the first time, the newest stored cursor (a store from before
    marks never stored out of order), written so that later deliveries cannot move it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute(
            "SELECT low_water FROM relay_marks WHERE relay_url = ?", (relay_url,)
        ).fetchone()
        if row is None:
            row = (newest(db, relay_url),)
            db.execute(
                "INSERT INTO relay_marks (relay_url, low_water) VALUES (?, ?)", (relay_url, row[0])
            )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return int(row[0])


def advance(db: sqlite3.Connection, relay_url: str, cursor: int) -> None:
    """Raise the mark to ``cursor`` (never lower it)."""
    db.execute(
        "INSERT INTO relay_marks (relay_url, low_water) VALUES (?, ?) ON CONFLICT(relay_url) "
        "DO UPDATE SET low_water = MAX(low_water, excluded.low_water)",
        (relay_url, cursor),
    )


def newest(db: sqlite3.Connection, relay_url: str) -> int:
    """The newest cursor stored from ``relay_url`` (0: none)."""
    row = db.execute(
        "SELECT MAX(relay_cursor) FROM attempts WHERE relay_url = ? AND relay_cursor >= 0",
        (relay_url,),
    ).fetchone()
    return int(row[0] or 0)
