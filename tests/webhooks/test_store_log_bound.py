"""The write-ahead log stays bounded however long deliveries keep coming: the writer starts it
over between batches once it passes its bound, deliveries waiting or not, and never waits for a
reader to do so (see checkpoints.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import factories

from walletpass_tui.webhooks.models import Attempt, LogFilter
from walletpass_tui.webhooks.store import Store

T0 = 1_795_000_000_000
BOUND = 256 * 1024
PER_BATCH = 2 * 1024 * 1024
ROWS = 12_000
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_0001"}, "pad": "' + b"x" * 900 + b'"}'


def make(i: int) -> Attempt:
    msg = f"msg_{i:06d}"
    return factories.attempt(
        msg, BODY, at=T0 + i, headers=(("webhook-id", msg),), topic="pass.activated"
    )


async def test_the_log_stays_bounded_while_deliveries_never_stop(tmp_path: Path) -> None:
    path = tmp_path / "bounded.sqlite3"
    log = tmp_path / "bounded.sqlite3-wal"
    sizes: list[int] = []
    commits: list[int] = []

    def after_commit(batch: Sequence[Attempt]) -> None:
        commits.append(len(batch))
        with contextlib.suppress(FileNotFoundError):
            sizes.append(os.stat(log).st_size)

    async with await Store.open(path, log_bound_bytes=BOUND) as store:
        store.subscribe(after_commit)
        # Everything is queued at once: the writer never finds the queue empty, so it is never
        # idle between batches until the last one (nothing but the bound starts the log over).
        stored = await asyncio.gather(*(store.record(make(i)) for i in range(ROWS)))
        assert len(stored) == ROWS and max(commits) > 1
        # A batch (512 rows at most) writes its rows and the pages of six indexes: about 1 MB
        # here, so PER_BATCH is twice that; a read of the search indexer's that overlaps the
        # commit that would start the log over puts that off by a batch, hence half a
        # PER_BATCH more. The bound does not depend on the machine's speed; the log of all these
        # commits, never started over, is over 20 MB.
        assert max(sizes) <= 2 * BOUND + PER_BATCH + PER_BATCH // 2, max(sizes)
        assert await store.count(LogFilter()) == ROWS
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT COUNT(*) FROM attempts").fetchone() == (ROWS,)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


HELD_BOUND = 64 * 1024
HELD_COMMITS = 400


async def test_a_reader_holding_the_log_never_holds_up_a_commit(tmp_path: Path) -> None:
    """Another program's read transaction pins the log's frames: the log cannot start over while
    it lasts, but every delivery is committed meanwhile, one after the other, and the log starts
    over within a few commits of the reader's end."""
    path = tmp_path / "held.sqlite3"
    log = tmp_path / "held.sqlite3-wal"
    async with await Store.open(path, log_bound_bytes=HELD_BOUND) as store:
        await store.record(make(0))
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            assert reader.execute("SELECT COUNT(*) FROM attempts").fetchone() == (1,)
            # Each commit adds about half a bound here: a writer that waited for readers each
            # time the log passed its bound again (1 s each, as this one once did) would spend
            # minutes over these; the deadline only ends such a hang.
            peak = 0
            async with asyncio.timeout(150):
                for i in range(1, HELD_COMMITS + 1):
                    await store.record(make(i))
                    peak = max(peak, os.stat(log).st_size)
            assert peak > 20 * HELD_BOUND  # it could not start over: the reader needs its frames
            assert reader.execute("SELECT COUNT(*) FROM attempts").fetchone() == (1,)
            reader.execute("COMMIT")
        # The reader is gone: a few commits later the log has started over and been cut back.
        for extra in range(1, 11):
            await store.record(make(HELD_COMMITS + extra))
            if os.stat(log).st_size <= HELD_BOUND:
                break
        else:
            raise AssertionError(f"the log is still {os.stat(log).st_size} bytes")
        assert await store.count(LogFilter()) == HELD_COMMITS + 1 + extra
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
