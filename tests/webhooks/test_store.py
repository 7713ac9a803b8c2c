"""The delivery store: durable rows, messages by webhook-id, group commit, limits, schema, failures."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import T0, json_attempt

from walletpass_tui.webhooks.models import (
    REJECTED,
    REJECTED_BODY_LIMIT,
    VERIFIED,
    Attempt,
    LogFilter,
    StoreError,
)
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.indexer import index_path
from walletpass_tui.webhooks.store.tables import MIGRATIONS, SCHEMA_VERSION


@pytest.fixture
async def store(tmp_path: Path) -> Store:
    s = await Store.open(tmp_path / "h" / "deliveries.sqlite3")
    yield s
    await s.close()


def raw_rows(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql, params).fetchall()


# -- rows and messages ---------------------------------------------------------------------------


async def test_an_attempt_is_stored_whole(store: Store) -> None:
    body = b"\xff\x00not json, not utf-8\r\n\x80"
    stored = await store.record(
        json_attempt(
            "msg_raw",
            body=body,
            remote_addr="127.0.0.1",
            forwarded_for="44.228.126.217, 10.0.0.1",
            endpoint_id="ep_1",
            processing_ms=1.25,
            detail="why",
            note="a note",
            body_size=len(body),
        )
    )
    assert stored.id > 0 and stored.attempt_no == 1
    again = await store.attempt(stored.id)
    assert again is not None
    assert again.body == body  # byte for byte
    assert again.received_at_ms == T0
    assert again.remote_addr == "127.0.0.1"
    assert again.forwarded_for == "44.228.126.217, 10.0.0.1"
    assert again.headers == (("Content-Type", "application/json"), ("webhook-id", "msg_raw"))
    assert (again.verdict, again.reason, again.detail) == (VERIFIED, "verified", "why")
    assert (again.endpoint_id, again.status, again.note) == ("ep_1", 200, "a note")
    assert again.processing_ms == pytest.approx(1.25)
    assert again.body_size == len(body) and not again.body_truncated
    # Exactly as SQLite holds it, not just as our reader rebuilds it.
    [(blob,)] = raw_rows(store.path, "SELECT body FROM attempts WHERE id = ?", (stored.id,))
    assert blob == body


async def test_attempts_are_grouped_into_messages_by_webhook_id(store: Store) -> None:
    first = await store.record(json_attempt("msg_a", verdict=REJECTED, at=T0))
    second = await store.record(json_attempt("msg_a", at=T0 + 5000, endpoint_id="ep_9"))
    third = await store.record(json_attempt("msg_a", at=T0 + 305_000, status=200))
    await store.record(json_attempt("msg_b", at=T0 + 1))
    assert [first.attempt_no, second.attempt_no, third.attempt_no] == [1, 2, 3]
    attempts = await store.message_attempts("msg_a")
    assert [a.attempt_no for a in attempts] == [1, 2, 3]
    messages = {m.webhook_id: m for m in await store.list_messages()}
    a = messages["msg_a"]
    assert a.attempts == 3
    assert a.verdict == VERIFIED  # one verified attempt makes the message verified
    assert a.first_received_at_ms == T0 and a.last_received_at_ms == T0 + 305_000
    assert a.endpoint_id == "ep_9"
    assert a.topic is None  # labels come from the receiver; none were given here
    assert messages["msg_b"].attempts == 1
    stats = await store.stats()
    assert (stats.received, stats.verified, stats.rejected, stats.redeliveries) == (4, 3, 1, 2)


async def test_attempts_without_webhook_id_are_rows_but_no_message(store: Store) -> None:
    stored = await store.record(json_attempt(None, verdict=REJECTED))
    assert stored.attempt_no == 1
    assert await store.count() == 1
    assert await store.list_messages() == []


async def test_rejected_bodies_are_cut_at_64_kib_verified_ones_are_not(store: Store) -> None:
    big = b"x" * (REJECTED_BODY_LIMIT * 2 + 3)
    rejected = await store.record(json_attempt("msg_big_r", verdict=REJECTED, body=big))
    verified = await store.record(json_attempt("msg_big_v", body=big))
    r = await store.attempt(rejected.id)
    v = await store.attempt(verified.id)
    assert r is not None and v is not None
    assert len(r.body) == REJECTED_BODY_LIMIT and r.body_size == len(big) and r.body_truncated
    assert v.body == big and not v.body_truncated


async def test_oldest_rejected_are_pruned_past_the_cap_verified_history_stays(
    tmp_path: Path,
) -> None:
    async with await Store.open(tmp_path / "d.sqlite3", rejected_cap=10) as store:
        for i in range(5):
            await store.record(json_attempt(f"msg_ok_{i}"))
        for i in range(30):
            await store.record(json_attempt(f"msg_bad_{i:02d}", verdict=REJECTED))
        await store.settled()
        rejected = await store.log_page(LogFilter(verdict=REJECTED), limit=100)
        assert len(rejected) == 10
        assert {r.webhook_id for r in rejected} == {f"msg_bad_{i:02d}" for i in range(20, 30)}
        assert await store.count(LogFilter(verdict=VERIFIED)) == 5
        # The pruned messages are gone; the search index forgot them too.
        ids = {m.webhook_id for m in await store.list_messages(limit=100)}
        assert "msg_bad_00" not in ids and "msg_bad_29" in ids
        assert await store.count(LogFilter(text="msg_bad_00")) == 0
        assert await store.count(LogFilter(text="msg_bad_29")) == 1


async def test_text_that_is_not_utf8_is_stored_escaped_and_the_writer_survives(
    store: Store,
) -> None:
    # aiohttp hands over header bytes that are not UTF-8 as lone surrogates.
    odd = json_attempt(
        "msg_\udcff\udcfe",
        headers=(("X-Odd", "caf\udce9"),),
        forwarded_for="\udcff",
        topic="\ud800",
    )
    stored = await store.record(odd)
    assert stored.webhook_id == "msg_\\xff\\xfe"
    again = await store.attempt(stored.id)
    assert again is not None
    assert again.headers == (("X-Odd", "caf\\xe9"),)
    assert again.forwarded_for == "\\xff"
    assert again.topic == "?"
    assert (await store.record(json_attempt("msg_after"))).id == stored.id + 1


async def test_search_finds_bodies_and_ids_after_the_commit(store: Store) -> None:
    await store.record(json_attempt("msg_s1", body=b'{"data": {"passId": "pass_0042"}}'))
    await store.record(json_attempt("msg_s2", body=b'{"data": {"passId": "pass_0043"}}'))
    await store.settled()
    found = await store.log_page(LogFilter(text="pass_0042"))
    assert [r.webhook_id for r in found] == ["msg_s1"]
    assert [r.webhook_id for r in await store.log_page(LogFilter(text="msg_s"))] == [
        "msg_s2",
        "msg_s1",
    ]


async def test_ids_are_never_reused_after_everything_was_pruned(store: Store) -> None:
    old = await store.record(json_attempt("msg_old", body=b"needle-one"))
    await store.settled()
    assert await store.prune_older_than(T0 + 1) == 1
    new = await store.record(json_attempt("msg_new", body=b"needle-two", at=T0 + 10))
    await store.settled()
    assert new.id > old.id
    assert [r.webhook_id for r in await store.log_page(LogFilter(text="needle"))] == ["msg_new"]


async def test_pruning_rows_the_index_never_saw_keeps_the_index_sound(store: Store) -> None:
    # Rows written by another process (or committed just before a crash) are not indexed yet.
    await store.record(json_attempt("msg_indexed", body=b"alpha"))
    await store.settled()
    with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as other:
        other.execute(
            "INSERT INTO attempts (webhook_id, received_at_ms, method, path, headers, body, "
            "body_size, verdict, reason, status) "
            "VALUES ('msg_raw', ?, 'POST', '/webhooks', '[]', X'ff61', 2, 'rejected', 'x', 401)",
            (T0 - 1,),
        )
    assert await store.prune_older_than(T0) == 1
    await store.record(json_attempt("msg_later", body=b"alpha beta", at=T0 + 1))
    await store.settled()
    assert await store.count(LogFilter(text="alpha")) == 2
    rows = raw_rows(
        index_path(store.path),
        "INSERT INTO attempts_fts(attempts_fts, rank) VALUES ('integrity-check', 0)",
    )
    assert rows == []


# -- group commit and concurrency ----------------------------------------------------------------


async def test_concurrent_records_share_few_commits(store: Store) -> None:
    await store.settled()
    n = 300
    before = store.commits
    stored = await asyncio.gather(*(store.record(json_attempt(f"msg_c{i:03d}")) for i in range(n)))
    assert sorted(a.id for a in stored) == list(range(stored[0].id, stored[0].id + n))
    # The transactions that stored these rows (the store's public counter).
    batches = store.commits - before
    assert 1 <= batches <= 5, batches
    assert await store.count() == n


async def test_concurrent_redeliveries_get_consecutive_attempt_numbers(store: Store) -> None:
    ids = [f"msg_r{i}" for i in range(20)]
    work = [json_attempt(w) for w in ids for _ in range(5)]
    stored = await asyncio.gather(*(store.record(a) for a in work))
    by_id: dict[str, list[int]] = {}
    for a in stored:
        by_id.setdefault(a.webhook_id or "", []).append(a.attempt_no)
    assert all(sorted(v) == [1, 2, 3, 4, 5] for v in by_id.values())
    assert {m.attempts for m in await store.list_messages(limit=100)} == {5}


async def test_readers_do_not_block_the_writer_and_see_only_committed_rows(store: Store) -> None:
    await store.record(json_attempt("msg_before"))
    with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM attempts").fetchone() == (1,)
        # The open read transaction does not hold it up (it would fail as "locked" if it did).
        await store.record(json_attempt("msg_during"))
        assert reader.execute("SELECT COUNT(*) FROM attempts").fetchone() == (1,)  # snapshot
        reader.execute("COMMIT")
        assert reader.execute("SELECT COUNT(*) FROM attempts").fetchone() == (2,)
        assert raw_rows(store.path, "PRAGMA journal_mode") == [("wal",)]


async def test_queries_answer_while_another_connection_holds_the_write_lock(store: Store) -> None:
    await store.record(json_attempt("msg_1"))
    with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        other.execute("DELETE FROM meta WHERE key = 'nothing'")
        assert len(await store.log_page()) == 1  # a blocked read would fail as "locked"
        other.execute("ROLLBACK")


async def test_close_commits_what_was_queued(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    store = await Store.open(path)
    pending = [asyncio.ensure_future(store.record(json_attempt(f"msg_q{i}"))) for i in range(50)]
    await asyncio.sleep(0)
    await store.close()
    await store.close()  # twice is fine
    assert all(p.done() and not p.exception() for p in pending)
    assert raw_rows(path, "SELECT COUNT(*) FROM attempts") == [(50,)]
    with pytest.raises(StoreError, match="closed"):
        await store.record(json_attempt("msg_late"))


# -- failures --------------------------------------------------------------------------------------


async def test_a_write_failure_is_a_store_error_and_the_writer_recovers(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "f.sqlite3", busy_timeout_ms=50) as store:
        with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as other:
            other.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StoreError, match="locked"):
                await store.record(json_attempt("msg_blocked"))
            other.execute("ROLLBACK")
        stored = await store.record(json_attempt("msg_after"))
        assert stored.attempt_no == 1
        assert await store.count() == 1


async def test_a_finalizer_bug_fails_its_batch_not_the_writer(store: Store) -> None:
    def broken(a: Attempt) -> Attempt:
        raise RuntimeError("boom")

    with pytest.raises(StoreError, match="boom"):
        await store.record(json_attempt("msg_x"), broken)
    assert (await store.record(json_attempt("msg_y"))).attempt_no == 1


def _lock_file(path: Path) -> Iterator[None]:
    """Make ``path`` (file or directory) unwritable, even for root (chattr +i), for the block."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode:
        pytest.skip("running as root and cannot make a file immutable here")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


read_only = contextlib.contextmanager(_lock_file)


async def _make_db(path: Path) -> None:
    async with await Store.open(path) as s:
        await s.record(json_attempt("msg_1"))


async def test_read_only_database_is_a_clear_error_at_open(tmp_path: Path) -> None:
    path = tmp_path / "ro.sqlite3"
    await _make_db(path)
    with read_only(path), pytest.raises(StoreError, match=r"cannot be written|cannot be opened"):
        await Store.open(path, busy_timeout_ms=100)


async def test_unwritable_directory_is_a_clear_error_at_open(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    with read_only(folder), pytest.raises(StoreError, match=r"cannot be opened|cannot be written"):
        await Store.open(folder / "new.sqlite3")


async def test_a_data_directory_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StoreError, match="Cannot create the data directory"):
        await Store.open(tmp_path / "file" / "sub" / "d.sqlite3")


async def test_corrupt_database_is_a_clear_error_at_open(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite3"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(StoreError, match="damaged"):
        await Store.open(path)


@pytest.mark.parametrize("existing", [False, True], ids=["new-db", "wal-db"])
async def test_locked_database_is_a_clear_error_at_open(tmp_path: Path, existing: bool) -> None:
    path = tmp_path / "locked.sqlite3"
    if existing:
        await _make_db(path)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreError, match="locked by another program"):
            await Store.open(path, busy_timeout_ms=100)
        other.execute("ROLLBACK")
    async with await Store.open(path) as s:  # usable once the other program lets go
        assert await s.count() == (1 if existing else 0)


async def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    await _make_db(path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match=r"newer walletpass-tui .*upgrade"):
        await Store.open(path)


async def test_schema_is_versioned_and_migrated_forward(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.executescript(MIGRATIONS[1])
        db.execute("PRAGMA user_version = 1")
        db.execute(
            "INSERT INTO attempts (webhook_id, received_at_ms, method, path, headers, body, "
            "body_size, verdict, reason, status) "
            "VALUES ('msg_old', ?, 'POST', '/webhooks', '[]', CAST('needle' AS BLOB), 6, "
            "'verified', 'verified', 200)",
            (T0,),
        )
        db.execute(
            "INSERT INTO messages VALUES ('msg_old', NULL, NULL, 1, 1, ?, ?, 1, 'verified', NULL, "
            "200)",
            (T0, T0),
        )
    async with await Store.open(path) as store:
        assert raw_rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
        # The old row survived and was indexed by the migration's backlog pass.
        assert [r.webhook_id for r in await store.log_page(LogFilter(text="needle"))] == ["msg_old"]
        assert (await store.record(json_attempt("msg_old"))).attempt_no == 2
        assert await store.forwards_for_message("msg_old") == []
