"""The writer: a finalizer runs on the event loop outside any transaction, attempt numbers stay
consecutive when another program writes meanwhile, a changed body is flagged, the log is
checkpointed off the acknowledgement path, and ``hold_writes`` holds every commit."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from pathlib import Path

from factories import T0, attempt

from walletpass_tui.webhooks.models import REJECTED, Attempt, LogFilter, evolve
from walletpass_tui.webhooks.store import Store


def insert_attempt(path: Path, webhook_id: str) -> None:
    """Another program records an attempt of ``webhook_id`` (as a second walletpass-tui would)."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None, timeout=0.05)) as db:
        db.execute("BEGIN IMMEDIATE")  # fails at once if anyone holds the write lock
        db.execute(
            "INSERT INTO attempts (webhook_id, received_at_ms, method, path, headers, body, "
            "body_size, verdict, reason, status) "
            "VALUES (?, ?, 'POST', '/webhooks', '[]', X'7B7D', 2, 'verified', 'verified', 200)",
            (webhook_id, T0),
        )
        db.execute(
            "INSERT INTO messages VALUES (?, NULL, NULL, 1, 1, ?, ?, last_insert_rowid(), "
            "'verified', NULL, 200, NULL) ON CONFLICT(webhook_id) DO UPDATE SET "
            "attempts = attempts + 1",
            (webhook_id, T0, T0),
        )
        db.execute("COMMIT")


async def test_a_finalizer_runs_on_the_loop_outside_any_transaction(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "w.sqlite3") as store:
        await store.record(attempt("msg_f"))
        seen: list[tuple[int, int]] = []

        def finalize(numbered: Attempt) -> Attempt:
            seen.append((threading.get_ident(), numbered.attempt_no))
            # No transaction is open: another program can take the write lock right now.
            with contextlib.closing(sqlite3.connect(store.path, timeout=0)) as other:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
            return evolve(numbered, status=500, note=f"injected {numbered.attempt_no}")

        stored = await store.record(attempt("msg_f"), finalize)
        assert seen == [(threading.get_ident(), 2)]
        assert (stored.attempt_no, stored.status, stored.note) == (2, 500, "injected 2")
        again = await store.attempt(stored.id)
        assert again is not None and (again.status, again.note) == (500, "injected 2")


async def test_numbers_stay_consecutive_when_another_program_writes_meanwhile(
    tmp_path: Path,
) -> None:
    async with await Store.open(tmp_path / "r.sqlite3") as store:
        calls: list[int] = []

        def finalize(numbered: Attempt) -> Attempt:
            calls.append(numbered.attempt_no)
            if len(calls) == 1:  # between numbering and commit, the same message arrives elsewhere
                insert_attempt(store.path, "msg_race")
            return evolve(numbered, note=f"decided for attempt {numbered.attempt_no}")

        stored = await store.record(attempt("msg_race"), finalize)
        assert calls == [1, 2]  # decided again with the right number
        assert (stored.attempt_no, stored.note) == (2, "decided for attempt 2")
        assert [a.attempt_no for a in await store.message_attempts("msg_race")] == [1, 2]


async def test_a_finalizer_bug_fails_its_batch_not_the_writer(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "b.sqlite3") as store:

        def broken(a: Attempt) -> Attempt:
            raise RuntimeError("boom")

        with contextlib.suppress(Exception):
            await store.record(attempt("msg_x"), broken)
        assert await store.count() == 0
        assert (await store.record(attempt("msg_y"))).attempt_no == 1


async def test_a_later_attempt_with_another_body_or_topic_is_flagged(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "d.sqlite3") as store:
        first = await store.record(attempt("msg_d", b'{"a": 1}', topic="pass.activated"))
        same = await store.record(attempt("msg_d", b'{"a": 1}', topic="pass.activated"))
        other_body = await store.record(attempt("msg_d", b'{"a": 2}', topic="pass.activated"))
        other_topic = await store.record(attempt("msg_d", b'{"a": 1}', topic="pass.deactivated"))
        forged = await store.record(attempt("msg_d", b'{"a": 3}', verdict=REJECTED))
        flags = [first, same, other_body, other_topic, forged]
        assert [a.body_differs for a in flags] == [False, False, True, True, True]
        # Within one batch too, and as read back (events show --json, the log).
        batch = await asyncio.gather(
            store.record(attempt("msg_e", b"one")), store.record(attempt("msg_e", b"two"))
        )
        assert [a.body_differs for a in batch] == [False, True]
        stored = await store.message_attempts("msg_d")
        assert [a.body_differs for a in stored] == [False, False, True, True, True]
        rows = await store.log_page(LogFilter(), limit=10)
        assert {r.id: r.body_differs for r in rows}[other_body.id] is True
        assert not (
            await store.record(attempt(None, b"x"))
        ).body_differs  # no id: nothing to compare


async def test_hold_writes_holds_every_commit(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.sqlite3") as store:
        async with store.hold_writes():
            pending = asyncio.ensure_future(store.record(attempt("msg_h")))
            for _ in range(20):
                await asyncio.sleep(0.01)
            assert not pending.done()
            with contextlib.closing(sqlite3.connect(store.path)) as db:
                assert db.execute("SELECT COUNT(*) FROM attempts").fetchone() == (0,)
        assert (await pending).attempt_no == 1


async def test_the_write_ahead_log_is_checkpointed_and_started_over(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    log = tmp_path / "c.sqlite3-wal"
    async with await Store.open(path) as store:
        for i in range(800):  # one commit each: ~19 MB of log frames without checkpoints
            await store.record(attempt(f"msg_{i:04d}", b"x" * 4000))
        # However far a loaded machine let the checkpoints fall behind, once the store has
        # settled the next commit starts the log over and cuts it back.
        await store.settled()
        await store.record(attempt("msg_after", b"x" * 4000))
        await store.settled()
        size = log.stat().st_size
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            busy, log_frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0
    assert size < 12 * 1024 * 1024, size  # started over (and cut back) along the way
    assert log_frames * 4096 <= size


async def test_a_finalizer_sees_the_right_number_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "again.sqlite3"
    async with await Store.open(path) as store:
        await store.record(attempt("msg_old"))
        await store.record(attempt("msg_old"))
    async with await Store.open(path) as store:
        seen: list[int] = []

        def finalize(numbered: Attempt) -> Attempt:
            seen.append(numbered.attempt_no)
            return numbered

        stored = await store.record(attempt("msg_old"), finalize)
        assert stored.attempt_no == 3 and seen[-1] == 3
        again = await store.record(attempt("msg_old"), finalize)
        assert again.attempt_no == 4 and seen[-1] == 4
