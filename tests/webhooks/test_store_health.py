"""A damaged or unwritable history is reported loudly: at open, and on every failed write (one line
on stderr naming the file and the fix, and the same sentence for the dashboard's header)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from pathlib import Path

import factories
import pytest

from walletpass_tui.webhooks.models import Attempt, StoreError
from walletpass_tui.webhooks.store import Store

T0 = 1_795_000_000_000
ROWS = 3000
PAGE = 4096


def make(webhook_id: str) -> Attempt:
    body = b'{"type": "pass.activated", "data": {"passId": "pass_0001"}}' + b" " * 200
    return factories.attempt(webhook_id, body, headers=(("webhook-id", webhook_id),))


def build(path: Path) -> None:
    """A real history of ROWS deliveries, checkpointed into the file, and closed."""

    async def fill() -> None:
        async with await Store.open(path) as store:
            await asyncio.gather(*(store.record(make(f"msg_{i:05d}")) for i in range(ROWS)))
            await store.settled()

    asyncio.run(fill())
    assert not path.with_name(path.name + "-wal").exists()  # all of it is in the file


def pages(path: Path, name: str, pagetype: str) -> list[int]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [
            int(r[0])
            for r in db.execute(
                "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno",
                (name, pagetype),
            )
        ]


def garble(path: Path, page_numbers: list[int]) -> None:
    with path.open("r+b") as fh:
        for number in page_numbers:
            fh.seek((number - 1) * PAGE)
            fh.write(os.urandom(PAGE))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "deliveries.sqlite3"
    build(path)
    return path


def copy_of(history: Path, tmp_path: Path) -> Path:
    path = tmp_path / "deliveries.sqlite3"
    path.write_bytes(history.read_bytes())
    return path


async def test_a_cut_off_file_is_reported_damaged_at_open(history: Path, tmp_path: Path) -> None:
    path = copy_of(history, tmp_path)
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size * 6 // 10)
    with pytest.raises(StoreError, match=rf"{path} is damaged; move it aside"):
        await Store.open(path)


async def test_a_garbled_table_is_reported_damaged_at_open(history: Path, tmp_path: Path) -> None:
    path = copy_of(history, tmp_path)
    garble(path, pages(path, "attempts", "leaf")[-1:])  # where the newest rows live
    with pytest.raises(StoreError, match="is damaged"):
        await Store.open(path)


async def test_damage_found_by_a_write_is_said_on_every_failure(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_of(history, tmp_path)
    # The middle of the indexes a new attempt of msg_015xx goes into: the bounded check at open
    # reads only their edges, a write reads the middle.
    for index in ("attempts_by_message", "sqlite_autoindex_messages_1"):
        garble(path, pages(path, index, "leaf")[1:-1])
    async with await Store.open(path) as store:
        heard: list[str | None] = []
        store.on_health(heard.append)
        assert store.health.problem is None
        for _ in range(2):
            with pytest.raises(StoreError, match="is damaged"):
                await store.record(make("msg_01500"))
        lines = capsys.readouterr().err.splitlines()
        expected = (
            f"walletpass-tui: The history database {path} is damaged; move it aside "
            "(a new one will be created) or restore a backup."
        )
        assert lines == [expected, expected]  # one line per failed write, naming file and fix
        assert store.health.problem == expected.removeprefix("walletpass-tui: ")
        assert heard == [store.health.problem]  # subscribers hear of the change once


async def test_a_locked_database_is_reported_and_recovery_is_announced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with await Store.open(tmp_path / "l.sqlite3", busy_timeout_ms=50) as store:
        heard: list[str | None] = []
        unsubscribe = store.on_health(heard.append)
        with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as other:
            other.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StoreError, match="locked by another program"):
                await store.record(make("msg_blocked"))
            other.execute("ROLLBACK")
        assert "is locked by another program" in capsys.readouterr().err
        assert (await store.record(make("msg_after"))).attempt_no == 1
        assert store.health.problem is None
        assert heard == [heard[0], None] and "locked" in str(heard[0])
        unsubscribe()
        assert capsys.readouterr().err == ""  # a successful write prints nothing


async def test_a_failed_forward_write_is_reported_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with await Store.open(tmp_path / "f.sqlite3", busy_timeout_ms=50) as store:
        with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as other:
            other.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StoreError, match="locked"):
                await store.give_up_pending()
            other.execute("ROLLBACK")
        assert capsys.readouterr().err.count("\n") == 1
        assert store.health.problem is not None
