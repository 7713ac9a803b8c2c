"""A prune asked of a running receiver over its control channel: a real runtime with a receiver
on 127.0.0.1, its control socket in the home, real signed POSTs while its writer prunes, the
requests checked field by field, one prune at a time, and a prune that ends with the viewer
that asked for it or with the receiver."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import factories
import httpx
import pytest
from waiting import until

from walletpass_tui.config import Settings
from walletpass_tui.runtime import control, instance
from walletpass_tui.runtime.control import PRUNE_DONE, PRUNE_STOPPED, ControlError
from walletpass_tui.runtime.control_client import ControlClient
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.prune_client import LEFT, prune_through
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.prune_job import FIRST_STEP
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"p" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'
OLD = 2_000
DEADLINE_S = 60.0  # "did not hang" guard, never a timing assertion


def now_ms() -> int:
    return int(time.time() * 1000)


async def post(client: httpx.AsyncClient, url: str, msg_id: str) -> int:
    headers = {**sign(SECRET, msg_id, BODY, datetime.now(UTC)), "content-type": "application/json"}
    return (await client.post(url, content=BODY, headers=headers)).status_code


def counts_agree(path: Path) -> bool:
    """The counts by minute hold exactly what the rows say."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        kept = db.execute(
            "SELECT minute, topic, verified + rejected FROM activity "
            "WHERE verified + rejected > 0 ORDER BY 1, 2"
        ).fetchall()
        rows = db.execute(
            "SELECT received_at_ms / 60000, COALESCE(topic, ''), COUNT(*) FROM attempts "
            "GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
    return kept == rows


@contextlib.asynccontextmanager
async def receiver(home: Path) -> AsyncIterator[DeliveryRuntime]:
    """A receiver on ``home`` whose history holds OLD attempts a month old."""
    old = now_ms() - 30 * 86_400_000
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for start in range(0, OLD, 500):
            await asyncio.gather(
                *(
                    store.record(factories.json_attempt(f"msg_old{i}", at=old + i * 1_000))
                    for i in range(start, start + 500)
                )
            )
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    settings = Settings(home=home, receiver_port=0)
    async with DeliveryRuntime(settings, DeliverySetup(options=options)) as runtime:
        await runtime.start_instance("listen")
        await runtime.serve()
        yield runtime


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[DeliveryRuntime]:
    async with receiver(tmp_path / "home") as runtime:
        yield runtime


def sock_path(runtime: DeliveryRuntime) -> Path:
    return instance.socket_path(runtime.settings.home)


async def test_the_receiver_prunes_while_it_answers_and_tells_how_far_it_got(
    running: DeliveryRuntime,
) -> None:
    assert running.url is not None
    told: list[int] = []
    stop = asyncio.Event()
    pruning = asyncio.ensure_future(
        prune_through(sock_path(running), now_ms() - 86_400_000, told.append, stop)
    )
    answers = []
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        n = 0
        while not pruning.done() or n < 10:
            answers.append(await post(http, running.url, f"msg_new{n}"))
            n += 1
    pruned = await pruning
    assert pruned.end == PRUNE_DONE and pruned.deleted == OLD
    assert told == sorted(told) and all(0 < t <= OLD for t in told)
    assert answers == [200] * n  # every delivery meanwhile acknowledged ...
    store = running.store
    assert await store.count() == n  # ... and stored, and nothing old is left
    assert store.pruning is not None and store.pruning.steps > 1  # done by the receiver's writer
    assert counts_agree(store.path)


async def test_a_prune_request_is_checked_and_one_runs_at_a_time(running: DeliveryRuntime) -> None:
    first = await ControlClient.connect(sock_path(running))
    second = await ControlClient.connect(sock_path(running))
    assert set(control.PRUNE_OPS) <= set(first.hello.state.controls)
    heard: list[dict[str, Any]] = []
    readings = [
        asyncio.create_task(first.run(heard.append)),
        asyncio.create_task(second.run(lambda _: None)),
    ]
    try:
        for bad in (-1, "1700000000000", 1.5e12, True, None, now_ms() + 86_400_000, 2**80):
            with pytest.raises(ControlError, match="prune takes before_ms"):
                await first.request("prune", before_ms=bad)
        with pytest.raises(ControlError, match="no prune of yours"):
            await first.request("prune_stop")
        async with running.store.hold_writes():  # the first prune cannot end meanwhile
            await first.request("prune", before_ms=now_ms())
            with pytest.raises(ControlError, match="pruning its history already"):
                await second.request("prune", before_ms=now_ms())
            with pytest.raises(ControlError, match="no prune of yours"):
                await second.request("prune_stop")  # only the viewer that asked stops it
        await until(lambda: any(m.get("end") for m in heard))
        assert heard[-1] == {"type": "pruned", "deleted": OLD, "end": "done", "reason": None}
        assert all(m["type"] == "pruned" for m in heard)  # only the viewer that asked hears it
    finally:
        first.close()
        second.close()
        await asyncio.gather(*readings)
    assert await running.store.count() == 0


async def test_a_viewer_that_leaves_ends_its_prune_after_the_step_under_way(
    running: DeliveryRuntime,
) -> None:
    client = await ControlClient.connect(sock_path(running))
    reading = asyncio.create_task(client.run(lambda _: None))
    store = running.store
    async with store.hold_writes():
        await client.request("prune", before_ms=now_ms())
        client.close()
        await reading
        await until(lambda: store.pruning is not None and store.pruning.stopping)
    job = store.pruning
    assert job is not None
    await until(lambda: not job.running)
    assert job.end == PRUNE_STOPPED and job.deleted <= FIRST_STEP
    assert await store.count() == OLD - job.deleted
    assert counts_agree(store.path)


async def test_a_receiver_that_stops_tells_the_count_and_the_command_goes_on(
    tmp_path: Path,
) -> None:
    """Ctrl-C on the receiver while it prunes: the step under way ends, the viewer hears how
    far it got and that the receiver is going (``left``), then the channel closes."""
    async with contextlib.AsyncExitStack() as stack:
        runtime = await stack.enter_async_context(receiver(tmp_path / "home"))
        store = runtime.store
        stop = asyncio.Event()
        async with store.hold_writes():
            pruning = asyncio.ensure_future(
                prune_through(sock_path(runtime), now_ms(), lambda _: None, stop)
            )
            await until(lambda: store.pruning is not None)
            closing = asyncio.ensure_future(runtime.close())
            await until(lambda: store.pruning is not None and store.pruning.stopping)
        pruned = await pruning
        await closing
    assert pruned.end == LEFT and pruned.reason == "the receiver is stopping"
    async with await Store.open(tmp_path / "home" / "deliveries.sqlite3") as after:
        assert pruned.deleted == OLD - await after.count() == FIRST_STEP
