"""The field index: kept by the runtime beside the history, bounded, private, and made again
whenever it is damaged, deleted or of another history."""

from __future__ import annotations

import base64
import stat
from datetime import UTC, datetime
from pathlib import Path

import factories
import httpx
import pytest
from query_helpers import body, ids_of, index_all, record

from walletpass_tui.config import Settings
from walletpass_tui.query import index as field_index
from walletpass_tui.query.index import Fields, index_path
from walletpass_tui.query.known import load_known
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"q" * 32).decode()


async def test_the_runtime_indexes_what_it_stores(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", receiver_port=0)
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    async with DeliveryRuntime(settings, DeliverySetup(options=options)) as runtime:
        await runtime.serve()
        assert runtime.url is not None and runtime.field_indexer is not None
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            for n, platform in enumerate(("google", "apple", "google")):
                raw = body({"type": "pass.activated", "data": {"platform": platform}})
                headers = {**sign(SECRET, f"msg_{n}", raw, datetime.now(UTC))}
                assert (await client.post(runtime.url, content=raw, headers=headers)).is_success
        await runtime.store.settled()
        assert await runtime.field_indexer.settled(30)
        assert runtime.field_indexer.upto == await runtime.store.last_id()
        assert await ids_of(runtime.store, "data.platform:google") == ["msg_2", "msg_0"]
        known = load_known(settings.database_path)
        assert known.paths["data.platform"].values == ("google", "apple")
    mode = stat.S_IMODE(index_path(settings.database_path).stat().st_mode)
    assert mode == 0o600


async def test_the_index_keeps_at_most_max_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(field_index, "MAX_PATHS", 5)
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, [{f"k{i}": i for i in range(8)}])
        index_all(history)
        known = load_known(history)
        assert len(known.paths) == 5  # $ and k0..k3; k4..k7 not indexed
        assert await ids_of(store, "k3:3") == ["msg_1"]


async def test_a_chunk_of_large_bodies_is_cut_by_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(field_index, "CHUNK_BYTES", 1000)
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, [{"pad": "x" * 600, "n": n} for n in range(5)])
    fields = Fields(history)
    fields.open()
    try:
        steps = [fields.step().rows for _ in range(6)]
    finally:
        fields.close()
    assert steps == [1, 1, 1, 1, 1, 0]  # one 600-byte body at a time (at least one a chunk)


async def test_a_damaged_index_is_made_again(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, [{"a": 1}, {"a": 2}])
        index_all(history)
        index_path(history).write_bytes(b"this is no database" * 100)
        # A query does not trust it (every row is read), and the indexer makes it again.
        assert await ids_of(store, "a:2") == ["msg_2"]
        assert index_all(history) == 2
        assert await ids_of(store, "a>0") == ["msg_2", "msg_1"]


async def test_an_index_of_another_history_is_started_over(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, [{"a": n} for n in range(5)])
    index_all(history)
    kept = index_path(history).read_bytes()
    for file in history.parent.glob("h.sqlite3*"):
        file.unlink()
    index_path(history).write_bytes(kept)  # marks row 5 indexed; the new history has 2 rows
    async with await Store.open(history) as store:
        await record(store, [{"b": 1}, {"b": 2}])
        assert await ids_of(store, "b:2") == ["msg_2"]  # the stale index is not used
        assert index_all(history) == 2
        assert await ids_of(store, "has:a") == []
        assert await ids_of(store, "b>0") == ["msg_2", "msg_1"]


async def test_rows_pruned_from_the_history_are_never_shown(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await store.record(factories.attempt("msg_old", body({"a": 1}), at=factories.T0))
        await store.record(factories.attempt("msg_new", body({"a": 1}), at=factories.T0 + 10))
        await store.settled()
        index_all(history)
        assert await store.prune_older_than(factories.T0 + 1) == 1
        assert await ids_of(store, "a:1") == ["msg_new"]
