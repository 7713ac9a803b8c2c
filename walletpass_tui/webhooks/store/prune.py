"""Dropping history: by age (``events prune``) and the rejected cap (a flood of garbage can neither
fill the disk nor push out verified history). Each runs on the writer's thread as one transaction,
which also takes what it deletes out of the counts by minute (activity.py).

A prune step says what the prune needs to know that a receiver running on the history (another
process writing it) got in after it: ``Step.seen``, the history's data version while the step
held the write lock, changes once another connection commits (``others_committed``). A prune
with no receiver copies the log after each step itself (``copy_log``): nothing else would until
it closes, and the log would grow by everything it deletes.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, NamedTuple

from walletpass_tui.webhooks.models import REJECTED
from walletpass_tui.webhooks.store import activity


def older_than(db: sqlite3.Connection, cutoff_ms: int) -> int:
    """Drop every attempt received before ``cutoff_ms``; returns how many."""
    return delete_where(db, "received_at_ms < ?", (cutoff_ms,))[0]


class Step(NamedTuple):
    """One prune step: how many attempts it deleted, how long it held the write lock, and the
    history's data version while it held it (see ``others_committed``)."""

    deleted: int
    held_s: float
    seen: int


def oldest_before(db: sqlite3.Connection, cutoff_ms: int, limit: int) -> Step:
    """Drop the oldest ``limit`` attempts received before ``cutoff_ms``."""
    return delete_where(db, "received_at_ms < ?", (cutoff_ms,), limit=limit)


def others_committed(db: sqlite3.Connection, seen: int) -> bool:
    """Whether another connection committed since a step that saw data version ``seen``. SQLite
    changes a connection's data version only for the commits of others, and none can commit
    while a step holds the write lock, so a change is a commit after that step."""
    return int(db.execute("PRAGMA data_version").fetchone()[0]) != seen


def copy_log(db: sqlite3.Connection) -> None:
    """Copy the write-ahead log into the database file (a PASSIVE checkpoint: it syncs the log,
    copies what no reader still needs, syncs the file); once all of it is copied, the next
    commit starts the log over."""
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def rejected_beyond(db: sqlite3.Connection, cap: int) -> int:
    """Drop the oldest rejected attempts beyond the newest ``cap``; returns how many."""
    # Through attempts_by_verdict: ``cap`` index entries walked, however long the history.
    row = db.execute(
        "SELECT id FROM attempts WHERE verdict = ? ORDER BY id DESC LIMIT 1 OFFSET ?",
        (REJECTED, cap),
    ).fetchone()
    if row is None:
        return 0
    return delete_where(db, "verdict = ? AND id <= ?", (REJECTED, row[0]))[0]


def delete_where(
    db: sqlite3.Connection, where: str, params: tuple[Any, ...], *, limit: int | None = None
) -> Step:
    """Delete the attempts matching ``where`` (the oldest ``limit`` of them, by time, when
    given), their forwards and the messages left without an attempt, and take them out of the
    counts by minute (activity.py), in one transaction. Only the rows deleted are looked at: the
    cost follows the step, not the history's size."""
    db.execute("BEGIN IMMEDIATE")
    locked = time.perf_counter()
    try:
        seen = int(db.execute("PRAGMA data_version").fetchone()[0])
        # Ids are never handed out again (the search index may still hold a pruned row's id).
        db.execute(
            "UPDATE meta SET value = MAX(CAST(value AS INTEGER), "
            "COALESCE((SELECT MAX(id) FROM attempts), 0)) WHERE key = 'fts_indexed_upto'"
        )
        db.execute(_PRUNED)
        db.execute("DELETE FROM temp.pruned")
        some = "" if limit is None else " ORDER BY received_at_ms LIMIT ?"
        db.execute(
            f"INSERT INTO temp.pruned (id, webhook_id) SELECT id, webhook_id FROM attempts "
            f"WHERE {where}{some}",
            params if limit is None else (*params, limit),
        )
        activity.take_away(db, "id IN (SELECT id FROM temp.pruned)", ())
        deleted = db.execute(
            "DELETE FROM attempts WHERE id IN (SELECT id FROM temp.pruned)"
        ).rowcount
        db.execute("DELETE FROM forwards WHERE attempt_id IN (SELECT id FROM temp.pruned)")
        db.execute(
            "DELETE FROM messages WHERE webhook_id IN "
            "(SELECT webhook_id FROM temp.pruned WHERE webhook_id IS NOT NULL) "
            "AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.webhook_id = messages.webhook_id)"
        )
        db.execute("DELETE FROM temp.pruned")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return Step(deleted, time.perf_counter() - locked, seen)


# The attempts one step deletes (a temporary table of the writer's connection).
_PRUNED = "CREATE TEMP TABLE IF NOT EXISTS pruned (id INTEGER PRIMARY KEY, webhook_id TEXT)"
