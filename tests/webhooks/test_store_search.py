"""Search finds what a person types: any part of an id, a topic or a body, in any case."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import factories
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from walletpass_tui.webhooks.models import Attempt, LogFilter
from walletpass_tui.webhooks.store import Store, indexer, search
from walletpass_tui.webhooks.store.indexer import index_path
from walletpass_tui.webhooks.store.search import matches_text
from walletpass_tui.webhooks.store.tables import MIGRATIONS, SCHEMA_VERSION

T0 = 1_795_000_000_000
DEADLINE_S = 60.0  # "did not hang" only


def make(webhook_id: str | None, body: bytes = b"{}", topic: str | None = None) -> Attempt:
    headers = (("webhook-id", webhook_id or ""),)
    return factories.attempt(webhook_id, body, headers=headers, topic=topic)


async def found(store: Store, text: str) -> list[str | None]:
    return [r.webhook_id for r in await store.log_page(LogFilter(text=text))]


async def test_part_of_an_id_or_of_a_word_in_the_body_is_found(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "s.sqlite3") as store:
        await store.record(make("msg_forged00036", b'{"note": "Harbour ferry"}', "pass.activated"))
        await store.record(make("msg_plain00037", b'{"data": {"passId": "pass_0042"}}'))
        await store.settled()  # searchable soon after it is stored: settled() waits for that
        assert await found(store, "plain0003") == ["msg_plain00037"]
        assert await found(store, "forged") == ["msg_forged00036"]
        assert await found(store, "0003") == ["msg_plain00037", "msg_forged00036"]
        assert await found(store, "arbou") == ["msg_forged00036"]  # inside a word of the body
        assert await found(store, "HARBOUR FERRY") == ["msg_forged00036"]  # any case
        assert await found(store, "0042") == ["msg_plain00037"]
        assert await found(store, "activated") == ["msg_forged00036"]  # the topic
        assert await found(store, "ferry 0042") == []  # every word must be there
        assert await store.count(LogFilter(text="msg_")) == 2
        # Words shorter than three characters are looked for in ids and topics.
        assert await found(store, "36") == ["msg_forged00036"]
        assert await found(store, "zz") == []
        # LIKE's wildcards are plain characters here.
        assert await found(store, "g%f") == [] and await found(store, "_0") == []
        assert await found(store, "g_f") == ["msg_forged00036"]
        messages = await store.list_messages(text="forged")
        assert [m.webhook_id for m in messages] == ["msg_forged00036"]


async def test_a_common_word_pages_from_the_newest(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "s.sqlite3") as store:
        stored = [await store.record(make(f"msg_{i:04d}", b"ferry")) for i in range(30)]
        await store.settled()
        first = await store.log_page(LogFilter(text="ferry"), limit=10)
        assert [r.id for r in first] == [a.id for a in reversed(stored)][:10]
        older = await store.log_page(LogFilter(text="ferry"), limit=10, before_id=first[-1].id)
        assert [r.id for r in older] == [a.id for a in reversed(stored)][10:20]
        newer = await store.log_page(
            LogFilter(text="ferry"), limit=5, after_id=stored[2].id, oldest_first=True
        )
        assert [r.id for r in newer] == [a.id for a in stored[3:8]]


ID_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
    min_size=3,
    max_size=40,
).filter(lambda s: '"' not in s)


def test_any_part_of_an_id_of_three_characters_or_more_finds_it(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(Store.open(tmp_path / "p.sqlite3"))
    try:

        @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(webhook_id=ID_TEXT, data=st.data())
        def check(webhook_id: str, data: st.DataObject) -> None:
            stored = loop.run_until_complete(store.record(make(webhook_id)))
            start = data.draw(st.integers(0, len(webhook_id) - 3), label="start")
            end = data.draw(st.integers(start + 3, len(webhook_id)), label="end")
            part = webhook_id[start:end]
            if part.split() != [part]:
                return  # a space splits it into several words
            loop.run_until_complete(store.settled())
            rows = loop.run_until_complete(store.log_page(LogFilter(text=part), limit=10_000))
            assert stored.id in {r.id for r in rows}, (webhook_id, part)
            assert matches_text(part, stored)  # the live log agrees with the index

        check()
    finally:
        loop.run_until_complete(store.close())
        loop.close()


def test_live_matching_agrees_with_the_rules() -> None:
    a = make("msg_forged00036", b'{"note": "Harbour ferry"}', "pass.activated")
    assert matches_text("forged harb", a)
    assert matches_text("ACTIV", a)
    assert not matches_text("harbour bus", a)
    assert matches_text("36", a) and not matches_text("fe", make("msg_1", b"ferry"))


async def test_an_older_database_is_reindexed_for_parts_of_words(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite3"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        for step in (1, 2, 3):
            db.executescript(MIGRATIONS[step])
        db.execute("PRAGMA user_version = 3")
        for i, (webhook_id, body) in enumerate(
            [("msg_forged00036", b"alpha"), ("msg_forged00036", b"bravo"), ("msg_x", b"c")]
        ):
            db.execute(
                "INSERT INTO attempts (webhook_id, attempt_no, received_at_ms, method, path, "
                "headers, body, body_size, verdict, reason, status) "
                "VALUES (?, ?, ?, 'POST', '/webhooks', '[]', ?, ?, 'verified', 'verified', 200)",
                (webhook_id, 2 if i == 1 else 1, T0 + i, body, len(body)),
            )
        db.execute(
            "INSERT INTO messages VALUES ('msg_forged00036', NULL, NULL, 2, 2, ?, ?, 2, "
            "'verified', NULL, 200), ('msg_x', NULL, NULL, 1, 1, ?, ?, 3, 'verified', NULL, 200)",
            (T0, T0 + 1, T0 + 2, T0 + 2),
        )
        # The old index knew whole words only, and was up to date.
        db.execute(
            "INSERT INTO attempts_fts(rowid, webhook_id, topic, body) "
            "SELECT id, webhook_id, '', CAST(body AS TEXT) FROM attempts"
        )
        db.execute("UPDATE meta SET value = '3' WHERE key = 'fts_indexed_upto'")
    async with await Store.open(path) as store:
        with contextlib.closing(sqlite3.connect(path)) as db:
            assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert await found(store, "forged") == ["msg_forged00036", "msg_forged00036"]
        assert await found(store, "rav") == ["msg_forged00036"]
        # The upgrade also compared the bodies already stored.
        attempts = await store.message_attempts("msg_forged00036")
        assert [a.body_differs for a in attempts] == [False, True]
        again = await store.record(make("msg_forged00036", b"alpha"))
        assert again.attempt_no == 3 and not again.body_differs


async def test_a_locked_index_never_delays_a_delivery(tmp_path: Path) -> None:
    """The index is its own file, filled off the commit path: while another program holds it,
    deliveries still commit, and they are found once it is free again."""
    path = tmp_path / "s.sqlite3"
    async with await Store.open(path, busy_timeout_ms=60_000) as store:
        await store.settled()
        with contextlib.closing(sqlite3.connect(index_path(path), isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            other.execute("UPDATE meta SET value = value")
            stored = [await store.record(make(f"msg_locked{i:02d}")) for i in range(20)]
            assert [a.attempt_no for a in stored] == [1] * 20
            assert await store.count() == 20
            other.execute("ROLLBACK")
        await store.settled()
        assert await store.count(LogFilter(text="locked")) == 20


async def test_a_search_finds_the_newest_rows_while_the_index_catches_up(tmp_path: Path) -> None:
    """Rows committed past the index's mark are looked at one by one: the first page of a
    search, its count and ``events list``'s messages are right while the index is behind (here:
    held back by another program), and the same once it caught up."""
    path = tmp_path / "s.sqlite3"
    async with await Store.open(path, busy_timeout_ms=60_000) as store:
        for i in range(30):
            await store.record(make(f"msg_old{i:02d}", b'{"city": "harbour"}'))
        await store.record(make("msg_other", b'{"city": "inland"}'))
        await store.settled()
        with contextlib.closing(sqlite3.connect(index_path(path), isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            other.execute("UPDATE meta SET value = value")
            for i in range(5):
                await store.record(make(f"msg_new{i}", b'{"city": "harbour"}'))
            await store.record(make("msg_old00", b'{"city": "harbour"}'))  # a redelivery
            upto = other.execute("SELECT value FROM meta WHERE key = 'indexed_upto'").fetchone()
            assert int(upto[0]) == 31  # nothing new is indexed yet

            async def looks() -> tuple[list[str | None], int, list[str]]:
                page = await store.log_page(LogFilter(text="harbour"), limit=8)
                messages = await store.list_messages(limit=7, text="harbour")
                return (
                    [r.webhook_id for r in page],
                    await store.count(LogFilter(text="harbour")),
                    [m.webhook_id for m in messages],
                )

            newest = ["msg_old00", *(f"msg_new{i}" for i in (4, 3, 2, 1, 0))]
            behind = await looks()
            assert behind == (
                [*newest, "msg_old29", "msg_old28"],
                36,
                [*newest, "msg_old29"],
            )
            older = await store.log_page(LogFilter(text="harbour"), limit=3, before_id=33)
            assert [r.webhook_id for r in older] == ["msg_new0", "msg_old29", "msg_old28"]
            other.execute("ROLLBACK")
        await store.settled()
        assert await looks() == behind


async def test_a_damaged_index_is_rebuilt_and_no_delivery_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    async with await Store.open(path) as store:
        for i in range(5):
            await store.record(make(f"msg_kept{i}", b'{"note": "harbour"}'))
    index_path(path).write_bytes(b"this is not an index" * 512)
    async with await Store.open(path) as store:
        await store.settled()
        assert await store.count() == 5
        assert await store.count(LogFilter(text="arbou")) == 5
        await store.record(make("msg_after", b'{"note": "harbour"}'))
        await store.settled()
        assert await found(store, "after") == ["msg_after"]
    assert oct(index_path(path).stat().st_mode & 0o777) == oct(0o600)


def listed(home: Path, text: str) -> list[str]:
    """What a real ``walletpass-tui events list --search`` lists, newest first."""
    argv = ["--home", str(home), "events", "list", "--json", "--search", text]
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 0, done.stderr
    return [m["webhook_id"] for m in json.loads(done.stdout)]


def indexed(history: Path, gram: str) -> int:
    """How many rows the search index beside ``history`` holds for a trigram."""
    with contextlib.closing(sqlite3.connect(index_path(history))) as db:
        query = "SELECT COUNT(*) FROM attempts_fts WHERE attempts_fts MATCH ?"
        return int(db.execute(query, (f'"{gram}"',)).fetchone()[0])


@pytest.mark.parametrize("marked", [True, False], ids=["copied", "copied-from-before-marks"])
async def test_an_index_copied_from_another_history_with_as_many_rows_is_not_used(
    tmp_path: Path, clean_env: Path, marked: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A home restored from two backups: the search index of a history of 10 "ferry" rows beside
    a history of 12 "harbour" ones (the same webhook-ids, received another time). Its last row,
    row 10, is in this history as another row: a search does not use it, and the store starts it
    over from the rows (an index from before the mark was kept, the same)."""
    ferry, harbour = tmp_path / "ferry", tmp_path / "harbour"
    for home, word, count, at in ((ferry, "ferry", 10, T0), (harbour, "harbour", 12, T0 + 60_000)):
        async with await Store.open(home / "deliveries.sqlite3") as store:
            for n in range(1, count + 1):
                body = f'{{"note": "{word}"}}'.encode()
                await store.record(factories.attempt(f"msg_{n}", body, at=at))
            await store.settled()
    history = harbour / "deliveries.sqlite3"
    for file in harbour.glob(index_path(history).name + "*"):
        file.unlink()
    shutil.copyfile(index_path(ferry / "deliveries.sqlite3"), index_path(history))
    if not marked:
        with contextlib.closing(sqlite3.connect(index_path(history), isolation_level=None)) as db:
            db.execute("DELETE FROM meta WHERE key = 'indexed_mark'")
    harbours = [f"msg_{n}" for n in range(12, 0, -1)]

    assert listed(harbour, "harbour") == harbours  # every row looked at, not the index
    assert listed(harbour, "ferry") == []
    caplog.set_level(logging.INFO, logger=indexer.__name__)
    async with await Store.open(history) as store:
        await store.settled()
        assert await found(store, "harbour") == harbours
        assert await store.count(LogFilter(text="arbou")) == 12
    assert "of another history" in caplog.text
    assert indexed(history, "err") == 0 and indexed(history, "arb") == 12  # started over
    assert listed(harbour, "harbour") == harbours

    caplog.clear()  # its own index (and an older copy of it) is kept and caught up
    shutil.copyfile(index_path(history), tmp_path / "older-search")
    async with await Store.open(history) as store:
        await store.record(factories.attempt("msg_13", b'{"note": "harbour"}', at=T0 + 90_000))
        await store.settled()
    shutil.copyfile(tmp_path / "older-search", index_path(history))
    assert listed(harbour, "harbour") == ["msg_13", *harbours]
    async with await Store.open(history) as store:
        await store.settled()
        assert await found(store, "harbour") == ["msg_13", *harbours]
    assert "of another history" not in caplog.text
    assert indexed(history, "arb") == 13


async def test_commits_are_indexed_together_and_settled_does_not_wait_for_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a steady rate the index is written once for many commits (it gathers them first); a
    search after ``settled()`` still finds every one at once."""
    monkeypatch.setattr(indexer, "COALESCE_S", 3600.0)  # never by itself: only settled() hurries
    runs: list[int] = []

    def counted(db: sqlite3.Connection, limit: int = indexer.CHUNK) -> int:
        rows = real_chunk(db, limit)
        runs.append(rows)
        return rows

    real_chunk = indexer.index_chunk
    async with await Store.open(tmp_path / "c.sqlite3") as store:
        monkeypatch.setattr(indexer, "index_chunk", counted)
        for i in range(12):
            await store.record(make(f"msg_steady{i:02d}", b'{"word": "gathered"}'))
        assert store.commits == 12 and runs == []  # nothing indexed yet: it waits for more
        await asyncio.wait_for(store.settled(), 60)  # a generous bound: hurried, not timed out
        assert sum(runs) == 12 and len(runs) <= 2
        assert len(await found(store, "gathered")) == 12
        assert await found(store, "steady07") == ["msg_steady07"]


async def test_a_long_count_never_holds_up_a_page_and_a_count_given_up_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a search runs on a connection of its own: while one is under way the log's pages
    are read at once, and a count its caller gave up is interrupted, so the next one runs. The
    count is held inside SQLite by the row check a query of many words calls (made to wait on
    an event here: a count over a million rows takes seconds, which a test must not time)."""
    words = " ".join(f"w{i:02d}" for i in range(search.SQL_WORDS + 2))  # past SQL's own words
    async with await Store.open(tmp_path / "s.sqlite3") as store:
        for i in range(20):
            await store.record(make(f"msg_many{i:02d}", f'{{"note": "{words}"}}'.encode()))
        await store.settled()
        release = threading.Event()
        entered = threading.Event()
        calls = 0
        real = search.has_words

        def held(*args: object) -> int:
            nonlocal calls
            calls += 1
            entered.set()
            release.wait(30)
            return real(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(search, "has_words", held)  # the counting connection opens now
        flt = LogFilter(text=words)
        counting = asyncio.ensure_future(store.count(flt))
        assert await asyncio.to_thread(entered.wait, 30)
        page = await asyncio.wait_for(store.log_page(flt, limit=5), 30)  # not behind the count
        assert [r.webhook_id for r in page] == [f"msg_many{i:02d}" for i in (19, 18, 17, 16, 15)]
        assert not counting.done()
        counting.cancel()
        with contextlib.suppress(asyncio.CancelledError):  # the caller gave it up
            await counting  # ends at once: the SQL is interrupted, still held in a row check
        release.set()
        assert await asyncio.wait_for(store.count(flt), 30) == 20
        # The one given up stopped at the row it was on: the next count looked at all 20 rows.
        assert calls <= 2 + 20


async def test_the_indexer_stops_when_asked_even_as_it_is_hurried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``settled()`` hurrying the indexer at the moment the store closes it must not keep it
    running: closing returns (on Python 3.11, a wait_for finishing as it is cancelled would
    swallow the cancel, and the close would wait forever)."""
    monkeypatch.setattr(indexer, "COALESCE_S", 3600.0)  # gathering commits until hurried
    path = tmp_path / "h.sqlite3"
    async with await Store.open(path) as store:
        await store.record(make("msg_before"))
    index = await indexer.Indexer.open(path, 5000)
    index.start()
    index.wake()  # a commit: the indexer now gathers more before it indexes
    for _ in range(5):
        await asyncio.sleep(0)
    assert not index.idle
    index.hurry()  # and in the same turn of the loop, the close
    closing = asyncio.ensure_future(index.close())
    # A bound against a hang, not a timing (close() cannot be cancelled from outside: it waits
    # for the indexer it cancelled).
    done, _ = await asyncio.wait({closing}, timeout=60)
    assert closing in done, "the indexer went on after close() cancelled it"
