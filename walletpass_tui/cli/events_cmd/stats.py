"""``events stats``: the history counted per minute, hour or day (UTC, as every time shown).

Per bucket: attempts by topic and verdict, redeliveries (attempt number above 1), forwards to your
app with the median and 95th percentile of its answer time, and failures (forwards whose last try
got no 2xx, rejected attempts). A table with a bar per bucket on a terminal; JSON with ``--json``
(the shape is documented in docs/daily.md). Reads through a read-only connection.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.cli.common import CommandError, print_json, settings_from_args
from walletpass_tui.cli.progress import on_terminal
from walletpass_tui.cli.upgrade import upgrade_history
from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.text import format_ms

BUCKET_MS = {"minute": 60_000, "hour": 3_600_000, "day": 86_400_000}
MAX_BUCKETS = 2_000
OTHER = "other"  # a topic the service does not know, or none
FULL = "█"  # a bar: verified attempts in full blocks...
SHADE = "░"  # ... then rejected ones shaded
MIN_BAR = 8  # narrower than this, the bar is left out
PERCENTS = (50, 95)


@dataclass
class Bucket:
    start_ms: int
    topics: dict[str, int] = field(default_factory=lambda: dict.fromkeys((*TOPICS, OTHER), 0))
    verified: int = 0
    rejected: int = 0
    redeliveries: int = 0
    forwards: int = 0
    answered: int = 0
    forward_failures: int = 0
    p50_ms: float | None = None  # your app's answer time: median...
    p95_ms: float | None = None  # ... and 95th percentile (nearest rank), None without answers

    @property
    def attempts(self) -> int:
        return self.verified + self.rejected

    def add(self, other: Bucket) -> None:
        """Add the counts of ``other`` (percentiles do not add: the total's are queried)."""
        for topic, n in other.topics.items():
            self.topics[topic] += n
        self.verified += other.verified
        self.rejected += other.rejected
        self.redeliveries += other.redeliveries
        self.forwards += other.forwards
        self.answered += other.answered
        self.forward_failures += other.forward_failures


def default_by(span_ms: int) -> str:
    if span_ms <= 2 * 3_600_000:
        return "minute"
    if span_ms <= 3 * 86_400_000:
        return "hour"
    return "day"


@dataclass
class Activity:
    buckets: list[Bucket]
    total: Bucket


def collect(db: sqlite3.Connection, since_ms: int, now_ms: int, bucket_ms: int) -> Activity:
    """Every bucket from the one holding ``since_ms`` to the one holding now, empty ones too, and
    their total. The one activity query counts (the dashboard's header and Stats screen run it
    too): a row per minute, so nothing here grows with the history. Requests "Check my app"
    sent are not deliveries and are not counted."""
    from walletpass_tui.webhooks.store import activity, queries

    since_ms = since_ms // activity.MINUTE_MS * activity.MINUTE_MS  # counted by whole minutes
    first, last = since_ms // bucket_ms, now_ms // bucket_ms
    buckets = {b: Bucket(b * bucket_ms) for b in range(first, last + 1)}
    found = activity.read(db, since_ms, bucket_ms)
    for row in found.deliveries():
        bucket = buckets.get(row.bucket)
        if bucket is None:  # received "in the future" (a clock moved back): left out
            continue
        bucket.topics[row.topic if row.topic in TOPICS else OTHER] += row.attempts
        bucket.verified += row.verified
        bucket.rejected += row.rejected
        bucket.redeliveries += row.redelivered
    for queued in found.forwards:
        if (bucket := buckets.get(queued.bucket)) is not None:
            bucket.forwards, bucket.answered = queued.forwards, queued.answered
            bucket.forward_failures = queued.failed
    for b, times in queries.forward_percentiles(db, since_ms, bucket_ms, PERCENTS).items():
        if (bucket := buckets.get(b)) is not None:
            bucket.p50_ms, bucket.p95_ms = times.get(50), times.get(95)
    ordered = [buckets[b] for b in sorted(buckets)]
    total = totals(ordered, since_ms)
    overall = queries.forward_percentiles(db, since_ms, None, PERCENTS).get(0, {})
    total.p50_ms, total.p95_ms = overall.get(50), overall.get(95)
    return Activity(ordered, total)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def bucket_json(b: Bucket) -> dict[str, Any]:
    return {
        "start": format_ms(b.start_ms),
        "attempts": b.attempts,
        "topics": dict(b.topics),
        "verdicts": {"verified": b.verified, "rejected": b.rejected},
        "redeliveries": b.redeliveries,
        "forwards": {
            "count": b.forwards,
            "answered": b.answered,
            "failed": b.forward_failures,
            "p50_ms": _ms(b.p50_ms),
            "p95_ms": _ms(b.p95_ms),
        },
        "failures": {"forwards": b.forward_failures, "rejected": b.rejected},
    }


def stats_json(
    activity: Activity, *, since_ms: int, now_ms: int, by: str, path: str
) -> dict[str, Any]:
    summary = bucket_json(activity.total)
    summary.pop("start")
    return {
        "history": path,
        "since": format_ms(since_ms),
        "until": format_ms(now_ms),
        "by": by,
        "bucket_seconds": BUCKET_MS[by] // 1000,
        "totals": summary,
        "buckets": [bucket_json(b) for b in activity.buckets],
    }


# -- the table ------------------------------------------------------------------------------------

HEADERS = (
    "TIME (UTC)",
    "ATTEMPTS",
    "ACTIVATED",
    "DEACTIVATED",
    "OTHER",
    "REJECTED",
    "REDELIVERED",
    "FORWARDS",
    "P50",
    "P95",
    "FWD FAILED",
)
_OTHER_COLUMN = HEADERS.index("OTHER")


def _label(start_ms: int, by: str) -> str:
    stamp = datetime.fromtimestamp(start_ms / 1000, tz=UTC)
    return stamp.strftime("%Y-%m-%d" if by == "day" else "%Y-%m-%d %H:%M")


def _took(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def table_row(b: Bucket, by: str) -> list[str]:
    return [
        _label(b.start_ms, by),
        str(b.attempts),
        str(b.topics[TOPICS[0]]),
        str(b.topics[TOPICS[1]]),
        str(b.topics[OTHER]),
        str(b.rejected),
        str(b.redeliveries),
        str(b.forwards),
        _took(b.p50_ms),
        _took(b.p95_ms),
        str(b.forward_failures),
    ]


def bar(verified: int, rejected: int, most: int, width: int) -> str:
    """Verified attempts as full blocks, rejected ones shaded, scaled so ``most`` fills ``width``;
    any bucket with attempts gets at least one cell, and so do its rejected ones."""
    total = verified + rejected
    if total == 0 or most == 0 or width <= 0:
        return ""
    cells = max(1, round(total / most * width))
    shaded = 0
    if rejected:
        shaded = min(cells, max(1, round(rejected / total * cells)))
    return FULL * (cells - shaded) + SHADE * shaded


def totals(buckets: Sequence[Bucket], start_ms: int) -> Bucket:
    total = Bucket(start_ms)
    for b in buckets:
        total.add(b)
    return total


def print_stats_table(
    activity: Activity, by: str, out: TextIO, *, with_bars: bool, columns: int
) -> None:
    """The table, a total row under it when there are several buckets, and on a terminal a bar per
    bucket in the width left (none when less than ``MIN_BAR`` columns are left). The OTHER column
    (topics the service does not know) is shown only when some bucket has one."""
    buckets, total = activity.buckets, activity.total
    keep = [i for i in range(len(HEADERS)) if i != _OTHER_COLUMN or total.topics[OTHER]]
    headers = [HEADERS[i] for i in keep]
    rows = [[row[i] for i in keep] for row in (table_row(b, by) for b in [*buckets, total])]
    rows[-1][0] = "total"
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    # The time column left-aligned, counts and times right-aligned.
    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)
        )

    bar_width = columns - (sum(widths) + 2 * len(widths)) - 1
    with_bars = with_bars and bar_width >= MIN_BAR
    most = max((b.attempts for b in buckets), default=0)
    out.write(line(headers).rstrip() + "\n")
    for b, cells in zip(buckets, rows, strict=False):
        text = line(cells)
        if with_bars:
            text += "  " + bar(b.verified, b.rejected, most, bar_width)
        out.write(text.rstrip() + "\n")
    if len(buckets) > 1:
        out.write(line(rows[-1]).rstrip() + "\n")
    if with_bars and most:
        out.write(f"\n{FULL} verified  {SHADE} rejected   (the longest bar: {most} attempts)\n")


def _read(settings: Settings, since_ms: int, now_ms: int, bucket_ms: int) -> Activity:
    from walletpass_tui.webhooks.models import StoreError
    from walletpass_tui.webhooks.store import queries
    from walletpass_tui.webhooks.store.read_only import nobody_writes
    from walletpass_tui.webhooks.store.tables import SCHEMA_VERSION, explain

    path = settings.database_path
    if not path.exists():
        raise CommandError(
            f"No history yet in {settings.home}; run 'walletpass-tui listen' (or the dashboard) "
            "to receive webhooks."
        )
    upgrade_history(path)  # written by an older walletpass-tui: counted by minute once
    try:
        # A look writes nothing: with no writer, the file alone is read (a full or read-only disk).
        db = queries.connect_read_only(path, immutable=nobody_writes(path))
        try:
            if queries.readable_schema(db, path) < SCHEMA_VERSION:
                raise CommandError(
                    f"The history at {path} is not ready (being created, or it cannot be "
                    "upgraded for this version); try again once 'walletpass-tui events list' "
                    "works."
                )
            return collect(db, since_ms, now_ms, bucket_ms)
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreError(explain(exc, path)) from None


def cmd_stats(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    now_ms = int(time.time() * 1000)
    since_ms = args.since.ms  # a duration back from now, or an ISO 8601 time
    if since_ms > now_ms:
        raise UsageError(f"--since {args.since.describe()} is in the future.")
    by = args.by or default_by(now_ms - since_ms)
    bucket_ms = BUCKET_MS[by]
    count = now_ms // bucket_ms - since_ms // bucket_ms + 1
    if count > MAX_BUCKETS:
        raise UsageError(
            f"--since {args.since.describe()} by {by} makes {count:,} rows (at most "
            f"{MAX_BUCKETS:,}); give a larger --by or a shorter --since."
        )
    activity = _read(settings, since_ms, now_ms, bucket_ms)
    if args.json:
        print_json(
            stats_json(
                activity, since_ms=since_ms, now_ms=now_ms, by=by, path=str(settings.database_path)
            )
        )
        return 0
    out = sys.stdout
    tty = on_terminal(out)
    columns = shutil.get_terminal_size().columns if tty else 0
    print(
        f"History {settings.database_path}, since {format_ms(since_ms)}, by {by}:",
        file=out,
    )
    print_stats_table(activity, by, out, with_bars=tty, columns=columns)
    return 0
