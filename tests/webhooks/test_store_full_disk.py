"""Looking at the history works when nothing can be written: ``events list``, ``show``,
``export`` and ``stats`` on a full disk, when a person needs to look and export before pruning.

A full disk is made with RLIMIT_FSIZE in the command's own process (any user can lower it): every
write to a file then fails (EFBIG, SIGXFSZ ignored), as on a full disk, and harder, since even
rewriting a file in place fails. A look must write nothing at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from walletpass_tui.webhooks.models import VERIFIED, Attempt, LogFilter
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.indexer import index_path
from walletpass_tui.webhooks.store.read_only import Outdated, open_history
from walletpass_tui.webhooks.store.tables import MIGRATIONS

T0 = 1_795_000_000_000
NO_WRITES = (
    "import resource, runpy, signal, sys; "
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
    "resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1])); "
    "sys.argv = ['walletpass-tui', *sys.argv[1:]]; "
    "runpy.run_module('walletpass_tui', run_name='__main__')"
)


def make(webhook_id: str, body: bytes = b'{"note": "harbour ferry"}') -> Attempt:
    return Attempt(
        received_at_ms=T0,
        method="POST",
        path="/webhooks",
        headers=(("webhook-id", webhook_id),),
        body=body,
        verdict=VERIFIED,
        reason="verified",
        status=200,
        webhook_id=webhook_id,
        topic="pass.activated",
    )


def events(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``walletpass-tui events ...`` in a process that cannot write to any file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", NO_WRITES, "events", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def files(home: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(home.iterdir())}


async def record(path: Path, *ids: str) -> None:
    async with await Store.open(path) as store:
        for webhook_id in ids:
            await store.record(make(webhook_id))
        await store.settled()


@pytest.mark.slow
def test_the_writes_really_fail_in_that_process(tmp_path: Path) -> None:
    probe = "import os; os.write(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT), b'x')"
    script = NO_WRITES.replace("runpy.run_module('walletpass_tui', run_name='__main__')", probe)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "f")], capture_output=True, text=True
    )
    assert done.returncode != 0 and "File too large" in done.stderr


def test_list_show_and_export_work_on_a_full_disk(clean_env: Path) -> None:
    path = clean_env / "deliveries.sqlite3"
    asyncio.run(record(path, "msg_one", "msg_two", "msg_three"))
    before = files(clean_env)
    assert "deliveries.sqlite3-wal" not in before  # closed cleanly: the file holds every row

    listed = events(clean_env, "list", "--json")
    assert (listed.returncode, listed.stderr) == (0, "")
    assert [m["webhook_id"] for m in json.loads(listed.stdout)] == [
        "msg_three",
        "msg_two",
        "msg_one",
    ]
    found = events(clean_env, "list", "--search", "three", "--json")
    assert [m["webhook_id"] for m in json.loads(found.stdout)] == ["msg_three"]
    shown = events(clean_env, "show", "msg_two", "--json")
    assert (
        shown.returncode == 0 and json.loads(shown.stdout)["attempts"][0]["webhook_id"] == "msg_two"
    )
    exported = events(clean_env, "export", "--search", "ferry")
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 3
    assert files(clean_env) == before  # not a file created, not a byte written


def test_stats_works_on_a_full_disk_and_writes_nothing(clean_env: Path) -> None:
    path = clean_env / "deliveries.sqlite3"
    now = int(time.time() * 1000)

    async def record_now() -> None:
        async with await Store.open(path) as store:
            for webhook_id in ("msg_one", "msg_two", "msg_three"):
                await store.record(dataclasses.replace(make(webhook_id), received_at_ms=now))
            await store.settled()

    asyncio.run(record_now())
    before = files(clean_env)
    assert "deliveries.sqlite3-wal" not in before  # closed cleanly: the file holds every row

    stats = events(clean_env, "stats", "--json")  # the last 24 hours
    assert (stats.returncode, stats.stderr) == (0, "")
    assert json.loads(stats.stdout)["totals"]["attempts"] == 3
    assert files(clean_env) == before  # no -wal or -shm left behind


async def test_a_look_on_a_full_disk_sees_what_a_running_receiver_just_stored(
    clean_env: Path,
) -> None:
    """The receiver runs (its log holds the newest rows, its -shm exists): read through them."""
    path = clean_env / "deliveries.sqlite3"
    await record(path, "msg_old")
    async with await Store.open(path) as store:
        await store.record(make("msg_new_in_the_log"))
        await store.settled()
        assert await asyncio.to_thread(os.path.getsize, f"{path}-wal") > 0
        listed = await asyncio.to_thread(events, clean_env, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [m["webhook_id"] for m in json.loads(listed.stdout)] == [
            "msg_new_in_the_log",
            "msg_old",
        ]
        found = await asyncio.to_thread(events, clean_env, "list", "--search", "new_in", "--json")
        assert [m["webhook_id"] for m in json.loads(found.stdout)] == ["msg_new_in_the_log"]


def insert_behind_the_index(path: Path, webhook_id: str) -> None:
    """Another program adds a row and nothing indexes it (no store runs)."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute(
            "INSERT INTO attempts (webhook_id, received_at_ms, method, path, headers, body, "
            "body_size, verdict, reason, status) VALUES "
            "(?, ?, 'POST', '/webhooks', '[]', X'6665727279', 5, 'verified', 'verified', 200)",
            (webhook_id, T0),
        )
        db.execute(
            "INSERT INTO messages VALUES (?, NULL, NULL, 1, 1, ?, ?, last_insert_rowid(), "
            "'verified', NULL, 200, NULL)",
            (webhook_id, T0, T0),
        )


async def test_a_look_finds_rows_the_index_does_not_hold_yet(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    await record(path, "msg_indexed")
    insert_behind_the_index(path, "msg_unindexed")
    async with await open_history(path) as history:
        assert [r.webhook_id for r in await history.log_page(LogFilter(text="ferry"))] == [
            "msg_unindexed",
            "msg_indexed",
        ]
        assert await history.count(LogFilter(text="unindexed")) == 1
        messages = await history.list_messages(text="ferry")
        assert [m.webhook_id for m in messages] == ["msg_unindexed", "msg_indexed"]
    # Without any index file, every row is looked at.
    for file in index_path(path).parent.glob(index_path(path).name + "*"):
        file.unlink()
    async with await open_history(path) as history:
        assert await history.count(LogFilter(text="ferry")) == 2
        assert await history.count(LogFilter(text="dexed")) == 2
    assert not index_path(path).exists()  # a look does not create one


async def test_a_history_from_an_older_version_is_left_to_the_store(tmp_path: Path) -> None:
    path = tmp_path / "v6.sqlite3"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        for step in range(1, 7):
            for statement in MIGRATIONS[step].split(";\n"):
                if statement.strip() and "wp_digest" not in statement:
                    db.execute(statement)
        db.execute("PRAGMA user_version = 6")
    with pytest.raises(Outdated):
        await open_history(path)


FILL_UNTIL_FULL = """
import asyncio, json, os, resource, signal, sys
from pathlib import Path
from walletpass_tui.webhooks.models import VERIFIED, Attempt, StoreError
from walletpass_tui.webhooks.store import Store

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def make(i):
    return Attempt(received_at_ms=1_795_000_000_000, method="POST", path="/webhooks",
        headers=(), body=b"x" * 8000, verdict=VERIFIED, reason="verified", status=200,
        webhook_id=f"msg_{i:04d}")


async def main():
    path = Path(sys.argv[1])
    acked, failures = [], []
    async with await Store.open(path) as store:
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        room = os.path.getsize(f"{path}-wal") + 200_000
        resource.setrlimit(resource.RLIMIT_FSIZE, (room, hard))  # the disk is full from here
        i = 0
        while len(failures) < 3 and i < 1000:
            try:
                acked.append((await store.record(make(i))).webhook_id)
            except StoreError as exc:
                failures.append(str(exc))
            i += 1
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # space freed
        acked.append((await store.record(make(i))).webhook_id)
    print(json.dumps({"acked": acked, "failures": failures}))


asyncio.run(main())
"""


@pytest.mark.slow
def test_a_full_disk_while_receiving_acknowledges_nothing_it_could_not_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries.sqlite3"
    done = subprocess.run(
        [sys.executable, "-c", FILL_UNTIL_FULL, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["failures"]) == 3 and len(result["acked"]) > 1
    assert all(
        f.startswith(f"The history database {path}") and "check the disk" in f
        for f in result["failures"]
    )
    assert "Traceback" not in done.stderr
    with contextlib.closing(sqlite3.connect(path)) as db:
        stored = {r[0] for r in db.execute("SELECT webhook_id FROM attempts")}
    assert set(result["acked"]) <= stored  # the last one after space was freed too
