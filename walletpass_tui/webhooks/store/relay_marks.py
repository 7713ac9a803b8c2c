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

Marks and stored cursors are kept by channel (``relay_channel``: the slug of the subscribe URL),
so a home that follows the same channel under another spelling of its URL (``localhost``, a
trailing slash, the other instance of the same relay) resumes where it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from walletpass_tui.webhooks.relay_channel import relay_channel


def start(db: sqlite3.Connection, relay_url: str) -> int:
    """The mark for the channel ``relay_url`` follows; the first time, the newest stored cursor
    (a store from before marks never stored out of order), written so that later deliveries
    cannot move it."""
    channel = relay_channel(relay_url)
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute(
            "SELECT low_water FROM relay_marks WHERE channel = ?", (channel,)
        ).fetchone()
        if row is None:
            row = (newest(db, relay_url),)
            db.execute(
                "INSERT INTO relay_marks (channel, low_water) VALUES (?, ?)", (channel, row[0])
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
        "INSERT INTO relay_marks (channel, low_water) VALUES (?, ?) ON CONFLICT(channel) "
        "DO UPDATE SET low_water = MAX(low_water, excluded.low_water)",
        (relay_channel(relay_url), cursor),
    )


def rewind(db: sqlite3.Connection, relay_url: str, cursor: int) -> int:
    """The channel's relay went back to ``cursor`` (its database was restored from a backup) and
    will number new deliveries with the cursors above it: the attempts stored with those cursors
    stay in the history as they came (their ``relay_cursor`` shown), but no longer hold them, and
    the mark goes back to ``cursor``. Returns how many attempts let go of their cursor."""
    channel = relay_channel(relay_url)
    db.execute("BEGIN IMMEDIATE")
    try:
        released = db.execute(
            "UPDATE attempts SET relay_channel = NULL WHERE relay_channel = ? AND relay_cursor > ?",
            (channel, cursor),
        ).rowcount
        db.execute(
            "INSERT INTO relay_marks (channel, low_water) VALUES (?, ?) ON CONFLICT(channel) "
            "DO UPDATE SET low_water = MIN(low_water, excluded.low_water)",
            (channel, cursor),
        )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return int(released)


def newest(db: sqlite3.Connection, relay_url: str) -> int:
    """The newest cursor stored from the channel ``relay_url`` follows (0: none)."""
    row = db.execute(
        "SELECT MAX(relay_cursor) FROM attempts WHERE relay_channel = ? AND relay_cursor >= 0",
        (relay_channel(relay_url),),
    ).fetchone()
    return int(row[0] or 0)


def by_channel(db: sqlite3.Connection, _progress: Callable[[int, int], None] | None) -> None:
    """The upgrade to marks and cursors kept by channel: each stored relayed attempt is given its
    channel (a cursor stored twice under two spellings keeps it on its first copy only: the later
    copies stay in the history, shown as they came), and each channel's mark is the highest of
    its spellings' (every cursor at or below any of them is stored)."""
    seen: set[tuple[str, int]] = set()
    keyed: list[tuple[str, int]] = []
    found = db.execute(
        "SELECT id, relay_url, relay_cursor FROM attempts "
        "WHERE relay_url IS NOT NULL AND relay_cursor IS NOT NULL ORDER BY id"
    )
    for id_, url, cursor in found:
        channel = relay_channel(str(url))
        if (channel, cursor) not in seen:
            seen.add((channel, cursor))
            keyed.append((channel, id_))
    db.executemany("UPDATE attempts SET relay_channel = ? WHERE id = ?", keyed)
    marks: dict[str, int] = {}
    for url, low_water in db.execute("SELECT relay_url, low_water FROM relay_marks_by_url"):
        channel = relay_channel(str(url))
        marks[channel] = max(marks.get(channel, 0), int(low_water))
    db.executemany("INSERT INTO relay_marks (channel, low_water) VALUES (?, ?)", marks.items())
    db.execute("DROP TABLE relay_marks_by_url")
