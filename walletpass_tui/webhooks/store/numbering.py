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
    ids = sorted({a.webhook_id for a in attempts if a.webhook_id})
    known: Known = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for webhook_id, count, first in db.execute(
            f"SELECT webhook_id, attempts, first_digest FROM messages WHERE webhook_id IN ({marks})",
            chunk,
        ):
            known[webhook_id] = (int(count), bytes(first) if first is not None else None)
    return known


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
