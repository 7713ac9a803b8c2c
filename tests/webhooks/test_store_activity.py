"""The history counted by minute as it is written: the counts follow every commit and every prune
exactly, a history from before them is counted once when it is upgraded (with its progress), and
the counts answer the log's unfiltered, topic, verdict and source totals."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from factories import T0, as_version_8, json_attempt

from walletpass_tui.webhooks.models import CHECK, RECEIVED, REJECTED, VERIFIED, Attempt, LogFilter
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.activity import ALL_TIME_MS, MINUTE_MS

MINUTE = MINUTE_MS


def recounted(path: Path) -> list[tuple[object, ...]]:
    """Every attempt counted again from the rows, as the counts by minute should hold them."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(
            "SELECT received_at_ms / 60000, COALESCE(topic, ''), "
            "COALESCE(substr(note, 1, 11) IN ('check pass:', 'check fail:', 'check warn:'), 0), "
            "SUM(verdict = 'verified'), SUM(verdict != 'verified'), SUM(attempt_no > 1) "
            "FROM attempts GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ).fetchall()


def counts(path: Path) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(
            "SELECT minute, topic, source, verified, rejected, redelivered FROM activity "
            "ORDER BY 1, 2, 3"
        ).fetchall()


def history(n: int) -> list[Attempt]:
    """``n`` attempts over a few minutes: two topics and none, rejected ones, redeliveries and
    requests the check sent."""
    found = []
    for i in range(n):
        kind = i % 7
        found.append(
            json_attempt(
                f"msg_{i % 40}",  # every message past the 40th is a redelivery
                at=T0 + i * 7_000,
                topic=(None, "pass.activated", "pass.deactivated")[i % 3],
                verdict=REJECTED if kind == 3 else VERIFIED,
                note="check pass: valid delivery → 200 in 3 ms" if kind == 5 else None,
            )
        )
    return found


async def test_the_counts_follow_every_commit_and_every_prune(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    async with await Store.open(path, rejected_cap=5) as store:
        for a in history(120):  # commits of one and of many
            await store.record(a)
        assert counts(path) == recounted(path)
        assert await store.count() == 120
        assert sum(row[4] for row in counts(path)) > 5  # rejected beyond the cap, for now
        await store.prune_rejected()
        assert sum(row[4] for row in counts(path)) == 5
        assert counts(path) == recounted(path)
        removed = await store.prune_older_than(T0 + 5 * MINUTE + 1)
        assert removed > 0
        assert counts(path) == recounted(path)
        assert min(row[0] for row in counts(path)) == (T0 + 5 * MINUTE) // MINUTE
        everything = await store.prune_older_than(T0 + 60 * MINUTE)
        assert everything > 0 and counts(path) == [] and await store.count() == 0


async def test_the_counts_answer_the_logs_totals(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        for a in history(70):
            await store.record(a)
        with contextlib.closing(sqlite3.connect(path)) as db:

            def scan(where: str) -> int:
                return int(db.execute(f"SELECT COUNT(*) FROM attempts WHERE {where}").fetchone()[0])

            check = (
                "COALESCE(substr(note, 1, 11) IN ('check pass:', 'check fail:', 'check warn:'), 0)"
            )
            assert await store.count() == scan("1")
            assert await store.count(LogFilter(topic="pass.activated")) == scan(
                "topic = 'pass.activated'"
            )
            assert await store.count(LogFilter(verdict=REJECTED)) == scan("verdict != 'verified'")
            assert await store.count(LogFilter(source=CHECK)) == scan(check) == 10
            assert await store.count(
                LogFilter(topic="pass.deactivated", verdict=VERIFIED, source=RECEIVED)
            ) == scan(f"topic = 'pass.deactivated' AND verdict = 'verified' AND NOT {check}")
        stats = await store.stats()  # the deliveries: the check's requests left out
        assert (stats.received, stats.rejected) == (60, 10)
        everything = await store.activity(0, ALL_TIME_MS)
        assert sum(row.attempts for row in everything.attempts) == 70


def make_old(path: Path) -> None:
    """The history as the version before the counts by minute left it."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        as_version_8(db)
        db.execute("DROP TABLE activity")
        db.execute("DROP INDEX forwards_by_time")
        db.execute("DROP INDEX forwards_by_attempt")
        db.execute("PRAGMA user_version = 7")


async def test_an_old_history_is_counted_once_when_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from walletpass_tui.webhooks.store import activity

    monkeypatch.setattr(activity, "BUILD_STEP", 16)  # a few steps over this small history
    path = tmp_path / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        for a in history(100):
            await store.record(a)
    expected = counts(path)
    make_old(path)
    progress: list[tuple[int, int]] = []
    async with await Store.open(path, upgrading=lambda done, total: progress.append((done, total))):
        pass
    assert counts(path) == expected == recounted(path)
    assert progress[0] == (0, 100) and progress[-1] == (100, 100) and len(progress) > 3
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)
    progress.clear()
    async with await Store.open(path, upgrading=lambda done, total: progress.append((done, total))):
        pass
    assert progress == []  # once
