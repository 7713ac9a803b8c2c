"""The write-ahead log stays bounded however long deliveries keep coming: the writer starts it
over between batches once it passes its bound, deliveries waiting or not (see checkpoints.py)."""

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
        # here, so PER_BATCH is twice that. The bound does not depend on the machine's speed;
        # the log of all these commits, never started over, is over 20 MB.
        assert max(sizes) <= 2 * BOUND + PER_BATCH, max(sizes)
        assert await store.count(LogFilter()) == ROWS
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT COUNT(*) FROM attempts").fetchone() == (ROWS,)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
