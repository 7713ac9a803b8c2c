"""The learner on a real history: a Store in tmp_path, attempts recorded through its API, the
learner following on its own thread, and the schema file read back."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from schema_helpers import T0, activated

from walletpass_tui.schemas import rebuild
from walletpass_tui.schemas.catalog import MAX_GROUPS
from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.learner import SchemaLearner
from walletpass_tui.schemas.model import TEMPLATES, Finding, GroupKey
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.schemas.records import DriftRecord
from walletpass_tui.schemas.schema_file import schemas_path
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
        "note": None,
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


async def test_the_learner_stops_when_asked_while_commits_keep_waking_it(store: Store) -> None:
    """A wake-up at the moment of the stop never keeps the learner running: the stop returns,
    the file's thread ends, and work asked for afterwards is refused."""
    for n in range(30):
        await store.record(attempt(n, activated(n)))
    loop = asyncio.get_running_loop()
    for _ in range(20):
        running = SchemaLearner(store.path, coalesce_s=0.001, poll_s=0.001).start()
        await running.asettled()
        waking = [True]

        def keep_waking(learner: SchemaLearner = running, waking: list[bool] = waking) -> None:
            if waking[0]:
                learner.wake()
                loop.call_soon(keep_waking)

        keep_waking()
        try:
            async with asyncio.timeout(DEADLINE_S):  # "did not hang" only
                await running.aclose()
        finally:
            waking[0] = False
        with pytest.raises(RuntimeError, match="not running"):
            running.settled(timeout=DEADLINE_S)
    assert SchemaReader(store.path).groups()[0].samples == 30


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


# -- nothing a history holds stops learning ------------------------------------------------------


def balances(n: int) -> dict[str, Any]:
    """Balances per account keyed by id, one account's per pass keyed by id, each keyed by slot
    id (the first body, 2.9 KB); later bodies bring other accounts."""
    if n == 0:
        accounts: dict[str, Any] = {
            "acct_0001": {
                f"pass_{p:03d}": {f"slot_{p:03d}{s}": {"points": s} for s in range(2)}
                for p in range(60)
            }
        }
        accounts.update({f"acct_{a:04d}": {} for a in range(2, 31)})
    else:
        accounts = {f"acct_{n}{a:03d}": {} for a in range(21)}
    return {"type": "pass.activated", "data": {"balances": accounts}}


async def test_no_body_stops_learning_for_any_topic(
    store: Store, learner: SchemaLearner, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(6):
        await store.record(attempt(n, balances(n)))
        await store.record(attempt(100 + n, {"other": n}, topic="pass.deactivated"))
    await learner.asettled()
    assert learner.failures == 0 and learner.problem is None
    groups = {g.label: g for g in SchemaReader(store.path).groups()}
    assert (groups["pass.activated"].samples, groups["pass.deactivated"].samples) == (6, 6)
    fields = {f.path: f for f in SchemaReader(store.path).fields(ACTIVATED)}
    assert list(fields)[3:] == [
        "data.balances",
        "data.balances{*}",
        "data.balances{*}{*}",
        "data.balances{*}{*}{*}",
        "data.balances{*}{*}{*}.points",
    ]
    assert fields["data.balances{*}{*}{*}.points"].types == {"integer": 120}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert await asyncio.to_thread(rebuild, store.path) == 12


def insert_raw(history: Path, n: int, body: object, topic: str = "pass.activated") -> None:
    """A verified row written by another program, whatever its body column holds."""
    with sqlite3.connect(history) as db:
        db.execute(
            "INSERT INTO attempts(webhook_id, received_at_ms, method, path, headers, body, "
            "body_size, verdict, reason, status, topic) VALUES (?, ?, 'POST', '/webhooks', "
            "'[]', ?, 0, ?, 'verified', 200, ?)",
            (f"msg_raw{n}", T0 + n * 1000, body, VERIFIED, topic),
        )
    os.utime(history)


async def test_a_delivery_the_learner_cannot_take_is_skipped_with_why_and_passed(
    store: Store, learner: SchemaLearner, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(3):
        await store.record(attempt(n, activated(n)))
    await store.settled()
    await asyncio.to_thread(insert_raw, store.path, 3, "a body stored as text, not bytes")
    for n in range(4, 7):
        await store.record(attempt(n, activated(n)))
    await learner.asettled()
    (summary,) = SchemaReader(store.path).groups()
    assert (summary.samples, summary.skipped) == (6, 1)
    assert summary.to_json()["skipped"] == 1
    (skipped,) = SchemaReader(store.path).skipped()
    assert skipped.webhook_id == "msg_raw3" and skipped.why.startswith("TypeError: ")
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == [
        f"The delivery msg_raw3 (row 4) could not be learned ({skipped.why}); it is skipped "
        "and learning goes on."
    ]
    assert learner.failures == 0
    # A rebuild skips it the same way, and ends.
    assert await asyncio.to_thread(rebuild, store.path) == 6
    assert SchemaReader(store.path).groups()[0].skipped == 1


async def test_a_delivery_time_no_date_can_show_is_learned_as_the_nearest_one(
    store: Store,
) -> None:
    await store.record(attempt(0, activated(0)))
    await store.settled()
    late = activated(1)
    late["data"]["late"] = True
    await asyncio.to_thread(insert_raw, store.path, 1, json.dumps(late).encode())
    await asyncio.to_thread(insert_raw, store.path, 2, json.dumps(activated(2)).encode())
    with sqlite3.connect(store.path) as db:  # a clock (or another program) far off
        db.execute("UPDATE attempts SET received_at_ms = 9000000000000000000 WHERE id = 2")
        db.execute("UPDATE attempts SET received_at_ms = -5 WHERE id = 3")
    learner = SchemaLearner(store.path).start()
    try:
        await learner.asettled()
        assert learner.failures == 0
    finally:
        await learner.aclose()
    reader = SchemaReader(store.path)
    (summary,) = reader.groups()  # read back as ours: never damage learned again and again
    assert (summary.samples, summary.last_seen_ms) == (3, 0)  # 1970, not before
    seen = {f.path: (f.first_seen_ms, f.last_seen_ms) for f in reader.fields(ACTIVATED)}
    assert seen["data.late"] == (253_402_300_799_999, 253_402_300_799_999)  # year 9999's last ms
    assert seen["data"] == (T0, 0)


async def test_topics_from_the_wire_never_take_the_place_of_the_services_own(
    store: Store, learner: SchemaLearner, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(MAX_GROUPS + 5):  # the wire fills the bound, then goes on
        topic = f"topic.{n:03d}"
        await store.record(attempt(n, {"type": topic, "data": {"x": n}}, topic=topic))
    late = MAX_GROUPS + 5
    await store.record(
        attempt(late, {"type": "pass.deactivated"}, topic="pass.deactivated"),
    )
    await store.record(attempt(late + 1, {"type": "pass.activated"}))
    await store.record(attempt(late + 2, {"hello": 1}, topic=None))
    await store.record(attempt(late + 3, {"type": "topic.000"}, topic="topic.000"))
    await learner.asettled()
    reader = SchemaReader(store.path)
    samples = {g.group.topic: g.samples for g in reader.groups()}
    assert samples["pass.deactivated"] == samples["pass.activated"] == samples[None] == 1
    assert samples["topic.000"] == 2  # a topic learned before goes on being learned
    assert sum(1 for topic in samples if topic and topic.startswith("topic.")) == MAX_GROUPS
    assert "topic.100" not in samples
    assert reader.topics_not_learned() == 5
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == [
        f"Payload schemas are learned for at most {MAX_GROUPS} topics from the wire (the "
        "service's own topics always); deliveries of topic.100 and of any other new topic are "
        "stored, but their schemas are not learned ('walletpass-tui schema list' counts them)."
    ]


async def test_the_learner_follows_a_history_started_over_under_it(
    store: Store, learner: SchemaLearner
) -> None:
    for n in range(25):
        await store.record(attempt(n, activated(n, serialNumber=n)))
    await learner.asettled()
    os.unlink(store.path)  # the store starts a new history at the path on its next commit
    for n in range(25, 31):
        await store.record(attempt(n, activated(n)))
    await learner.asettled()
    (summary,) = SchemaReader(store.path).groups()
    assert summary.samples == 6  # every delivery of the new history, none of the old one
    types = {f.path: f.types for f in SchemaReader(store.path).fields(ACTIVATED)}
    assert types["data.serialNumber"] == {"string": 6}


async def test_a_history_replaced_while_nothing_ran_is_learned_from_the_start(
    tmp_path: Path,
) -> None:
    history = tmp_path / "home" / "deliveries.sqlite3"
    async with await Store.open(history) as store:
        for n in range(5):
            await store.record(attempt(n, activated(n, serialNumber=n)))
    await asyncio.to_thread(rebuild, history)
    for file in history.parent.glob("deliveries.sqlite3*"):
        if not file.name.endswith("-schemas"):
            file.unlink()
    async with await Store.open(history) as store:  # a new history with more rows than learned
        for n in range(8):
            await store.record(attempt(n, activated(n), webhook_id=f"msg_new{n}"))
        running = SchemaLearner(history).start()
        try:
            await running.asettled()
        finally:
            await running.aclose()
    (summary,) = SchemaReader(history).groups()
    assert summary.samples == 8
    types = {f.path: f.types for f in SchemaReader(history).fields(ACTIVATED)}
    assert types["data.serialNumber"] == {"string": 8}


FOREIGN_ROWS = {
    "a group key": "UPDATE groups SET grp = 'nonsense' WHERE grp = 'topic'",
    "a path segment": "UPDATE paths SET segment = 'sideways'",
    "a kind of drift": "UPDATE drift SET kind = 'field_renamed'",
    "types": 'UPDATE paths SET types = \'{"string": "many"}\'',
    "a count": "UPDATE groups SET samples = 'lots'",
    "a parent": "UPDATE paths SET parent = 'nowhere' WHERE parent IS NOT NULL",
    "values": "UPDATE paths SET vals = '[[\"string\", 5, 1]]' WHERE vals IS NOT NULL",
    "a time past year 9999": "UPDATE paths SET first_seen_ms = 9000000000000000000",
    "a time before 1970": "UPDATE drift SET last_seen_ms = -1",
}


@pytest.mark.parametrize("what", list(FOREIGN_ROWS))
async def test_a_file_whose_rows_are_not_ours_is_damage_learned_again(
    store: Store, caplog: pytest.LogCaptureFixture, what: str
) -> None:
    caplog.set_level(logging.INFO, logger="walletpass_tui.schemas")
    await varied_history(store)
    first = SchemaLearner(store.path).start()
    await first.asettled()
    await first.aclose()
    before = snapshot(store.path)
    with sqlite3.connect(schemas_path(store.path)) as db:
        db.execute(FOREIGN_ROWS[what])
    with pytest.raises(SchemaError, match="is damaged; it is learned again from the history"):
        snapshot(store.path)
    second = SchemaLearner(store.path).start()
    try:
        await second.asettled()
        assert second.failures == 0
    finally:
        await second.aclose()
    assert snapshot(store.path) == before
    said = [r.getMessage() for r in caplog.records if r.name.startswith("walletpass_tui.schemas")]
    assert sum(f"schema file of {store.path} is damaged" in line for line in said) == 1, said


async def test_a_file_of_another_format_is_said_and_made_anew(store: Store) -> None:
    await varied_history(store)
    first = SchemaLearner(store.path).start()
    await first.asettled()
    await first.aclose()
    before = snapshot(store.path)
    with sqlite3.connect(schemas_path(store.path)) as db:
        db.execute("PRAGMA user_version = 1")
    with pytest.raises(SchemaError, match="was written by another version of walletpass-tui"):
        SchemaReader(store.path).groups()
    second = SchemaLearner(store.path).start()
    try:
        await second.asettled()
    finally:
        await second.aclose()
    assert snapshot(store.path) == before


async def test_the_drift_state_changes_with_a_finding_not_with_each_delivery_learned(
    store: Store, learner: SchemaLearner
) -> None:
    """The dashboard reads the drift marks again only when this changed: deliveries of the
    learned shape leave it as it was, a finding changes it."""
    reader = SchemaReader(store.path)
    for n in range(10):
        await store.record(attempt(n, activated(n)))
    await learner.asettled()
    state = reader.drift_state()
    for n in range(10, 30):
        await store.record(attempt(n, activated(n)))
    await learner.asettled()
    assert reader.drift_state() == state
    await store.record(attempt(30, activated(30, serialNumber=30)))
    await learner.asettled()
    assert reader.drift_state() != state
    assert len(reader.attempts_with_drift()) == 1
