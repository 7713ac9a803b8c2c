"""Field queries through the store: the same rows whether the field index holds them or not, and
the same as the live log's test of one attempt."""

from __future__ import annotations

from pathlib import Path

import factories
import pytest
from query_helpers import body, flt, ids_of, index_all, record

from walletpass_tui.webhooks.store import Store

BODIES = [
    {"type": "pass.activated", "data": {"platform": "google", "balance": 5, "tier": "gold"}},
    {"type": "pass.activated", "data": {"platform": "apple", "balance": 20}},
    {"type": "pass.deactivated", "data": {"platform": "Google", "balance": 12.5, "tier": "silver"}},
    {
        "type": "pass.activated",
        "data": {"platform": "apple", "tags": ["vip", "new"], "balance": "30"},
    },
    b"not json at all",
    {"type": "pass.activated", "data": {"platform": "google", "tier": None, "ok": True}},
]

CASES = {
    "data.platform:google": ["msg_6", "msg_3", "msg_1"],
    "data.platform=GOOGLE": ["msg_6", "msg_3", "msg_1"],
    "data.balance>10": ["msg_3", "msg_2"],
    "data.balance>=5 data.balance<=12.5": ["msg_3", "msg_1"],
    "data.balance:30": ["msg_4"],
    'data.balance:"30"': ["msg_4"],
    "data.tier!=gold": ["msg_6", "msg_3"],
    "-data.tier:gold": ["msg_6", "msg_5", "msg_4", "msg_3", "msg_2"],
    "has:data.tier": ["msg_6", "msg_3", "msg_1"],
    "-has:data.tier": ["msg_5", "msg_4", "msg_2"],
    "data.tier:null": ["msg_6"],
    "data.ok:true": ["msg_6"],
    "data.tags[]:vip": ["msg_4"],
    "has:data.tags[]": ["msg_4"],
    "data.platform:goo*": ["msg_6", "msg_3", "msg_1"],
    "(data.tier:gold OR data.tier:silver)": ["msg_3", "msg_1"],
    "data.platform:apple (data.balance>25 OR has:data.tags)": ["msg_4"],
    "has:$": ["msg_6", "msg_4", "msg_3", "msg_2", "msg_1"],
    "-has:$": ["msg_5"],
    "topic:deactivated OR data.tier:gold": ["msg_3", "msg_1"],
    "-(data.platform:apple OR -has:$)": ["msg_6", "msg_3", "msg_1"],
    "data.platform:google verdict:verified": ["msg_6", "msg_3", "msg_1"],
    "google data.balance>1": ["msg_3", "msg_1"],
    "data.balance<0": [],
}


@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "not indexed yet"])
async def test_field_queries_find_the_same_rows_indexed_or_not(
    tmp_path: Path, indexed: bool
) -> None:
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, BODIES)
        if indexed:
            assert index_all(history) == len(BODIES)
        for text, expected in CASES.items():
            assert await ids_of(store, text) == expected, text
            messages = await store.list_messages(where=flt(text).where, text=flt(text).text)
            assert sorted(m.webhook_id for m in messages) == sorted(expected), text


async def test_rows_stored_after_the_index_are_found_too(tmp_path: Path) -> None:
    """The index holds the first rows; the newest are looked at one by one, and come first."""
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, BODIES[:3])
        index_all(history)
        for n, doc in enumerate(BODIES[3:], 4):
            raw = doc if isinstance(doc, bytes) else body(doc)
            await store.record(factories.attempt(f"msg_{n}", raw))
        await store.settled()
        assert await ids_of(store, "data.platform:google") == ["msg_6", "msg_3", "msg_1"]
        assert await ids_of(store, "data.platform:apple") == ["msg_4", "msg_2"]
        page = await store.log_page(flt("data.platform:google"), limit=2)
        assert [r.webhook_id for r in page] == ["msg_6", "msg_3"]
        older = await store.log_page(flt("data.platform:google"), limit=2, before_id=page[-1].id)
        assert [r.webhook_id for r in older] == ["msg_1"]
        oldest = await store.log_page(flt("data.platform:google"), limit=2, oldest_first=True)
        assert [r.webhook_id for r in oldest] == ["msg_1", "msg_3"]


async def test_the_live_test_agrees_with_the_store_row_by_row(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, BODIES)
        index_all(history)
        rows = await store.log_page(None, limit=100)
        for text, expected in CASES.items():
            query = flt(text)
            for row in rows:
                attempt = await store.attempt(row.id)
                assert attempt is not None
                where = query.where
                live = where is None or where.matches(attempt)
                assert live == (row.webhook_id in expected) or query.text, (text, row.webhook_id)


async def test_a_count_in_slices_of_row_ids_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A field query's count runs in short statements over slices of row ids (so a reader never
    holds the write-ahead log back for long); sliced or not, the same number."""
    from walletpass_tui.webhooks.store import queries

    monkeypatch.setattr(queries, "COUNT_SLICE_IDS", 2)
    monkeypatch.setattr(queries, "COUNT_SLICE_MIN", 1)
    monkeypatch.setattr(queries, "COUNT_SLICE_S", 0.0)  # every slice as small as it gets
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, BODIES)
        index_all(history)
        for text, expected in CASES.items():
            assert await store.count(flt(text)) == len(expected), text
