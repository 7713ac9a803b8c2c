"""The history counted by minute as it is written, and the one activity query that reads it.

What counts the history (the dashboard's header and Stats screen, ``events stats``, the log's
total) reads a row per minute and topic instead of every attempt, so it costs the same at a
million stored as at a thousand.

``activity`` holds, per minute (``received_at_ms // MINUTE_MS``), topic (``''`` for none) and
source (a sender, or "Check my app"), the attempts verified and rejected and the redeliveries
among them (attempt number above 1). The requests the check sends are stored in the history and
kept apart here (``source`` 1): they are never counted as deliveries.

* the writer adds each batch in the transaction that stores it (``add``);
* pruning takes away what it deletes, in the transaction that deletes it (``take_away``);
* a history from before this table is counted once, when it is upgraded (``build``, in steps
  that report their progress).

The one activity query (``attempts_query``, ``forwards_query``) answers the header (one bucket
over all time), the Stats screen (the last hour by minute) and ``events stats`` (any window by
minute, hour or day), so the three always agree. A bucket is a whole number of minutes; a window
starts at the beginning of the minute it names. A forward to your app counts in the bucket its
delivery was received in (when it was queued), with its latest try's answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from walletpass_tui.webhooks.models import (
    CHECK_NOTE_PREFIXES,
    CHECK_NOTE_SQL,
    FORWARD,
    VERIFIED,
    Attempt,
    is_check_note,
)
from walletpass_tui.webhooks.store.rows import insert_many

MINUTE_MS = 60_000
ALL_TIME_MS = MINUTE_MS << 40  # a bucket that holds every minute (2 billion years): the totals
RECEIVED_SOURCE, CHECK_SOURCE = 0, 1
BUILD_STEP = 50_000  # attempts counted per step when an old history is upgraded

CREATE = """
CREATE TABLE activity (
    minute INTEGER NOT NULL,
    topic TEXT NOT NULL,
    source INTEGER NOT NULL,
    verified INTEGER NOT NULL,
    rejected INTEGER NOT NULL,
    redelivered INTEGER NOT NULL,
    PRIMARY KEY (minute, topic, source)
) WITHOUT ROWID
"""

_UPSERT_HEAD = "INSERT INTO activity (minute, topic, source, verified, rejected, redelivered)"
_UPSERT_TAIL = """ON CONFLICT (minute, topic, source) DO UPDATE SET
    verified = verified + excluded.verified,
    rejected = rejected + excluded.rejected,
    redelivered = redelivered + excluded.redelivered"""

# The same rows counted by SQL (a request the check sent: its note says so, see
# models.is_check_note; a NULL note is not one).
_CHECK = CHECK_NOTE_SQL.format(note="note")
_COUNTED = (
    f"SELECT received_at_ms / {MINUTE_MS}, COALESCE(topic, ''), {_CHECK}, "
    f"SUM(verdict = '{VERIFIED}'), SUM(verdict != '{VERIFIED}'), SUM(attempt_no > 1) "
    "FROM attempts WHERE {where} GROUP BY 1, 2, 3"
)

Key = tuple[int, str, int]
Counts = dict[Key, list[int]]


# -- writing --------------------------------------------------------------------------------------


def count(attempts: Iterable[Attempt]) -> Counts:
    """``attempts`` counted by (minute, topic, source): [verified, rejected, redelivered]."""
    counts: Counts = {}
    for a in attempts:
        source = CHECK_SOURCE if a.note is not None and is_check_note(a.note) else RECEIVED_SOURCE
        key = (a.received_at_ms // MINUTE_MS, a.topic or "", source)
        row = counts.get(key)
        if row is None:
            row = counts[key] = [0, 0, 0]
        row[0 if a.verdict == VERIFIED else 1] += 1
        if a.attempt_no > 1:
            row[2] += 1
    return counts


def _upsert(db: sqlite3.Connection, counts: Counts, sign: int) -> None:
    insert_many(
        db,
        _UPSERT_HEAD,
        [(*key, sign * v, sign * r, sign * d) for key, (v, r, d) in counts.items()],
        _UPSERT_TAIL,
    )


def add(db: sqlite3.Connection, stored: Sequence[Attempt]) -> None:
    """Count a batch as it is stored (in the writer's transaction)."""
    _upsert(db, count(stored), 1)


def take_away(db: sqlite3.Connection, where: str, params: Sequence[Any]) -> None:
    """Before the attempts matching ``where`` are deleted (in the same transaction): take them
    out of the counts, and drop the rows left at nothing."""
    counts: Counts = {
        (int(m), str(t), int(s)): [int(v), int(r), int(d)]
        for m, t, s, v, r, d in db.execute(
            _COUNTED.format(where=where), [*CHECK_NOTE_PREFIXES, *params]
        )
    }
    if not counts:
        return
    _upsert(db, counts, -1)
    db.executemany(
        "DELETE FROM activity WHERE minute = ? AND topic = ? AND source = ? "
        "AND verified <= 0 AND rejected <= 0",
        list(counts),
    )


def build(db: sqlite3.Connection, progress: Callable[[int, int], None] | None = None) -> None:
    """Count every attempt of a history from before the table (inside the upgrade's
    transaction), ``BUILD_STEP`` rows at a time; ``progress(done, total)`` after each step."""
    low, high, total = db.execute(
        "SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), 0), COUNT(*) FROM attempts"
    ).fetchone()
    done = 0
    if progress is not None:
        progress(0, total)
    start = low - 1
    while start < high:
        end = start + BUILD_STEP
        rows = db.execute(
            _COUNTED.format(where="id > ? AND id <= ?"), [*CHECK_NOTE_PREFIXES, start, end]
        ).fetchall()
        insert_many(db, _UPSERT_HEAD, rows, _UPSERT_TAIL)
        done += sum(int(v) + int(r) for *_, v, r, _d in rows)
        start = end
        if progress is not None:
            progress(done, total)


# -- the one activity query -----------------------------------------------------------------------


@dataclass(frozen=True)
class BucketCount:
    """Attempts of one topic (None: none) and source received in one bucket."""

    bucket: int  # epoch milliseconds // bucket_ms
    topic: str | None
    check: bool  # requests "Check my app" sent, never counted as deliveries
    verified: int
    rejected: int
    redelivered: int

    @property
    def attempts(self) -> int:
        return self.verified + self.rejected


@dataclass(frozen=True)
class BucketForwards:
    """Forwards to your app (never replays) queued in one bucket, by their latest try."""

    bucket: int
    forwards: int  # queued
    answered: int  # the latest try got an answer (any status)
    failed: int  # tried, and the latest try got no 2xx (or no answer)
    total_ms: float  # your app's answer times over the answered ones, summed...
    max_ms: float  # ... and the slowest


@dataclass(frozen=True)
class Activity:
    """The activity query's answer, with the newest attempt and forward ids it saw (read in the
    same statements), so what was stored after it can be told from what it counted."""

    attempts: Sequence[BucketCount]
    forwards: Sequence[BucketForwards]
    last_attempt_id: int
    last_forward_id: int

    def deliveries(self) -> list[BucketCount]:
        return [row for row in self.attempts if not row.check]


def attempts_query(since_ms: int, bucket_ms: int) -> tuple[str, list[Any]]:
    """Attempts by bucket, topic and source from the start of the minute holding ``since_ms``;
    every row carries the newest attempt id."""
    if bucket_ms % MINUTE_MS:
        raise ValueError("A bucket is a whole number of minutes.")
    per = bucket_ms // MINUTE_MS
    sql = (
        "SELECT minute / ?, topic, source, SUM(verified), SUM(rejected), SUM(redelivered), "
        "(SELECT COALESCE(MAX(id), 0) FROM attempts) "
        "FROM activity WHERE minute >= ? GROUP BY 1, 2, 3"
    )
    return sql, [per, since_ms // MINUTE_MS]


def attempt_row(row: Sequence[Any]) -> tuple[BucketCount, int]:
    bucket, topic, source, verified, rejected, redelivered, last = row
    found = BucketCount(
        int(bucket),
        str(topic) or None,
        int(source) == CHECK_SOURCE,
        int(verified),
        int(rejected),
        int(redelivered),
    )
    return found, int(last)


def forwards_query(since_ms: int, bucket_ms: int) -> tuple[str, list[Any]]:
    """Forwards (not replays) by the bucket they were queued in, from the start of the minute
    holding ``since_ms``; every row carries the newest forward id."""
    answered = "tries > 0 AND status IS NOT NULL"
    sql = (
        "SELECT created_at_ms / ?, COUNT(*), "
        f"COALESCE(SUM({answered}), 0), "
        "COALESCE(SUM(tries > 0 AND (status IS NULL OR status NOT BETWEEN 200 AND 299)), 0), "
        f"COALESCE(SUM(CASE WHEN {answered} THEN latency_ms END), 0), "
        f"COALESCE(MAX(CASE WHEN {answered} THEN latency_ms END), 0), "
        "(SELECT COALESCE(MAX(id), 0) FROM forwards) "
        "FROM forwards WHERE kind = ? AND created_at_ms >= ? GROUP BY 1"
    )
    return sql, [bucket_ms, FORWARD, since_ms // MINUTE_MS * MINUTE_MS]


def forward_row(row: Sequence[Any]) -> tuple[BucketForwards, int]:
    bucket, forwards, answered, failed, total_ms, max_ms, last = row
    found = BucketForwards(
        int(bucket), int(forwards), int(answered), int(failed), float(total_ms), float(max_ms)
    )
    return found, int(last)


def assemble(
    attempts: Sequence[tuple[BucketCount, int]], forwards: Sequence[tuple[BucketForwards, int]]
) -> Activity:
    return Activity(
        [row for row, _ in attempts],
        [row for row, _ in forwards],
        attempts[0][1] if attempts else 0,
        forwards[0][1] if forwards else 0,
    )


def read(db: sqlite3.Connection, since_ms: int, bucket_ms: int) -> Activity:
    """The activity query on a plain connection (``events stats``); the dashboard's reader runs
    the same statements (``queries.Reader.activity``)."""
    sql, params = attempts_query(since_ms, bucket_ms)
    attempts = [attempt_row(r) for r in db.execute(sql, params).fetchall()]
    sql, params = forwards_query(since_ms, bucket_ms)
    forwards = [forward_row(r) for r in db.execute(sql, params).fetchall()]
    return assemble(attempts, forwards)
