"""The field index: kept by the runtime beside the history, bounded, private, and made again
whenever it is damaged, deleted or of another history."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
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

T0 = factories.T0
SECRET = "whsec_" + base64.b64encode(b"q" * 32).decode()
DEADLINE_S = 60.0  # "did not hang" only


def listed(home: Path, query: str) -> list[str]:
    """What a real ``walletpass-tui events list --where`` lists, newest first."""
    argv = ["--home", str(home), "events", "list", "--json", f"--where={query}"]
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 0, done.stderr
    return [m["webhook_id"] for m in json.loads(done.stdout)]


def held_deleted(path: Path) -> list[str]:
    """The files named like ``path`` (or its companions) this process holds open, deleted."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            target = os.readlink(fd)
            if target.startswith(str(path)) and target.endswith("(deleted)"):
                found.append(target)
    return found


async def post_all(url: str, bodies: list[bytes], prefix: str) -> None:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        for n, raw in enumerate(bodies):
            headers = {**sign(SECRET, f"{prefix}{n}", raw, datetime.now(UTC))}
            assert (await client.post(url, content=raw, headers=headers)).is_success


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


async def test_an_index_copied_from_another_history_with_more_rows_is_not_used(
    tmp_path: Path, clean_env: Path
) -> None:
    """A home restored from two backups: the index of a history of 10 red rows beside a history of
    12 blue ones. Row 10 is in both, as another row: the index is not trusted by a query, what it
    knows is not offered, and the indexer starts it over."""
    red, blue = tmp_path / "red", tmp_path / "blue"
    for home, color, count, at in ((red, "red", 10, T0), (blue, "blue", 12, T0 + 60_000)):
        async with await Store.open(home / "deliveries.sqlite3") as store:
            bodies = [{"data": {color: 1, "color": color}} for _ in range(count)]
            await record(store, bodies, at=at)  # the same webhook-ids, received another time
        assert index_all(home / "deliveries.sqlite3") == count
    history = blue / "deliveries.sqlite3"
    shutil.copyfile(index_path(red / "deliveries.sqlite3"), index_path(history))
    blues = [f"msg_{n}" for n in range(12, 0, -1)]

    assert listed(blue, "data.color:red") == []
    assert listed(blue, "data.color:blue") == blues
    assert "data.red" not in load_known(history).paths
    async with await Store.open(history) as store:
        assert await ids_of(store, "data.color:blue") == blues
        assert index_all(history) == 12  # started over
        assert await ids_of(store, "data.color:blue") == blues
        assert await ids_of(store, "has:data.red") == []
    assert load_known(history).paths["data.color"].values == ("blue",)
    assert listed(blue, "data.color:red") == []


async def test_the_index_deleted_under_the_runtime_is_made_again(tmp_path: Path) -> None:
    """Deleted while the receiver runs (and its reader has it attached): made again at the path,
    and no deleted index file is held open (its disk space is freed)."""
    settings = Settings(home=tmp_path / "home", receiver_port=0)
    history = settings.database_path
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    async with DeliveryRuntime(settings, DeliverySetup(options=options)) as runtime:
        await runtime.serve()
        indexer = runtime.field_indexer
        assert runtime.url is not None and indexer is not None
        await post_all(runtime.url, [body({"data": {"a": n}}) for n in range(10)], "a_")
        await runtime.store.settled()
        assert await indexer.settled(DEADLINE_S)
        assert await ids_of(runtime.store, "data.a:3") == ["a_3"]  # the reader attaches it

        for file in history.parent.glob(index_path(history).name + "*"):
            file.unlink()
        await post_all(runtime.url, [body({"data": {"b": n}}) for n in range(20)], "b_")
        await runtime.store.settled()
        assert await indexer.settled(DEADLINE_S)

        assert index_path(history).is_file()
        assert indexer.upto == await runtime.store.last_id() == 30
        assert await ids_of(runtime.store, "data.a:3") == ["a_3"]
        assert await ids_of(runtime.store, "data.b:19") == ["b_19"]
        assert held_deleted(index_path(history)) == []
        known = load_known(history)  # read from the new index: every row's paths
        assert known.paths["data.a"].rows == 10 and known.paths["data.b"].rows == 20


async def test_the_indexer_follows_the_history_started_over_at_its_path(tmp_path: Path) -> None:
    """The history deleted under the receiver: the store starts a new one at the path, and the
    index of the old one is started over for it (not kept, nor written for the deleted file)."""
    settings = Settings(home=tmp_path / "home", receiver_port=0)
    history = settings.database_path
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    # No schema learner: the files held open are the store's and the index's.
    setup = DeliverySetup(options=options, learn_schemas=False)
    async with DeliveryRuntime(settings, setup) as runtime:
        await runtime.serve()
        indexer = runtime.field_indexer
        assert runtime.url is not None and indexer is not None
        await post_all(runtime.url, [body({"data": {"old": n}}) for n in range(8)], "old_")
        await runtime.store.settled()
        assert await indexer.settled(DEADLINE_S)

        history.unlink()
        await post_all(runtime.url, [body({"data": {"new": n}}) for n in range(3)], "new_")
        await runtime.store.settled()
        assert await indexer.settled(DEADLINE_S)

        assert await runtime.store.last_id() == indexer.upto == 3
        assert await ids_of(runtime.store, "has:data.new") == ["new_2", "new_1", "new_0"]
        assert await ids_of(runtime.store, "has:data.old") == []
        indexed = {p: i.rows for p, i in load_known(history).paths.items() if i.rows is not None}
        assert indexed == {"$": 3, "data": 3, "data.new": 3}
        assert held_deleted(history) == []
