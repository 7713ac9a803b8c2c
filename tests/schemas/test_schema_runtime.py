"""The delivery runtime learns payload schemas: real signed POSTs through the real receiver, the
learner started after the store and stopped before it, drift told to runtime subscribers."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from schema_helpers import activated

from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.schemas.model import TEMPLATES
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.schemas.records import DriftRecord
from walletpass_tui.schemas.schema_file import schemas_path
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
DEADLINE_S = 30.0  # "did not hang" only


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", receiver_port=0)


def setup(**kw: Any) -> DeliverySetup:
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    return DeliverySetup(options=options, **kw)


async def post(client: httpx.AsyncClient, url: str, msg_id: str, body: Any) -> int:
    raw = json.dumps(body).encode()
    headers = {**sign(SECRET, msg_id, raw, datetime.now(UTC)), "content-type": "application/json"}
    return (await client.post(url, content=raw, headers=headers)).status_code


async def until(check: Callable[[], object]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not check():
        assert loop.time() < deadline, "the condition never became true"
        await asyncio.sleep(0.01)


async def stable(client: httpx.AsyncClient, url: str, count: int = 20) -> None:
    for n in range(count):
        assert await post(client, url, f"msg_{n:03d}", activated(n)) == 200


async def test_the_runtime_learns_and_tells_subscribers_of_drift(tmp_path: Path) -> None:
    heard: list[tuple[int, list[DriftRecord]]] = []
    looked: list[int] = []
    async with (
        DeliveryRuntime(settings(tmp_path), setup()) as runtime,
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
    ):
        unsubscribe = runtime.subscribe(
            drift=lambda attempt_id, records: heard.append((attempt_id, list(records))),
            learned=looked.append,
        )
        await runtime.serve()
        assert runtime.url is not None and runtime.learner is not None
        await stable(client, runtime.url)
        assert await post(client, runtime.url, "msg_odd", activated(99, serialNumber=7)) == 200
        odd = (await runtime.store.message_attempts("msg_odd"))[0]
        await until(lambda: heard)
        ((attempt_id, records),) = heard
        assert attempt_id == odd.id
        assert [r.describe() for r in records] == [
            "pass.activated data.serialNumber: string -> integer"
        ]
        assert records[0].webhook_id == "msg_odd" and records[0].count == 1
        await until(lambda: looked and looked[-1] >= odd.id)
        # The same finding again only counts; a new one after unsubscribing is not heard.
        unsubscribe()
        assert await post(client, runtime.url, "msg_odd2", activated(98, serialNumber=8)) == 200
        assert await post(client, runtime.url, "msg_new", activated(97, channel="web")) == 200
        reader = SchemaReader(runtime.store.path)
        await until(lambda: len(reader.drift()) == 2)
        assert len(heard) == 1
    by_kind = {r.kind: r for r in reader.drift()}
    assert by_kind["type_changed"].count == 2 and by_kind["field_added"].count == 1


async def test_a_failing_drift_listener_is_logged_and_the_others_still_hear(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[int] = []

    def broken(attempt_id: int, records: Sequence[DriftRecord]) -> None:
        raise ValueError("a subscriber's bug")

    caplog.set_level(logging.ERROR, logger="walletpass_tui.runtime.local")
    async with (
        DeliveryRuntime(settings(tmp_path), setup()) as runtime,
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
    ):
        runtime.subscribe(drift=broken)
        runtime.subscribe(drift=lambda attempt_id, records: heard.append(attempt_id))
        await runtime.serve()
        assert runtime.url is not None
        await stable(client, runtime.url)
        assert await post(client, runtime.url, "msg_odd", activated(99, serialNumber=7)) == 200
        await until(lambda: heard)
    failures = [r for r in caplog.records if r.name == "walletpass_tui.runtime.local"]
    assert len(failures) == 1
    assert "drift listener" in failures[0].getMessage()
    assert failures[0].exc_info is not None and "a subscriber's bug" in str(failures[0].exc_info[1])


async def test_a_failing_delivery_listener_is_logged_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str | None] = []

    def broken(batch: Sequence[Attempt]) -> None:
        raise KeyError("oops")

    caplog.set_level(logging.ERROR, logger="walletpass_tui.runtime.local")
    async with (
        DeliveryRuntime(settings(tmp_path), setup(learn_schemas=False)) as runtime,
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
    ):
        runtime.subscribe(broken)
        runtime.subscribe(lambda batch: seen.extend(a.webhook_id for a in batch))
        await runtime.serve()
        assert runtime.url is not None
        assert await post(client, runtime.url, "msg_1", activated(1)) == 200
        await until(lambda: seen)
    assert seen == ["msg_1"]
    assert any("deliveries listener" in r.getMessage() for r in caplog.records)


async def test_without_learning_there_is_no_learner_and_no_schema_file(tmp_path: Path) -> None:
    heard: list[int] = []
    async with (
        DeliveryRuntime(settings(tmp_path), setup(learn_schemas=False)) as runtime,
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
    ):
        runtime.subscribe(drift=lambda attempt_id, records: heard.append(attempt_id))
        await runtime.serve()
        assert runtime.url is not None and runtime.learner is None
        await stable(client, runtime.url, 21)
        assert await post(client, runtime.url, "msg_odd", activated(99, serialNumber=7)) == 200
        await runtime.store.settled()
        assert await runtime.learn_templates([{"id": "tpl_1"}]) == []
        history = runtime.store.path
    assert not schemas_path(history).exists()
    assert heard == []


async def test_the_learner_stops_when_the_runtime_closes_and_a_store_handed_in_stays_open(
    tmp_path: Path,
) -> None:
    store = await Store.open(settings(tmp_path).database_path)
    try:
        async with DeliveryRuntime(settings(tmp_path), store=store) as runtime:
            learner = runtime.learner
            assert learner is not None
            await learner.asettled()  # running
        assert runtime.learner is None
        with pytest.raises(RuntimeError, match="not running"):
            learner.settled(timeout=DEADLINE_S)
        assert (await store.stats()).received == 0  # the store is still usable
    finally:
        await store.close()


async def test_the_templates_are_learned_through_the_runtime(tmp_path: Path) -> None:
    templates = [
        {"id": f"tpl_{n}", "name": f"Card {n}", "style": {"color": "#fff"}} for n in range(3)
    ]
    async with DeliveryRuntime(settings(tmp_path), setup()) as runtime:
        assert await runtime.learn_templates(templates) == []
        history = runtime.store.path
    reader = SchemaReader(history)
    (group,) = reader.groups()
    assert (group.group, group.samples) == (TEMPLATES, 3)
    assert {f.path for f in reader.fields(TEMPLATES)} >= {"id", "name", "style.color"}


@contextlib.contextmanager
def schema_file_locked(history: Path) -> Iterator[None]:
    """Another program holds the schema file's write lock: the learner cannot open it."""
    db = sqlite3.connect(schemas_path(history), isolation_level=None)
    try:
        db.execute("BEGIN EXCLUSIVE")
        yield
        db.execute("ROLLBACK")
    finally:
        db.close()


async def test_drift_is_told_for_a_delivery_received_before_the_learner_could_open_its_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The runtime marks, before it accepts deliveries, from which row drift is told: a learner
    slow to open its file (locked by another program here) still tells of the first ones, and
    what was stored before the runtime opened is learned quietly."""
    s = settings(tmp_path)
    async with await Store.open(s.database_path) as store:
        for n in range(20):
            body = json.dumps(activated(n)).encode()
            await store.record(
                Attempt(
                    received_at_ms=1_795_000_000_000 + n,
                    method="POST",
                    path="/webhooks",
                    headers=(),
                    body=body,
                    verdict=VERIFIED,
                    reason="verified",
                    status=200,
                    webhook_id=f"msg_{n:03d}",
                    topic="pass.activated",
                )
            )
        await store.record(
            Attempt(
                received_at_ms=1_795_000_000_100,
                method="POST",
                path="/webhooks",
                headers=(),
                body=json.dumps(activated(50, platform=None)).encode(),
                verdict=VERIFIED,
                reason="verified",
                status=200,
                webhook_id="msg_old_drift",
                topic="pass.activated",
            )
        )
    heard: list[int] = []
    locked = schema_file_locked(s.database_path)
    locked.__enter__()
    try:
        async with (
            DeliveryRuntime(s, setup()) as runtime,
            httpx.AsyncClient(timeout=DEADLINE_S) as client,
        ):
            runtime.subscribe(drift=lambda attempt_id, records: heard.append(attempt_id))
            await runtime.serve()
            assert runtime.url is not None and runtime.learner is not None
            assert await post(client, runtime.url, "msg_odd", activated(99, serialNumber=7)) == 200
            odd = (await runtime.store.message_attempts("msg_odd"))[0]
            learner = runtime.learner
            await until(lambda: learner.failures >= 3)  # it tried, and was kept out
            # Said once while the same problem lasts (it is tried again twice a second).
            said = [r for r in caplog.records if r.name == "walletpass_tui.schemas.learner"]
            assert [r.levelno for r in said].count(logging.WARNING) == 1
            locked.__exit__(None, None, None)
            locked = contextlib.nullcontext()
            await until(lambda: heard)
            await runtime.learner.asettled()
    finally:
        locked.__exit__(None, None, None)
    assert heard == [odd.id]  # msg_old_drift's finding is stored, never announced
    kinds = {r.kind: r.webhook_id for r in SchemaReader(s.database_path).drift()}
    assert kinds == {"field_missing": "msg_old_drift", "type_changed": "msg_odd"}


async def test_a_rejected_delivery_is_looked_at_and_teaches_nothing(tmp_path: Path) -> None:
    """Progress covers every row, rejected ones too (listen --json waits on it); nothing is
    learned from a delivery whose signature does not verify."""
    looked: list[int] = []
    async with (
        DeliveryRuntime(settings(tmp_path), setup()) as runtime,
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
    ):
        runtime.subscribe(learned=looked.append)
        await runtime.serve()
        assert runtime.url is not None
        raw = json.dumps(activated(1)).encode()
        forged = sign(
            "whsec_" + base64.b64encode(b"x" * 32).decode(), "msg_f", raw, datetime.now(UTC)
        )
        answer = await client.post(runtime.url, content=raw, headers=forged)
        assert answer.status_code == 401
        (stored,) = await runtime.store.message_attempts("msg_f")
        await until(lambda: looked and looked[-1] >= stored.id)
        assert SchemaReader(runtime.store.path).groups() == []


async def test_the_learner_keeps_learning_while_commits_keep_coming(tmp_path: Path) -> None:
    """Under a stream of commits the learner yields most of its time to the receiver, but never
    stops: every delivery is learned, without being asked to settle."""
    s = settings(tmp_path)
    async with DeliveryRuntime(s, setup()) as runtime:
        total = 0
        for batch in range(30):
            await asyncio.gather(
                *(
                    runtime.store.record(
                        Attempt(
                            received_at_ms=1_795_000_000_000 + total + n,
                            method="POST",
                            path="/webhooks",
                            headers=(),
                            body=json.dumps(activated(total + n)).encode(),
                            verdict=VERIFIED,
                            reason="verified",
                            status=200,
                            webhook_id=f"msg_{batch}_{n}",
                            topic="pass.activated",
                        )
                    )
                    for n in range(100)
                )
            )
            total += 100
        reader = SchemaReader(runtime.store.path)

        def samples() -> int:
            groups = reader.groups()
            return groups[0].samples if groups else 0

        await until(lambda: samples() == total)
