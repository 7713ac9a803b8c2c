"""Two receivers on one home (two processes writing one history at once): every acknowledged
delivery is stored once, attempt numbers stay consecutive per message, neither takes the other's
files for deleted ones, and the log stays bounded."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from walletpass_tui.webhooks.store import tables

RECEIVER = """
import asyncio, json, sys
from pathlib import Path

from walletpass_tui.webhooks.models import VERIFIED, Attempt, StoreError
from walletpass_tui.webhooks.store import Store


async def main():
    path, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    acked, failed = [], []

    async def one(i):
        attempt = Attempt(received_at_ms=1_795_000_000_000 + i, method="POST",
            path="/webhooks", headers=(), body=b"x" * 2000, verdict=VERIFIED,
            reason="verified", status=200, webhook_id=f"msg_{i % 25:02d}")
        try:
            stored = await store.record(attempt)
        except StoreError as exc:
            failed.append(str(exc))
        else:
            acked.append([stored.id, stored.webhook_id, stored.attempt_no])

    async with await Store.open(path, log_bound_bytes=256 * 1024) as store:
        for start in range(0, count, 8):
            await asyncio.gather(*(one(i) for i in range(start, min(count, start + 8))))
        problem = store.health.problem
    print(json.dumps({"acked": acked, "failed": failed, "problem": problem, "tag": tag}))


asyncio.run(main())
"""
COUNT = 400


@pytest.mark.slow
def test_two_receivers_on_one_history_store_every_acknowledged_delivery(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RECEIVER, str(path), tag, str(COUNT)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    results = []
    for proc in procs:  # both run at once; a generous bound only against a hang
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "was deleted" not in err, err  # the other's files are not taken for deleted ones
        results.append(json.loads(out))
    first, second = results
    acked = [tuple(a) for r in (first, second) for a in r["acked"]]
    assert first["failed"] == [] and second["failed"] == []
    assert len(acked) == 2 * COUNT
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = set(db.execute("SELECT id, webhook_id, attempt_no FROM attempts"))
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert set(acked) == rows  # each acknowledged one stored once, as acknowledged
    numbers: dict[str, list[int]] = defaultdict(list)
    for _, webhook_id, attempt_no in rows:
        numbers[webhook_id].append(attempt_no)
    for webhook_id, seen in numbers.items():
        assert sorted(seen) == list(range(1, len(seen) + 1)), webhook_id


def test_a_history_two_programs_create_at_once_is_made_once(tmp_path: Path) -> None:
    """Both read "no schema yet"; the other one takes the write lock first and makes it: this
    one must not make it again ("table attempts already exists")."""
    path = tmp_path / "new.sqlite3"
    with (
        contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other,
        contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db,
    ):
        for conn in (other, db):
            conn.create_function("wp_digest", 2, tables.digest, deterministic=True)
            tables.configure(conn, 5000)
        made_by_other: list[str] = []

        def other_goes_first(statement: str) -> None:
            if statement.startswith("BEGIN IMMEDIATE") and not made_by_other:
                made_by_other.append(statement)
                tables.migrate(other, path)  # between this one's look and its lock

        db.set_trace_callback(other_goes_first)
        tables.migrate(db, path)
        assert made_by_other
        assert db.execute("PRAGMA user_version").fetchone() == (tables.SCHEMA_VERSION,)
        assert db.execute("SELECT COUNT(*) FROM attempts").fetchone() == (0,)
