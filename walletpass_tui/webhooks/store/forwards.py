"""The forward queue's writes: a forward or replay recorded, a queued one tried, pending ones given
up. Each function runs on the writer's thread as one transaction; the reads are in queries.py.

Forwards queued with a delivery are inserted in the delivery's own transaction (writer.py), so a
crash can never keep the delivery but lose its forward.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from walletpass_tui.webhooks.models import (
    DONE,
    FAILED,
    FORWARD,
    GIVEN_UP,
    ORIGINAL,
    PENDING,
    RESPONSE_BODY_LIMIT,
    Attempt,
    ForwardResult,
    ForwardRow,
)


def queue_with_delivery(
    db: sqlite3.Connection, stored: Sequence[Attempt], targets: Sequence[tuple[str, ...]]
) -> None:
    """Queue a forward of each verified attempt to each of its targets (caller's transaction)."""
    rows = [
        (a.id, a.webhook_id, FORWARD, ORIGINAL, target, PENDING, a.received_at_ms, a.received_at_ms)
        for a, to in zip(stored, targets, strict=True)
        if a.verified
        for target in to
    ]
    if rows:
        db.executemany(
            "INSERT INTO forwards (attempt_id, webhook_id, kind, mode, target, state, "
            "next_try_at_ms, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def add_result(
    db: sqlite3.Connection,
    attempt: Attempt,
    kind: str,
    mode: str,
    target: str,
    result: ForwardResult,
    request_body: bytes | None,
    now: int,
) -> int:
    """A forward or replay that already happened; returns its id."""
    cursor = db.execute(
        "INSERT INTO forwards (attempt_id, webhook_id, kind, mode, target, state, tries, "
        "next_try_at_ms, created_at_ms, finished_at_ms, status, latency_ms, response_headers, "
        "response_body, error, note, request_body) "
        "VALUES (?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            attempt.id,
            attempt.webhook_id,
            kind,
            mode,
            target,
            DONE if result.ok else FAILED,
            now,
            now,
            result.status,
            result.latency_ms,
            json.dumps(result.headers),
            result.body[:RESPONSE_BODY_LIMIT],
            result.error,
            result.note,
            request_body,
        ),
    )
    return cursor.lastrowid or 0


def record_try(
    db: sqlite3.Connection,
    row: ForwardRow,
    result: ForwardResult,
    next_try_at_ms: int | None,
    now: int,
) -> None:
    """One try of a queued forward: done on a 2xx, else pending again at ``next_try_at_ms``."""
    state = DONE if result.ok else (PENDING if next_try_at_ms is not None else FAILED)
    db.execute(
        "UPDATE forwards SET state = ?, tries = tries + 1, next_try_at_ms = ?, finished_at_ms = ?, "
        "status = ?, latency_ms = ?, response_headers = ?, response_body = ?, error = ?, note = ? "
        "WHERE id = ? AND state = ? AND target = ? AND created_at_ms = ?",
        (
            state,
            next_try_at_ms or 0,
            now if state != PENDING else None,
            result.status,
            result.latency_ms,
            json.dumps(result.headers),
            result.body[:RESPONSE_BODY_LIMIT],
            result.error,
            result.note,
            row.id,
            PENDING,
            # The very row that was read: after the history was started over (files.py) a row
            # read from the old one must not update the new one's row of the same id.
            row.target,
            row.created_at_ms,
        ),
    )


def give_up(db: sqlite3.Connection, target: str | None, now: int) -> int:
    """Stop retrying pending forwards (to one target or all); returns how many."""
    sql = "UPDATE forwards SET state = ?, finished_at_ms = ? WHERE state = ?"
    params: list[Any] = [GIVEN_UP, now, PENDING]
    if target is not None:
        sql += " AND target = ?"
        params.append(target)
    return db.execute(sql, params).rowcount
