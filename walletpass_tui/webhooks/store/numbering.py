"""Attempt numbers: consecutive per webhook-id, read from the database or from what the writer
remembers, and checked again inside the transaction that stores them (another program may have
numbered attempts of the same messages meanwhile).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from walletpass_tui.webhooks.models import Attempt, evolve

Known = dict[str, tuple[int, bytes | None]]  # webhook-id -> (attempts so far, first body digest)


def peek(db: sqlite3.Connection, attempts: Sequence[Attempt]) -> Known:
    """How many attempts each message in the batch already has, and its first body's digest."""
    return peek_with(db, attempts, "")[0]


def peek_with(
    db: sqlite3.Connection, attempts: Sequence[Attempt], also: str
) -> tuple[Known, int | None]:
    """``peek`` and, in the same statement, the one integer the query ``also`` selects (None when
    it is empty): each statement is a hand-back of the GIL by the writer's thread.

    The list of ids is padded with NULLs (which match nothing) to a power of two, so a handful of
    statements serve every batch size from SQLite's statement cache instead of being prepared
    again for each size."""
    ids = sorted({a.webhook_id for a in attempts if a.webhook_id})
    known: Known = {}
    extra: int | None = None
    first_chunk = True
    for start in range(0, max(len(ids), 1), PEEK_CHUNK):
        chunk: list[str | None] = list(ids[start : start + PEEK_CHUNK])
        chunk += [None] * (_padded(len(chunk)) - len(chunk))
        marks = ",".join("?" * len(chunk))
        sql = (
            f"SELECT webhook_id, attempts, first_digest FROM messages WHERE webhook_id IN ({marks})"
        )
        if also and first_chunk:
            sql += f" UNION ALL SELECT NULL, ({also}), NULL"
        for webhook_id, count, first in db.execute(sql, chunk):
            if webhook_id is None:
                extra = count
            else:
                known[webhook_id] = (int(count), bytes(first) if first is not None else None)
        first_chunk = False
    return known, extra


PEEK_CHUNK = 512


def _padded(n: int) -> int:
    size = 8
    while size < n:
        size *= 2
    return min(size, PEEK_CHUNK)


def number(attempts: Sequence[Attempt], known: Known) -> list[Attempt]:
    """Each attempt with its attempt number (consecutive per webhook-id, in batch order)."""
    counts = {webhook_id: count for webhook_id, (count, _) in known.items()}
    numbered = []
    for a in attempts:
        n = 1
        if a.webhook_id:
            n = counts.get(a.webhook_id, 0) + 1
            counts[a.webhook_id] = n
        numbered.append(evolve(a, attempt_no=n))
    return numbered


def counts(known: Known) -> dict[str, int]:
    return {webhook_id: count for webhook_id, (count, _) in known.items() if count}
