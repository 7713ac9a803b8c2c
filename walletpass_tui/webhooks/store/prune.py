"""Dropping history: by age (``events prune``) and the rejected cap (a flood of garbage can neither
fill the disk nor push out verified history). Each runs on the writer's thread as one transaction."""

from __future__ import annotations

import sqlite3
from typing import Any

from walletpass_tui.webhooks.models import VERIFIED


def older_than(db: sqlite3.Connection, cutoff_ms: int) -> int:
    """Drop every attempt received before ``cutoff_ms``; returns how many."""
    return delete_where(db, "received_at_ms < ?", (cutoff_ms,))


def rejected_beyond(db: sqlite3.Connection, cap: int) -> int:
    """Drop the oldest rejected attempts beyond the newest ``cap``; returns how many."""
    row = db.execute(
        "SELECT id FROM attempts WHERE verdict != ? ORDER BY id DESC LIMIT 1 OFFSET ?",
        (VERIFIED, cap),
    ).fetchone()
    if row is None:
        return 0
    return delete_where(db, "verdict != ? AND id <= ?", (VERIFIED, row[0]))


def delete_where(db: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> int:
    db.execute("BEGIN IMMEDIATE")
    try:
        # Ids are never handed out again (the search index may still hold a pruned row's id).
        db.execute(
            "UPDATE meta SET value = MAX(CAST(value AS INTEGER), "
            "COALESCE((SELECT MAX(id) FROM attempts), 0)) WHERE key = 'fts_indexed_upto'"
        )
        deleted = db.execute(f"DELETE FROM attempts WHERE {where}", params).rowcount
        db.execute(
            "DELETE FROM forwards WHERE NOT EXISTS "
            "(SELECT 1 FROM attempts a WHERE a.id = forwards.attempt_id)"
        )
        db.execute(
            "DELETE FROM messages WHERE NOT EXISTS "
            "(SELECT 1 FROM attempts a WHERE a.webhook_id = messages.webhook_id)"
        )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return deleted
