"""``events prune`` beside a receiver writing the same history (another connection, as a running
``listen`` is): between any two prune steps the receiver commits what waited, so a delivery is
held by one step at most; nothing is lost, and the counts by minute follow both."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sqlite3
import time
from pathlib import Path

import factories
import pytest

from walletpass_tui.cli.events_cmd import maintenance
from walletpass_tui.cli.progress import Progress
from walletpass_tui.webhooks.models import LogFilter
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.prune import Step

OLD = 1_500
SENDERS = 3


async def test_the_receiver_commits_between_every_two_prune_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "deliveries.sqlite3"
    old = int(time.time() * 1000) - 30 * 86_400_000
    async with await Store.open(path) as store:
        for start in range(0, OLD, 300):
            await asyncio.gather(
                *(
                    store.record(
                        factories.json_attempt(f"msg_old{i}", at=old + i, topic="pass.activated")
                    )
                    for i in range(start, start + 300)
                )
            )
    # Many small steps, and no fixed pause after one (only as long as it held the lock): a
    # receiver whose retry falls outside such a pause is let in only by the prune waiting for
    # its commit, a wait long enough here never to run out on a busy machine.
    monkeypatch.setattr(maintenance, "FIRST_STEP", 20)
    monkeypatch.setattr(maintenance, "MIN_STEP", 20)
    monkeypatch.setattr(maintenance, "MAX_STEP", 20)
    monkeypatch.setattr(maintenance, "PAUSE_S", 0.0)
    monkeypatch.setattr(maintenance, "WAIT_S", 60.0)
    steps: list[Step] = []
    real_step = Store.prune_oldest

    async def step(self: Store, cutoff_ms: int, limit: int, *, durable: bool) -> Step:
        done = await real_step(self, cutoff_ms, limit, durable=durable)
        steps.append(done)
        return done

    monkeypatch.setattr(Store, "prune_oldest", step)
    cutoff = int(time.time() * 1000) - 86_400_000
    async with await Store.open(path) as receiver, await Store.open(path) as pruner:
        stored: list[int] = []

        async def send(sender: int, pruning: asyncio.Future[int]) -> None:
            n = 0
            while not pruning.done():
                attempt = factories.json_attempt(
                    f"msg_new{sender}_{n}", at=int(time.time() * 1000), topic="pass.activated"
                )
                stored.append((await receiver.record(attempt)).id)
                n += 1

        with Progress("pruned", OLD) as progress:
            pruning = asyncio.ensure_future(
                maintenance.prune_in_steps(pruner, cutoff, progress, lambda: True)
            )
            await asyncio.gather(*(send(s, pruning) for s in range(SENDERS)))
            removed = await pruning
        assert removed == OLD and len(steps) == OLD // 20 + 1
        # The data version a step saw changes only with another connection's commit.
        waited = [a.seen == b.seen for a, b in itertools.pairwise(steps)]
        assert not any(waited), f"the receiver did not commit between steps {waited.count(True)}x"
        assert len(stored) >= len(steps) and len(set(stored)) == len(stored)
        assert await receiver.count() == len(stored)
        assert await receiver.count(LogFilter(topic="pass.activated")) == len(stored)
        assert (await receiver.stats()).received == len(stored)


async def test_a_prune_stopped_in_a_step_leaves_the_history_and_its_counts_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C cancels the prune while a step is on the writer's thread: that step commits or
    not as a whole, the steps before stay done, and every count agrees with the rows left."""
    path = tmp_path / "deliveries.sqlite3"
    old = int(time.time() * 1000) - 30 * 86_400_000
    async with await Store.open(path) as store:
        for start in range(0, OLD, 300):
            await asyncio.gather(
                *(
                    store.record(
                        factories.json_attempt(f"msg_{i % 700}", at=old + i, topic="pass.activated")
                    )
                    for i in range(start, start + 300)
                )
            )
    monkeypatch.setattr(maintenance, "FIRST_STEP", 100)
    monkeypatch.setattr(maintenance, "MAX_STEP", 100)
    real_step = Store.prune_oldest
    steps = 0

    async def step(self: Store, cutoff_ms: int, limit: int, *, durable: bool) -> Step:
        nonlocal steps
        steps += 1
        if steps == 6:  # stopped while this step runs on the writer's thread
            asyncio.get_running_loop().call_soon(pruning.cancel)
        return await real_step(self, cutoff_ms, limit, durable=durable)

    monkeypatch.setattr(Store, "prune_oldest", step)
    async with await Store.open(path) as store:
        with Progress("pruned", OLD) as progress:
            pruning = asyncio.ensure_future(
                maintenance.prune_in_steps(store, int(time.time() * 1000), progress)
            )
            with pytest.raises(asyncio.CancelledError):
                await pruning
    async with await Store.open(path) as store:
        left = await store.count()
        assert left in (OLD - 500, OLD - 600)  # five steps done, the sixth whole or not at all
        assert (await store.stats()).received == left
        assert await store.count(LogFilter(topic="pass.activated")) == left
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kept = {f"msg_{i % 700}" for i in range(OLD - left, OLD)}
        assert {r[0] for r in db.execute("SELECT DISTINCT webhook_id FROM attempts")} == kept
        assert {r[0] for r in db.execute("SELECT webhook_id FROM messages")} == kept


async def test_a_prune_alone_keeps_the_log_the_size_of_a_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every step's pages go through the write-ahead log: copied into the database file after
    each step, the log never holds more than a step, not everything the prune deleted."""
    path = tmp_path / "deliveries.sqlite3"
    old = int(time.time() * 1000) - 30 * 86_400_000
    body = b'{"type": "pass.activated", "data": {"note": "' + b"x" * 4000 + b'"}}'
    async with await Store.open(path) as store:
        for start in range(0, OLD, 300):
            await asyncio.gather(
                *(
                    store.record(factories.json_attempt(f"msg_{i}", at=old + i, body=body))
                    for i in range(start, start + 300)
                )
            )
    monkeypatch.setattr(maintenance, "FIRST_STEP", 100)
    monkeypatch.setattr(maintenance, "MAX_STEP", 100)
    log_sizes: list[int] = []
    real_step = Store.prune_oldest

    async def step(self: Store, cutoff_ms: int, limit: int, *, durable: bool) -> Step:
        done = await real_step(self, cutoff_ms, limit, durable=durable)
        log_sizes.append(os.stat(f"{path}-wal").st_size)
        return done

    monkeypatch.setattr(Store, "prune_oldest", step)
    async with await Store.open(path) as store:
        with Progress("pruned", OLD) as progress:
            cutoff = int(time.time() * 1000)
            assert await maintenance.prune_in_steps(store, cutoff, progress) == OLD
        assert await store.count() == 0
    deleted_bytes = OLD * len(body)  # at least what went through the log
    assert max(log_sizes) < deleted_bytes / 4 and max(log_sizes) < 5 * 1024 * 1024
