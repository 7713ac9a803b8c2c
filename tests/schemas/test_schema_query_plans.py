"""What the learner asks of the history costs the same over a long history as over a short one.

Every statement a learning step and a rebuild's start run is captured as SQLite runs it (its trace
callback), its plan read (``EXPLAIN QUERY PLAN``: the index it must use, never a scan of the
history), and the work SQLite does for a step of 512 rows counted (virtual machine steps, by a
progress handler: deterministic, never a time) over two histories, one ten times the other. The
histories hold redeliveries (the same body sent again), whose earlier attempts the step looks up.

The store's own hot queries are checked in tests/webhooks/test_store_query_plans.py.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from walletpass_tui.schemas import storage
from walletpass_tui.schemas.book import CHUNK, Book
from walletpass_tui.webhooks.store import tables

SMALL, LARGE = 3_000, 30_000
T0 = 1_795_000_000_000


def build(path: Path, n: int) -> None:
    """``n`` attempts written straight into the store's tables: one in 20 rejected, one in 10 a
    redelivery of the message five rows before (the same body: attempt 2, not body_differs)."""
    with contextlib.closing(tables.connect_writer(path, 5_000)) as db:
        db.execute("BEGIN")
        db.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO attempts (id, webhook_id, attempt_no, received_at_ms, method, path, "
            "headers, body, body_size, verdict, reason, status, topic, body_differs) "
            "SELECT i, 'msg_' || CASE WHEN i % 10 = 0 THEN i - 5 ELSE i END, "
            "CASE WHEN i % 10 = 0 THEN 2 ELSE 1 END, ? + i, 'POST', '/webhooks', '[]', "
            'CAST(printf(\'{"type":"pass.activated","data":{"n":%d}}\', i % 7) AS BLOB), '
            "40, CASE WHEN i % 20 = 3 THEN 'rejected' ELSE 'verified' END, 'verified', 200, "
            "'pass.activated', 0 FROM n",
            (n, T0),
        )
        db.execute("COMMIT")


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    found = {}
    for n in (SMALL, LARGE):
        path = tmp_path_factory.mktemp(f"h{n}") / "deliveries.sqlite3"
        build(path, n)
        found[n] = path
    return found


@contextlib.contextmanager
def watched(db: sqlite3.Connection) -> Iterator[tuple[list[str], Callable[[], int]]]:
    """The statements run on ``db`` meanwhile, and the virtual machine steps (in hundreds)."""
    statements: list[str] = []
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    db.set_trace_callback(statements.append)
    db.set_progress_handler(tick, 100)
    try:
        yield statements, lambda: count
    finally:
        db.set_trace_callback(None)
        db.set_progress_handler(None, 0)


def book_at(history: Path, upto: int) -> Book:
    """A book of ``history`` that has learned every row up to ``upto`` (as far as it knows)."""
    book = Book(history)
    book.open()
    assert book.db is not None
    storage.set_meta(book.db, "learned_upto", upto)
    storage.set_meta(book.db, "version", 10**6)  # another program's work: loaded again
    return book


def plans(db: sqlite3.Connection, statements: list[str]) -> list[str]:
    """The plan of each statement that reads the history (its text as run, values bound)."""
    out = []
    for sql in dict.fromkeys(statements):
        if "history." not in sql or not sql.lstrip().upper().startswith("SELECT"):
            continue
        rows = db.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
        out.append("\n".join(str(r[3]) for r in rows))
    return out


def test_a_learning_step_costs_the_same_over_a_history_ten_times_as_long(
    histories: dict[int, Path],
) -> None:
    cost = {}
    for n, path in histories.items():
        book = book_at(path, n - CHUNK)
        try:
            assert book.db is not None
            with watched(book.db) as (statements, steps):
                step = book.step()
            cost[n] = steps()
            assert (step.rows, step.upto) == (CHUNK, n)
            assert step.learned < step.verified  # the redeliveries were looked up, not learned
            found = plans(book.db, statements)
        finally:
            book.close()
        assert any("attempts_by_message" in p for p in found), found
        for plan in found:  # no scan of the history: every row found through an index
            assert "SCAN" not in plan.replace("SCAN CONSTANT ROW", ""), plan
            assert "attempts_by_verdict" not in plan, plan
    assert cost[LARGE] <= cost[SMALL] * 1.25, cost


def test_following_the_history_costs_the_same_over_a_history_ten_times_as_long(
    histories: dict[int, Path],
) -> None:
    """What the learner asks besides the rows: is the history the one learned, how far does it go
    (each step, and when it opens)."""
    cost = {}
    for n, path in histories.items():
        book = book_at(path, n)
        try:
            assert book.db is not None
            with watched(book.db) as (statements, steps):
                book.step()  # nothing new: the history's top and the last row learned
                book._transaction(book._check_history)  # is it the history learned so far?
            cost[n] = steps()
            found = plans(book.db, statements)
        finally:
            book.close()
        assert found
        for plan in found:
            assert "SCAN" not in plan.replace("SCAN CONSTANT ROW", ""), plan
    assert cost[LARGE] <= cost[SMALL] * 1.25, cost
