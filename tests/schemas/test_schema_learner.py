"""The learner on a real history: a Store in tmp_path, attempts recorded through its API, the
learner following on its own thread, and the schema file read back."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from schema_helpers import T0, activated

from walletpass_tui.schemas import rebuild
from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.learner import SchemaLearner
from walletpass_tui.schemas.model import TEMPLATES, Finding, GroupKey
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.schemas.records import DriftRecord
from walletpass_tui.schemas.storage import schemas_path
from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store

ACTIVATED = GroupKey.of_topic("pass.activated")
DEADLINE_S = 30  # "did not hang" only


def attempt(
    n: int,
    body: Any,
    *,
    verdict: str = VERIFIED,
    topic: str | None = "pass.activated",
    webhook_id: str | None = None,
) -> Attempt:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Attempt(
        received_at_ms=T0 + n * 1000,
        method="POST",
        path="/webhooks",
        headers=(("content-type", "application/json"),),
        body=raw,
        verdict=verdict,
        reason="verified" if verdict == VERIFIED else "no signature matches",
        status=200 if verdict == VERIFIED else 401,
        webhook_id=webhook_id or f"msg_{n:05d}",
        topic=topic,
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(tmp_path / "home" / "deliveries.sqlite3")
    yield s
    await s.close()


@pytest.fixture
async def learner(store: Store) -> AsyncIterator[SchemaLearner]:
    running = SchemaLearner(store.path).start()
    running.follow(store)
    yield running
    await running.aclose()


def snapshot(path: Path) -> dict[str, Any]:
    reader = SchemaReader(path)
    groups = reader.groups()
    return {
        "groups": [g.to_json() for g in groups],
        "fields": {g.label: [f.to_json() for f in reader.fields(g.group)] for g in groups},
        "drift": [d.to_json() for d in reader.drift(limit=10_000)],
    }


async def varied_history(store: Store) -> list[Attempt]:
    """Verified, rejected, retried, topic-less, non-JSON and drifting deliveries, in batches."""
    stored = []
    for n in range(25):
        stored.append(await store.record(attempt(n, activated(n))))
    stored.append(await store.record(attempt(25, activated(25, serialNumber=9), verdict=REJECTED)))
    stored.append(await store.record(attempt(26, activated(3), webhook_id="msg_00003")))  # retry
    stored.append(await store.record(attempt(27, {"hello": [1, 2]}, topic=None)))
    stored.append(await store.record(attempt(28, b"not json", topic="pass.deactivated")))
    batch = [attempt(n, activated(n, serialNumber=n, channel="web")) for n in range(30, 40)]
    stored += await asyncio.gather(*(store.record(a) for a in batch))
    return stored


async def wait_for(check: Any) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not check():
        assert loop.time() < deadline, "the learner did not catch up"
        await asyncio.sleep(0.01)


async def test_the_learner_follows_the_history_and_tells_of_drift(
    store: Store, learner: SchemaLearner
) -> None:
    heard: list[tuple[int | None, list[Finding]]] = []
    learner.on_drift(lambda attempt_id, found: heard.append((attempt_id, list(found))))
    for n in range(20):
        await store.record(attempt(n, activated(n)))
    await learner.asettled()
    assert heard == []
    odd = await store.record(attempt(20, activated(20, serialNumber=20)))
    await wait_for(lambda: heard)  # told without asking: the commit woke the learner
    ((attempt_id, found),) = heard
    assert attempt_id == odd.id
    assert [DriftRecord.of(f).describe() for f in found] == [
        "pass.activated data.serialNumber: string -> integer"
    ]
    reader = SchemaReader(store.path)
    (record,) = reader.drift_for_attempt(odd.id)
    assert record.to_json() | {"seen_at": None} == {
        "topic": "pass.activated",
        "group": "topic",
        "path": "data.serialNumber",
        "kind": "type_changed",
        "severity": "breaking",
        "was": "string",
        "now": "integer",
        "attempt_id": odd.id,
        "webhook_id": "msg_00020",
        "seen_at": None,
        "count": 1,
    }
    assert reader.attempts_with_drift() == [odd.id]
    assert reader.drift_for_attempts([odd.id, odd.id - 1]) == {odd.id: [record]}
    (summary,) = reader.groups()
    assert (summary.label, summary.samples, summary.drift) == ("pass.activated", 21, 1)
    assert summary.last_seen_ms == T0 + 20_000


async def test_only_verified_deliveries_teach_and_a_redelivery_counts_once(
    store: Store, learner: SchemaLearner
) -> None:
    await store.record(attempt(1, activated(1), verdict=REJECTED))
    await store.record(attempt(2, {"evil": True}, verdict=REJECTED, topic="pass.deactivated"))
    first = await store.record(attempt(3, activated(3)))
    again = await store.record(attempt(4, activated(3), webhook_id=first.webhook_id))
    assert again.attempt_no == 2 and not again.body_differs
    await learner.asettled()
    (summary,) = SchemaReader(store.path).groups()
    assert (summary.label, summary.samples) == ("pass.activated", 1)


async def test_live_learning_and_a_rebuild_give_the_same_schemas(
    store: Store, learner: SchemaLearner
) -> None:
    stored = await varied_history(store)
    await learner.asettled()
    live = snapshot(store.path)
    assert {g["label"] for g in live["groups"]} == {
        "pass.activated",
        "topic unknown",
        "pass.deactivated",
    }
    assert live["drift"]  # the batch of ten drifted
    progress: list[tuple[int, int]] = []
    learned = await asyncio.to_thread(
        learner.rebuild, lambda done, total: progress.append((done, total))
    )
    verified = sum(1 for a in stored if a.verdict == VERIFIED)
    assert learned == verified - 1  # the retry with the same body teaches nothing
    assert progress[0] == (0, verified) and progress[-1] == (verified, verified)
    assert snapshot(store.path) == live
    await learner.aclose()
    schemas_path(store.path).unlink()
    assert await asyncio.to_thread(rebuild, store.path) == learned
    assert snapshot(store.path) == live


async def test_the_file_is_private_and_survives_a_restart(store: Store) -> None:
    first = SchemaLearner(store.path).start()
    for n in range(5):
        await store.record(attempt(n, activated(n)))
    await first.asettled()
    await first.aclose()
    mode = stat.S_IMODE(os.stat(schemas_path(store.path)).st_mode)
    assert mode == 0o600
    second = SchemaLearner(store.path).start()
    try:
        await second.asettled()
        assert SchemaReader(store.path).groups()[0].samples == 5  # nothing learned twice
        await store.record(attempt(5, activated(5)))
        await second.asettled()
        assert SchemaReader(store.path).groups()[0].samples == 6
    finally:
        await second.aclose()


async def test_a_file_deleted_under_the_learner_is_learned_again(
    store: Store, learner: SchemaLearner
) -> None:
    await varied_history(store)
    await learner.asettled()
    before = snapshot(store.path)
    for file in schemas_path(store.path).parent.glob(schemas_path(store.path).name + "*"):
        file.unlink()
    assert SchemaReader(store.path).groups() == []  # a missing file reads as nothing learned
    await learner.asettled()
    assert snapshot(store.path) == before


async def test_a_damaged_file_is_deleted_and_learned_again(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="walletpass_tui.schemas")
    await varied_history(store)
    first = SchemaLearner(store.path).start()
    await first.asettled()
    await first.aclose()
    before = snapshot(store.path)
    path = schemas_path(store.path)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    second = SchemaLearner(store.path).start()
    try:
        await second.asettled()
        assert snapshot(store.path) == before
    finally:
        await second.aclose()
    said = [r.getMessage() for r in caplog.records if r.name.startswith("walletpass_tui.schemas")]
    assert any(f"schema file of {store.path} is damaged" in line for line in said), said


async def test_two_learners_on_one_history_work_side_by_side(store: Store) -> None:
    learners = [SchemaLearner(store.path, coalesce_s=0.001).start() for _ in range(2)]
    for running in learners:
        running.follow(store)
    try:
        for n in range(40):
            await store.record(attempt(n, activated(n)))
        for running in learners:
            await running.asettled()
        assert SchemaReader(store.path).groups()[0].samples == 40
    finally:
        for running in learners:
            await running.aclose()


async def test_templates_are_a_group_of_their_own(store: Store, learner: SchemaLearner) -> None:
    templates = [{"id": f"tpl_{n}", "name": "Gold", "passType": "storeCard"} for n in range(3)]
    await asyncio.wrap_future(learner.learn_templates(templates))
    await asyncio.wrap_future(learner.learn_templates(templates))  # listed again: nothing new
    reader = SchemaReader(store.path)
    (summary,) = reader.groups()
    assert (summary.label, summary.samples) == ("templates", 3)
    assert [f.path for f in reader.fields(TEMPLATES)] == ["$", "id", "name", "passType"]
    await asyncio.to_thread(learner.rebuild)  # the history holds no templates: they stay
    assert reader.groups()[0].samples == 3


async def test_a_running_learner_follows_a_rebuild_made_by_another_program(
    store: Store, learner: SchemaLearner
) -> None:
    for n in range(30):
        await store.record(attempt(n, activated(n)))
    await learner.asettled()
    assert await store.prune_older_than(T0 + 10_000) == 10  # the oldest ten leave the history
    assert await asyncio.to_thread(rebuild, store.path) == 20  # as `schema rebuild` would
    await store.record(attempt(30, activated(30)))
    await learner.asettled()
    # The running learner loaded the rebuilt schemas before learning on: 20 + 1, not 30 + 1.
    assert SchemaReader(store.path).groups()[0].samples == 21


def test_the_reader_of_a_file_not_made_yet_or_damaged(tmp_path: Path) -> None:
    history = tmp_path / "deliveries.sqlite3"
    reader = SchemaReader(history)
    assert reader.groups() == [] and reader.drift() == [] and reader.fields(ACTIVATED) == []
    schemas_path(history).write_bytes(b"")  # created 0600, tables not made yet
    assert reader.groups() == [] and reader.attempts_with_drift() == []
    schemas_path(history).write_bytes(b"\x00" * 4096)
    with pytest.raises(SchemaError, match="damaged; it is learned again from the history"):
        reader.groups()
    with pytest.raises(SchemaError, match=r"Nothing is learned for pass\.activated yet"):
        SchemaReader(tmp_path / "other.sqlite3").export(ACTIVATED, "typescript")


def test_a_rebuild_without_a_history_says_so_and_creates_nothing(tmp_path: Path) -> None:
    history = tmp_path / "deliveries.sqlite3"
    with pytest.raises(SchemaError, match="There is no history at"):
        rebuild(history)
    assert list(tmp_path.iterdir()) == []


async def test_a_view_hears_of_each_learned_batch_and_of_a_rebuild_but_no_old_drift(
    store: Store, learner: SchemaLearner
) -> None:
    steps: list[int] = []
    heard: list[int | None] = []
    learner.on_learned(lambda step: steps.append(step.learned))
    learner.on_drift(lambda attempt_id, found: heard.append(attempt_id))
    for n in range(20):
        await store.record(attempt(n, activated(n)))
    odd = await store.record(attempt(20, activated(20, serialNumber=1)))
    await learner.asettled()
    await wait_for(lambda: sum(steps) == 21 and heard == [odd.id])
    before = len(steps)
    await asyncio.to_thread(learner.rebuild)
    await wait_for(lambda: steps[before:] == [21])  # the rebuild told the view ...
    await learner.asettled()
    assert heard == [odd.id]  # ... and announced no drift again
