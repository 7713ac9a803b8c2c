"""The one way SQLite runs off the event loop: calls run in order on one thread, results and
errors come back through futures, a cancelled call is skipped, and a closed thread takes no more
calls but finishes those queued."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from walletpass_tui.sqlite_thread import SqliteThread, ThreadConnection


async def test_calls_run_in_order_on_one_thread_with_their_connection(tmp_path: Path) -> None:
    thread = SqliteThread("test-sqlite")
    db = await thread.run(sqlite3.connect, tmp_path / "t.sqlite3")  # made on the thread
    await thread.run(db.execute, "CREATE TABLE t (n INTEGER)")
    names: list[str] = []

    def insert(n: int) -> None:
        names.append(threading.current_thread().name)
        db.execute("INSERT INTO t VALUES (?)", (n,))

    await asyncio.gather(*(thread.run(insert, n) for n in range(50)))
    rows = await thread.run(lambda: db.execute("SELECT n FROM t").fetchall())
    assert [n for (n,) in rows] == list(range(50))  # in the order queued
    assert set(names) == {"test-sqlite"}
    await thread.run(db.close)
    thread.close(wait=True)
    assert thread.closed


async def test_an_error_reaches_the_caller_and_the_thread_goes_on() -> None:
    thread = SqliteThread("test-sqlite")
    db = await thread.run(sqlite3.connect, ":memory:")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await thread.run(db.execute, "SELECT * FROM missing")
    assert await thread.run(lambda: db.execute("SELECT 1").fetchone()) == (1,)
    await thread.run(db.close)
    thread.close()


async def test_a_call_cancelled_before_its_turn_is_skipped() -> None:
    thread = SqliteThread("test-sqlite")
    release = threading.Event()
    ran: list[str] = []
    blocker = thread.run(release.wait, 10)
    skipped = thread.run(ran.append, "skipped")
    skipped.cancel()  # reaches the thread's queue on the loop's next turn
    later = thread.run(ran.append, "later")
    await asyncio.sleep(0)
    release.set()
    await blocker
    await later
    assert ran == ["later"]
    thread.close()


def test_a_closed_thread_finishes_what_was_queued_and_takes_no_more() -> None:
    thread = SqliteThread("test-sqlite")
    release = threading.Event()
    thread.submit(release.wait, 10)
    queued = thread.submit(lambda: "done")
    thread.close()
    with pytest.raises(RuntimeError, match="closed"):
        thread.submit(lambda: None)
    release.set()
    assert queued.result(timeout=10) == "done"
    thread.close(wait=True)  # a second close does nothing more


async def test_a_closed_connection_has_ended_its_thread(tmp_path: Path) -> None:
    """When ``close()`` returns, the connection's thread is gone: a component that closes its
    parts on a failed start (the relay, the store) leaves no thread of theirs behind."""
    for n in range(20):  # the thread's end raced the return before
        conn = await ThreadConnection.open(
            f"test-join-{n}", lambda path: sqlite3.connect(path), tmp_path / "j.sqlite3"
        )
        await conn.fetchall("SELECT 1")
        await conn.close()
        assert not [t for t in threading.enumerate() if t.name == f"test-join-{n}"]
