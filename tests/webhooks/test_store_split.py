"""A large batch is committed as two transactions handed to the writer's thread together: each
part's callers are answered only once their part is committed, attempt numbers stay consecutive
across the parts, and a part another program raced is numbered again on its own."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

from tests.webhooks.test_store_writer import insert_attempt, make
from walletpass_tui.webhooks.store import MAX_BATCH, Attempt, Store, evolve
from walletpass_tui.webhooks.store.numbering import SPLIT_AT


def committed(path: Path, attempt_id: int) -> bool:
    """Whether another connection sees the row (it is committed, not just written)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        row = db.execute("SELECT COUNT(*) FROM attempts WHERE id = ?", (attempt_id,)).fetchone()
    return bool(row[0])


async def record_together(store: Store, ids: list[str], finalize: object = None) -> list[Attempt]:
    """Record one attempt per id so that they all wait for the same commit (one batch)."""
    async with store.hold_writes():
        tasks = [asyncio.ensure_future(store.record(make(i), finalize)) for i in ids]  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        assert not any(t.done() for t in tasks)
    return list(await asyncio.gather(*tasks))


async def test_a_large_batch_is_answered_part_by_part_each_once_committed(tmp_path: Path) -> None:
    assert 2 * SPLIT_AT <= MAX_BATCH
    async with await Store.open(tmp_path / "s.sqlite3") as store:
        parts: list[int] = []
        store.subscribe(lambda batch: parts.append(len(batch)))
        unseen: list[int] = []

        def finalize(numbered: Attempt) -> Attempt:
            return evolve(numbered, note=f"attempt {numbered.attempt_no}")

        async def record(webhook_id: str) -> Attempt:
            stored = await store.record(make(webhook_id), finalize)
            if not committed(store.path, stored.id):  # answered before its commit: never
                unseen.append(stored.id)
            return stored

        ids = [f"msg_{i % 5}" for i in range(2 * SPLIT_AT + 8)]
        async with store.hold_writes():
            tasks = [asyncio.ensure_future(record(i)) for i in ids]
            await asyncio.sleep(0.05)
        stored = await asyncio.gather(*tasks)
        assert parts == [len(ids) // 2, len(ids) - len(ids) // 2]  # one batch, two transactions
        assert unseen == []
        # Numbers run on across the two parts, in arrival order, for every message.
        for k in range(5):
            mine = [a for a in stored if a.webhook_id == f"msg_{k}"]
            assert [a.attempt_no for a in mine] == list(range(1, len(mine) + 1))
            assert [a.note for a in mine] == [f"attempt {a.attempt_no}" for a in mine]
            kept = await store.message_attempts(f"msg_{k}")
            assert [a.attempt_no for a in kept] == list(range(1, len(mine) + 1))
        assert sorted(a.id for a in stored) == [a.id for a in stored]  # ids in arrival order


async def test_a_small_batch_is_one_transaction(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "o.sqlite3") as store:
        parts: list[int] = []
        store.subscribe(lambda batch: parts.append(len(batch)))
        stored = await record_together(store, [f"msg_{i}" for i in range(SPLIT_AT - 1)])
        assert parts == [SPLIT_AT - 1]
        assert all(a.attempt_no == 1 for a in stored)


async def test_only_the_part_another_program_raced_is_numbered_again(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "r.sqlite3") as store:
        decided: dict[str, list[int]] = {}

        def finalize(numbered: Attempt) -> Attempt:
            assert numbered.webhook_id is not None
            decided.setdefault(numbered.webhook_id, []).append(numbered.attempt_no)
            if len(decided) == 1 and len(decided[numbered.webhook_id]) == 1:
                # Between numbering and commit, a message of the second half arrives elsewhere.
                insert_attempt(store.path, "msg_race")
            return evolve(numbered, note=f"attempt {numbered.attempt_no}")

        ids = [f"msg_a{i}" for i in range(SPLIT_AT)] + [f"msg_b{i}" for i in range(SPLIT_AT - 1)]
        stored = await record_together(store, [*ids, "msg_race"], finalize)
        race = stored[-1]
        assert (race.attempt_no, race.note) == (2, "attempt 2")
        assert decided["msg_race"] == [1, 2]
        assert decided["msg_a0"] == [1]  # the first half committed as numbered the first time
        assert decided["msg_b0"] == [1, 1]  # the second half was decided again
        assert [a.attempt_no for a in await store.message_attempts("msg_race")] == [1, 2]
        assert await store.count() == len(ids) + 2
