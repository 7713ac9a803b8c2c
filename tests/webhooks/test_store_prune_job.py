"""A prune run by the store's own writer (what a receiver does when ``events prune`` asks it):
steps between the batches, deliveries first and every one stored, a share of the writer even
when deliveries never stop, stopped after the step under way, one at a time, the counts by minute
following every step, and the write-ahead log kept to about a step."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from pathlib import Path

import factories
import pytest

from walletpass_tui.webhooks.models import LogFilter
from walletpass_tui.webhooks.store import Store, writer
from walletpass_tui.webhooks.store.prune_job import DONE, FIRST_STEP, STOPPED, PruneJob

OLD = 1_500
DEADLINE_S = 60.0  # "did not hang" guard, never a timing assertion
OLD_AT = int(time.time() * 1000) - 30 * 86_400_000


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
            "WHERE verified + rejected > 0 ORDER BY 1, 2, 3"
        ).fetchall()


async def fill(path: Path, n: int = OLD, body: bytes | None = None) -> None:
    """``n`` attempts a month old, a minute apart in groups, some of them redeliveries."""
    extra = {"body": body} if body is not None else {}
    async with await Store.open(path) as store:
        for start in range(0, n, 300):
            await asyncio.gather(
                *(
                    store.record(
                        factories.json_attempt(
                            f"msg_old{i % (n // 2)}", at=OLD_AT + i * 1_000, **extra
                        )
                    )
                    for i in range(start, min(n, start + 300))
                )
            )


async def ended(job: PruneJob) -> None:
    if not job.running:
        return
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    job.ended.subscribe(lambda _: done.done() or done.set_result(None))
    async with asyncio.timeout(DEADLINE_S):
        await done


def now_ms() -> int:
    return int(time.time() * 1000)


async def test_the_writer_prunes_between_deliveries_and_stores_every_one(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    await fill(path)
    async with await Store.open(path) as store:
        job = store.start_prune(now_ms() - 86_400_000)
        stored: list[int] = []

        async def send(sender: int) -> None:
            n = 0
            while job.running or n < 5:
                attempt = factories.json_attempt(f"msg_new{sender}_{n}", at=now_ms())
                stored.append((await store.record(attempt)).id)
                n += 1

        async with asyncio.timeout(DEADLINE_S):
            await asyncio.gather(*(send(s) for s in range(3)))
        assert job.end == DONE and job.deleted == OLD and job.steps > 1
        assert len(set(stored)) == len(stored)
        assert await store.count() == len(stored)
        assert await store.count(LogFilter(until_ms=now_ms() - 86_400_000)) == 0
        assert (await store.stats()).received == len(stored)
    assert counts(path) == recounted(path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM messages").fetchone() == (len(stored),)


async def test_a_writer_never_idle_still_gives_the_prune_a_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deliveries queued faster than the writer takes them: a step goes in after every few
    batches anyway, and none of the deliveries is lost."""
    monkeypatch.setattr(writer, "FORCED_EVERY", 4)  # every 4 batches of the 16 this queue makes
    # No rest after a step: how many batches go by during a rest depends on the machine's speed,
    # and a fast one commits all 16 within it (the rule counted here is the batches in a row).
    monkeypatch.setattr(writer, "REST", 0.0)
    path = tmp_path / "deliveries.sqlite3"
    await fill(path)
    async with await Store.open(path) as store:
        async with store.hold_writes():  # everything below queues up
            sends = [
                asyncio.ensure_future(
                    store.record(factories.json_attempt(f"msg_new{n}", at=now_ms()))
                )
                for n in range(8_000)
            ]
            job = store.start_prune(now_ms() - 86_400_000)
            await asyncio.sleep(0)
        async with asyncio.timeout(DEADLINE_S):
            stored = await asyncio.gather(*sends)
            await ended(job)
        assert job.forced >= 2, "the prune waited for the deliveries to stop"
        assert len({a.id for a in stored}) == 8_000
        assert job.end == DONE and job.deleted == OLD
        assert await store.count() == 8_000
    assert counts(path) == recounted(path)


async def test_a_prune_stops_after_the_step_under_way_and_one_runs_at_a_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries.sqlite3"
    await fill(path)
    async with await Store.open(path) as store:
        job = store.start_prune(now_ms())
        with pytest.raises(RuntimeError, match="one prune at a time"):
            store.start_prune(now_ms())
        job.stepped.subscribe(lambda job: job.stop("asked"))  # after the first step
        await ended(job)
        assert job.end == STOPPED and job.reason == "asked"
        assert job.deleted == FIRST_STEP and job.steps == 1
        assert await store.count() == OLD - FIRST_STEP
        again = store.start_prune(now_ms())  # the next one may start
        await ended(again)
        assert again.end == DONE and again.deleted == OLD - FIRST_STEP
        assert await store.count() == 0
    assert counts(path) == recounted(path) == []


async def test_a_prune_open_when_the_store_closes_ends_stopped(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    await fill(path, 300)
    store = await Store.open(path)
    async with store.hold_writes():
        job = store.start_prune(now_ms())
        closing = asyncio.ensure_future(store.close())
        await asyncio.sleep(0)
    await closing
    assert job.end == STOPPED and job.reason == "the receiver is stopping"
    async with await Store.open(path) as store:
        assert await store.count() == 300 - job.deleted
    assert counts(path) == recounted(path)


async def test_the_log_holds_about_a_step_not_everything_pruned(tmp_path: Path) -> None:
    """The writer's prune waits for the log's copy once it passed its bound, so the log stays
    near the bound however much is deleted."""
    path = tmp_path / "deliveries.sqlite3"
    body = b'{"type": "pass.activated", "data": {"note": "' + b"x" * 4000 + b'"}}'
    await fill(path, body=body)
    sizes: list[int] = []
    bound = 1024 * 1024
    async with await Store.open(path, log_bound_bytes=bound) as store:
        job = store.start_prune(now_ms())
        job.stepped.subscribe(lambda _: sizes.append(os.stat(f"{path}-wal").st_size))
        await ended(job)
        assert job.end == DONE and job.deleted == OLD
    deleted_bytes = OLD * len(body)  # at least what went through the log
    assert max(sizes) < deleted_bytes / 2


async def test_a_prune_goes_on_after_the_stores_own_writes_with_nothing_arriving(
    tmp_path: Path,
) -> None:
    """A receiver following a relay writes its marks through the store (each one synced) while
    no delivery arrives: a prune step whose rest ends during such a write's fsync still runs
    once the fsync is done, instead of waiting for the next delivery."""
    path = tmp_path / "deliveries.sqlite3"
    await fill(path)
    async with await Store.open(path) as store:
        job = store.start_prune(now_ms())
        loop = asyncio.get_running_loop()
        until = loop.time() + 1.5
        while loop.time() < until and job.running:  # writes of its own, one after the other
            await store.prune_rejected()
        await ended(job)  # nothing arrives from here on
        assert job.end == DONE and job.deleted == OLD
        assert await store.count() == 0
    assert counts(path) == recounted(path) == []
