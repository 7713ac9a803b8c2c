"""A commit is on disk before anybody hears of it: the log's fsync runs on its own thread, the
caller waits for it, and one fsync covers the commits made while another ran."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from factories import json_attempt
from forward_helpers import eventually

from walletpass_tui.webhooks.models import StoreError
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store import wal_sync as wal_sync_module


class GatedFsync:
    """os.fsync for the log, held until released; counts the calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.started = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.fail = False
        self._real = os.fsync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        self.started.set()
        self.release.wait(10)
        if self.fail:
            raise OSError(5, "Input/output error")
        self._real(fd)


@pytest.fixture
def fsync(monkeypatch: pytest.MonkeyPatch) -> GatedFsync:
    gated = GatedFsync()
    monkeypatch.setattr(wal_sync_module.os, "fsync", gated)
    return gated


@pytest.fixture
async def store(tmp_path: Path, fsync: GatedFsync) -> AsyncIterator[Store]:
    s = await Store.open(tmp_path / "deliveries.sqlite3")
    yield s
    fsync.release.set()
    await s.close()


def rows_on_disk(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
    finally:
        db.close()


async def wait_for(event: threading.Event) -> None:
    await asyncio.to_thread(event.wait, 10)
    assert event.is_set()


async def test_a_lone_delivery_is_answered_only_after_the_fsync_of_its_commit(
    store: Store, fsync: GatedFsync
) -> None:
    fsync.release.clear()
    recording = asyncio.create_task(store.record(json_attempt("msg_a")))
    await wait_for(fsync.started)
    # Committed (another connection sees the row), but the caller has not heard yet.
    assert rows_on_disk(store.path) == 1
    await asyncio.sleep(0.05)
    assert not recording.done()
    fsync.release.set()
    stored = await recording
    assert stored.id is not None and fsync.calls == 1


async def test_commits_made_during_an_fsync_share_the_next_one(
    store: Store, fsync: GatedFsync
) -> None:
    fsync.release.clear()
    # A write of the store's own (a prune) has its fsync under way on the sync thread...
    pruning = asyncio.create_task(store.prune_older_than(0))
    await wait_for(fsync.started)
    # ...while deliveries keep being committed: the writer does not wait for the disk, but
    # nobody is answered before an fsync that began after their commit.
    recording = [asyncio.create_task(store.record(json_attempt(f"msg_{n}"))) for n in range(5)]

    async def all_committed() -> bool:
        return rows_on_disk(store.path) == 5

    await eventually(all_committed, timeout=10)
    await asyncio.sleep(0.05)
    assert not any(t.done() for t in [pruning, *recording])
    fsync.release.set()
    await asyncio.gather(pruning, *recording)
    assert fsync.calls == 2  # the prune's, then one for the five committed meanwhile


async def test_a_failed_fsync_fails_the_commits_it_covered_and_says_why(
    store: Store, fsync: GatedFsync
) -> None:
    fsync.fail = True
    with pytest.raises(StoreError, match=r"could not be written to disk \(Input/output error\)"):
        await store.record(json_attempt("msg_lost"))
    assert store.health.problem is not None and "check the disk" in store.health.problem
    fsync.fail = False
    assert (await store.record(json_attempt("msg_next"))).id is not None
    assert store.health.problem is None


async def test_relayed_deliveries_ask_for_no_fsync_of_their_own(
    store: Store, fsync: GatedFsync
) -> None:
    await store.record(
        json_attempt("msg_relayed", relay_url="https://relay.test/x", relay_cursor=1)
    )
    assert fsync.calls == 0
    await store.record(json_attempt("msg_posted"))
    assert fsync.calls == 1


async def test_a_waiter_that_gives_up_does_not_cancel_the_sync_for_the_others(
    tmp_path: Path, fsync: GatedFsync
) -> None:
    path = tmp_path / "deliveries.sqlite3"
    path.with_name(path.name + "-wal").write_bytes(b"")
    syncs = wal_sync_module.WalSync(path)
    fsync.release.clear()
    gives_up = asyncio.create_task(syncs.synced())
    await wait_for(fsync.started)
    shared = syncs.after_earlier()  # what a relayed commit waits on: the same sync
    assert shared is not None
    gives_up.cancel()
    await asyncio.sleep(0.01)
    fsync.release.set()
    await asyncio.wait([shared])
    assert not shared.cancelled() and shared.exception() is None
    await syncs.close()


def test_a_fifo_in_the_logs_place_fails_the_sync_never_waited_on(tmp_path: Path) -> None:
    """Opening a FIFO to read waits for a writer forever: every acknowledgement would wait."""
    path = tmp_path / "deliveries.sqlite3"
    os.mkfifo(path.with_name(path.name + "-wal"), 0o600)
    syncs = wal_sync_module.WalSync(path)
    outcome: list[BaseException | None] = []

    def sync() -> None:
        try:
            syncs.fsync_now()
            outcome.append(None)
        except StoreError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=sync, daemon=True)
    thread.start()
    thread.join(30)  # "did not wait on the FIFO"; never a timing
    assert outcome and isinstance(outcome[0], StoreError)
    assert "could not be written to disk" in str(outcome[0])
