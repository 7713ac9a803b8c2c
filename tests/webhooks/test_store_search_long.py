"""A query of any length is answered by the rules of a search (a pasted body of thousands of
words included), through the store and through ``events list --search``: never reported as a
broken history."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import factories
import pytest

from walletpass_tui.cli import main
from walletpass_tui.webhooks.models import Attempt, LogFilter
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.search import matches_text

T0 = 1_795_000_000_000


def make(webhook_id: str, body: bytes) -> Attempt:
    return factories.attempt(webhook_id, body, topic="pass.activated")


def pasted(count: int) -> list[str]:
    """``count`` different words, as a pasted body has them (a few short ones among them)."""
    return [f"w{i:05d}z" if i % 50 else "ok" for i in range(count)]


async def fill(store: Store, words: list[str]) -> None:
    whole = " ".join(words).encode()
    await store.record(make("msg_ok_all", whole))
    # Every word but the last: it is found only if the last word is really checked.
    await store.record(make("msg_ok_but_one", " ".join(words[:-1]).encode()))
    # Every word, in another case: letters match in any case.
    await store.record(make("msg_ok_upper", whole.upper()))
    await store.record(make("msg_other", b'{"note": "nothing alike"}'))
    await store.settled()


@pytest.mark.parametrize("count", [500, 5000])
async def test_a_query_of_thousands_of_words_is_answered(tmp_path: Path, count: int) -> None:
    words = pasted(count)
    query = " ".join(words)
    async with await Store.open(tmp_path / "s.sqlite3") as store:
        await fill(store, words)
        rows = await store.log_page(LogFilter(text=query))
        assert sorted(r.webhook_id for r in rows) == ["msg_ok_all", "msg_ok_upper"]
        assert await store.count(LogFilter(text=query)) == 2
        messages = await store.list_messages(text=query)
        assert sorted(m.webhook_id for m in messages) == ["msg_ok_all", "msg_ok_upper"]
        # The live log's check agrees with the search, row by row.
        for r in await store.log_page(LogFilter()):
            attempt = await store.attempt(r.id)
            assert attempt is not None
            expected = r.webhook_id in ("msg_ok_all", "msg_ok_upper")
            assert matches_text(query, attempt) is expected, r.webhook_id
        # Any single word missing from every row still means nothing is found.
        assert await store.count(LogFilter(text=query + " absentword")) == 0
        # A short word must be in an id or a topic, however long the query.
        assert await store.count(LogFilter(text=query + " qq")) == 0


@pytest.mark.parametrize("count", [500, 5000])
def test_events_list_answers_a_pasted_body(
    clean_env: Path, capsys: pytest.CaptureFixture[str], count: int
) -> None:
    words = pasted(count)

    async def build() -> None:
        async with await Store.open(clean_env / "deliveries.sqlite3") as store:
            await fill(store, words)

    asyncio.run(build())
    code = main(["events", "list", "--search", " ".join(words), "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert sorted(m["webhook_id"] for m in json.loads(out)) == ["msg_ok_all", "msg_ok_upper"]
