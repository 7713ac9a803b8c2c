"""Attempt numbers: consecutive per webhook-id, read from the database or from what the writer
remembers, and checked again inside the transaction that stores them (another program may have
numbered attempts of the same messages meanwhile); and the parts a large batch is committed in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from walletpass_tui.webhooks.models import Attempt, evolve

Known = dict[str, tuple[int, bytes | None]]  # webhook-id -> (attempts so far, first body digest)

# A batch this large is committed as two transactions handed to the writer's thread together: with
# many senders in lockstep (all waiting for one commit) the event loop would sit idle while the
# whole batch commits; this way the first half's senders are answered, and their next deliveries
# read and verified, while the second half commits.
SPLIT_AT = 16


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


def parts_of(size: int) -> list[tuple[int, int]]:
    """The parts a batch is committed in: two halves from SPLIT_AT attempts on."""
    if size < SPLIT_AT:
        return [(0, size)]
    half = size // 2
    return [(0, half), (half, size)]


def part_counts(
    known: Known, numbered: Sequence[Attempt], cuts: Sequence[tuple[int, int]]
) -> list[Known]:
    """For each part, the attempt counts of its messages when its transaction starts: what was
    known before the batch plus the attempts of the parts committed before it."""
    counts = {webhook_id: count for webhook_id, (count, _) in known.items()}
    parts: list[Known] = []
    for a, b in cuts:
        part: Known = {}
        for attempt in numbered[a:b]:
            webhook_id = attempt.webhook_id
            if webhook_id and webhook_id not in part and counts.get(webhook_id):
                part[webhook_id] = (counts[webhook_id], None)
        for attempt in numbered[a:b]:
            if attempt.webhook_id:
                counts[attempt.webhook_id] = attempt.attempt_no
        parts.append(part)
    return parts
