"""History files are private (0600) whatever the umask and the directory's mode."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import factories
import pytest

from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.store import Store


def make(webhook_id: str) -> Attempt:
    return factories.attempt(webhook_id, b'{"secret": "delivery data"}')


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def files_of(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(path.name))


async def test_database_wal_and_shm_are_created_0600(tmp_path: Path, loose_umask: None) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)  # a directory others may list
    path = home / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        await store.record(make("msg_1"))
        names = {p.name for p in files_of(path)}
        assert {"deliveries.sqlite3", "deliveries.sqlite3-wal", "deliveries.sqlite3-shm"} <= names
        assert {p.name: mode(p) for p in files_of(path)} == {name: 0o600 for name in names}


async def test_loose_files_from_before_are_tightened(tmp_path: Path, loose_umask: None) -> None:
    path = tmp_path / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        await store.record(make("msg_1"))
    for p in files_of(path):
        p.chmod(0o644)
    (tmp_path / "deliveries.sqlite3-wal").touch(mode=0o644)
    async with await Store.open(path) as store:
        await store.record(make("msg_2"))
        assert all(mode(p) == 0o600 for p in files_of(path)), {
            p.name: oct(mode(p)) for p in files_of(path)
        }


@pytest.mark.slow
async def test_a_second_store_on_the_same_history_keeps_the_first_ones_locks(
    tmp_path: Path,
) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it: opening
    the history again in the same process must not open and close the file by hand, or another
    process closing its own connection would take the write-ahead log away from the first."""
    path = tmp_path / "deliveries.sqlite3"
    first = await Store.open(path)
    try:
        await first.record(make("msg_before"))
        second = await Store.open(path)
        await second.close()
        other = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT count(*) FROM sqlite_master').fetchall(); c.close()"
        )
        done = await asyncio.create_subprocess_exec(sys.executable, "-c", other, str(path))
        assert await done.wait() == 0
        assert path.with_name(path.name + "-wal").exists()
        await first.record(make("msg_after"))
    finally:
        await first.close()
    check = sqlite3.connect(path)
    try:
        ids = {row[0] for row in check.execute("SELECT webhook_id FROM attempts")}
    finally:
        check.close()
    assert ids == {"msg_before", "msg_after"}
