"""The store's hot queries cost the same over a long history as over a short one: each is checked
with EXPLAIN QUERY PLAN (the index it must use) and by the work SQLite does for it (virtual
machine steps, counted by a progress handler: deterministic, never a time) over two histories,
one ten times the other. The statements are the ones the store runs, captured as it runs them.

The schema learner's queries are checked by its own tests (tests/schemas/)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import attempt

from walletpass_tui.webhooks.models import CHECK, REJECTED, LogFilter
from walletpass_tui.webhooks.store import (
    Store,
    activity,
    indexer,
    numbering,
    prune,
    queries,
    tables,
)
from walletpass_tui.webhooks.store import search as search_rules
from walletpass_tui.webhooks.store.activity import MINUTE_MS
from walletpass_tui.webhooks.store.indexer import index_path
from walletpass_tui.webhooks.store.writer import LAST_ID

T0 = 1_795_000_000_000
SMALL, LARGE = 2_000, 20_000
RECENT = 2_000  # the last hour holds as many in either history
TARGET = "http://127.0.0.1:9/app"


def webhook_id(i: int) -> str:
    """Ids in no order, as the service makes them."""
    return f"msg_{(i * 2_654_435_761) % 4_294_967_296:08x}{i}"


def build(path: Path, n: int) -> None:
    """A history of ``n`` attempts written straight into the tables (the writer would take a
    while): the last RECENT in the 20 minutes from T0, the others the day before; half say
    google, one in 20 rejected, one in 50 a check request, one in 10 forwarded; then counted by
    minute and indexed for search as the store would."""
    with contextlib.closing(tables.connect_writer(path, 5_000)) as db:
        db.create_function("wp_id", 1, webhook_id, deterministic=True)
        db.execute("BEGIN")
        db.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO attempts (id, webhook_id, attempt_no, received_at_ms, method, path, "
            "headers, body, body_size, verdict, reason, status, topic, note) "
            "SELECT i, wp_id(i), 1, CASE WHEN i > ? THEN ? + (i - ?) * 600 ELSE ? - 86400000 + i "
            "END, 'POST', '/webhooks', '[]', "
            'CAST(printf(\'{"type":"pass.activated","data":{"platform":"%s","n":%d}}\', '
            "CASE i % 2 WHEN 0 THEN 'google' ELSE 'apple' END, i) AS BLOB), 60, "
            "CASE WHEN i % 20 = 0 THEN 'rejected' ELSE 'verified' END, 'verified', 200, "
            "CASE i % 3 WHEN 0 THEN 'pass.deactivated' ELSE 'pass.activated' END, "
            "CASE WHEN i % 50 = 7 THEN 'check pass: valid → 200' END FROM n",
            (n, n - RECENT, T0, n - RECENT, T0),
        )
        db.execute(
            "INSERT INTO messages (webhook_id, topic, pass_id, attempts, verified_attempts, "
            "first_received_at_ms, last_received_at_ms, last_attempt_id, reason, endpoint_id, "
            "last_status) SELECT webhook_id, topic, NULL, 1, verdict = 'verified', "
            "received_at_ms, received_at_ms, id, reason, NULL, status FROM attempts"
        )
        db.execute(
            "INSERT INTO forwards (attempt_id, webhook_id, kind, mode, target, state, tries, "
            "created_at_ms, finished_at_ms, status, latency_ms) SELECT id, webhook_id, 'forward', "
            "'original', ?, 'done', 1, received_at_ms, received_at_ms + 30, 200, 30.0 "
            "FROM attempts WHERE id % 10 = 0",
            (TARGET,),
        )
        activity.build(db)
        db.execute("COMMIT")
    with contextlib.closing(indexer.connect(path, 5_000)) as idx:
        while indexer.index_chunk(idx) == indexer.CHUNK:
            pass


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """A short history and one ten times as long."""
    found = {}
    for n in (SMALL, LARGE):
        path = tmp_path_factory.mktemp(f"h{n}") / "deliveries.sqlite3"
        build(path, n)
        found[n] = path
    return found


# -- looking at a statement -----------------------------------------------------------------------


@contextlib.contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection set up as the store's reader is (the index attached, its functions)."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.create_function(search_rules.HAS_WORDS, 4, search_rules.has_words, deterministic=True)
        db.create_function("wp_digest", 2, lambda *_: b"", deterministic=True)
        db.execute("ATTACH DATABASE ? AS idx", (str(index_path(path)),))
        yield db


def steps(db: sqlite3.Connection, run: Callable[[], object]) -> int:
    """Virtual machine steps SQLite took for ``run`` (in hundreds)."""
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    db.set_progress_handler(tick, 100)
    try:
        run()
    finally:
        db.set_progress_handler(None, 0)
    return count


def plan(db: sqlite3.Connection, sql: str, params: Any) -> str:
    return "\n".join(str(row[3]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params))


async def captured(path: Path, read: Callable[[Store], Awaitable[object]]) -> list[tuple[str, Any]]:
    """The statements the store's reader runs for ``read``."""
    found: list[tuple[str, Any]] = []
    real = queries.Reader.fetch

    async def fetch(self: queries.Reader, sql: str, params: Any, build: Any) -> Any:
        found.append((sql, list(params)))
        return await real(self, sql, params, build)

    queries.Reader.fetch = fetch  # type: ignore[method-assign]
    try:
        async with await Store.open(path) as store:
            await read(store)
    finally:
        queries.Reader.fetch = real  # type: ignore[method-assign]
    return found


READS: dict[str, tuple[Callable[[Store], Awaitable[object]], str]] = {
    # name: (the read, what its statements' plans must say)
    "the newest page": (lambda s: s.log_page(limit=200), "SCAN a"),
    "a page of one topic": (
        lambda s: s.log_page(LogFilter(topic="pass.deactivated"), limit=200),
        "attempts_by_topic",
    ),
    "a page of the rejected": (
        lambda s: s.log_page(LogFilter(verdict=REJECTED), limit=200),
        "attempts_by_verdict",
    ),
    "a page of a word in half the rows": (
        lambda s: s.log_page(LogFilter(text="google"), limit=200),
        "VIRTUAL TABLE INDEX",
    ),
    "an older page": (lambda s: s.log_page(limit=200, before_id=1_000), "SEARCH a USING INTEGER"),
    "the log's total": (lambda s: s.count(), "activity"),
    "the total of one topic": (lambda s: s.count(LogFilter(topic="pass.activated")), "activity"),
    "the check's requests counted": (lambda s: s.count(LogFilter(source=CHECK)), "activity"),
    "the header's totals": (lambda s: s.stats(), "activity"),
    "the last hour by minute": (lambda s: s.activity(T0, MINUTE_MS), "activity"),
    "a message's attempts": (
        lambda s: s.message_attempts(webhook_id(1_500)),
        "attempts_by_message",
    ),
    "an attempt": (lambda s: s.attempt(1_500), "INTEGER PRIMARY KEY"),
    "messages newest first": (lambda s: s.list_messages(limit=20), "messages_by_last"),
    "messages with a word in half the rows": (
        lambda s: s.list_messages(limit=20, text="google"),
        "VIRTUAL TABLE INDEX",
    ),
    "messages by the start of an id": (
        lambda s: s.messages_starting_with("msg_1", 11),
        "sqlite_autoindex_messages_1",
    ),
    "the newest message a sender posted": (lambda s: s.last_received_message(), "SCAN a"),
    "the newest verified delivery": (lambda s: s.last_verified_message(), "attempts_by_verdict"),
    "a message's forwards": (
        lambda s: s.forwards_for_message(webhook_id(1_500)),
        "forwards_by_message",
    ),
    "the next forward to send": (lambda s: s.next_pending_forward(TARGET), "forwards_pending"),
}


@pytest.mark.parametrize("name", list(READS))
async def test_a_hot_read_uses_its_index_and_costs_the_same_over_a_longer_history(
    histories: dict[int, Path], name: str
) -> None:
    read, expected = READS[name]
    cost = {}
    for n, path in histories.items():
        statements = await captured(path, read)
        assert statements, "the read ran no statement"
        with reading(path) as db:
            plans = "\n".join(plan(db, sql, params) for sql, params in statements)
            cost[n] = sum(
                steps(db, lambda sql=sql, params=params: db.execute(sql, params).fetchall())
                for sql, params in statements
            )
        assert expected in plans, plans
    assert cost[LARGE] <= 2 * cost[SMALL] + 10, cost


def writes(path: Path) -> dict[str, Callable[[sqlite3.Connection], object]]:
    """What the writer, the indexer and a prune step read on each commit or step."""
    batch = [attempt(webhook_id(i), at=T0 + i, topic="pass.activated") for i in range(100, 612)]
    return {
        "numbering a batch": lambda db: numbering.peek_with(db, batch, LAST_ID),
        "the next rows to index": lambda db: db.execute(
            "SELECT id FROM attempts WHERE id > ? ORDER BY id LIMIT ?", (SMALL - 1_024, 1_024)
        ).fetchall(),
        "a prune step's rows": lambda db: db.execute(
            "SELECT id, webhook_id FROM attempts WHERE received_at_ms < ? "
            "ORDER BY received_at_ms LIMIT ?",
            (T0 + 10**9, 500),
        ).fetchall(),
        "events tail's next rows": lambda db: queries.attempts_after(
            db, SMALL - 50, upto_id=SMALL, with_bodies=False
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "numbering a batch",
        "the next rows to index",
        "a prune step's rows",
        "events tail's next rows",
    ],
)
def test_what_each_commit_reads_costs_the_same_over_a_longer_history(
    histories: dict[int, Path], name: str
) -> None:
    cost = {}
    for n, path in histories.items():
        with reading(path) as db:
            cost[n] = steps(db, lambda db=db, path=path: writes(path)[name](db))
    assert cost[LARGE] <= 2 * cost[SMALL] + 10, cost


def test_a_prune_step_costs_what_it_deletes(histories: dict[int, Path], tmp_path: Path) -> None:
    """Deleting the oldest 200 attempts (their forwards, their messages, their counts) does the
    same work over either history."""
    cost = {}
    for n, path in histories.items():
        copy = tmp_path / f"copy{n}.sqlite3"
        with (
            contextlib.closing(sqlite3.connect(path)) as source,
            contextlib.closing(sqlite3.connect(copy, isolation_level=None)) as db,
        ):
            source.backup(db)
            cost[n] = steps(db, lambda db=db: prune.oldest_before(db, T0 + 10**9, 200))
            assert db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == n - 200
    assert cost[LARGE] <= 2 * cost[SMALL] + 10, cost
