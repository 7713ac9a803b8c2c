"""``events prune`` while ``listen`` runs on the same home: the prune sees the receiver and takes
small steps with a pause after each, so every delivery posted meanwhile is acknowledged and
stored, the old history goes, and the counts by minute follow both."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import factories
import pytest
from process_helpers import post, start_listen

from walletpass_tui.cli import main
from walletpass_tui.cli.events_cmd import maintenance
from walletpass_tui.webhooks.models import LogFilter
from walletpass_tui.webhooks.store import Store

OLD = 3_000

pytestmark = pytest.mark.slow  # a listen process


async def test_a_prune_beside_a_running_listen_loses_no_delivery(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    old = int(time.time() * 1000) - 30 * 86_400_000
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        for start in range(0, OLD, 300):
            await asyncio.gather(
                *(
                    store.record(
                        factories.json_attempt(f"msg_old{i}", at=old + i, topic="pass.activated")
                    )
                    for i in range(start, start + 300)
                )
            )
    steps: list[int] = []  # their sizes
    real_step = Store.prune_oldest

    async def step(self: Store, cutoff_ms: int, limit: int, *, durable: bool) -> tuple[int, float]:
        steps.append(limit)
        return await real_step(self, cutoff_ms, limit, durable=durable)

    maintenance_saw: list[bool] = []  # whether the prune saw a receiver running
    real_prune = maintenance.prune_in_steps

    async def prune_in_steps(*args: object) -> int:
        maintenance_saw.append(args[3]())  # type: ignore[operator]
        return await real_prune(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "prune_oldest", step)
    monkeypatch.setattr(maintenance, "prune_in_steps", prune_in_steps)
    monkeypatch.setattr(maintenance, "MAX_STEP", 60)  # many steps over this small history

    listen, url = await asyncio.to_thread(start_listen)
    try:
        pruning = asyncio.ensure_future(
            asyncio.to_thread(main, ["events", "prune", "--older-than", "7d", "--yes"])
        )
        answers = []
        n = 0
        while not pruning.done() or n < 20:
            body = json.dumps({"type": "pass.activated", "data": {"n": n}}).encode()
            answers.append(await asyncio.to_thread(post, url, f"msg_new{n}", body))
            n += 1
        assert await pruning == 0
    finally:
        listen.interrupt()
    assert maintenance_saw == [True] and len(steps) >= OLD // 60
    assert answers == [200] * n  # no delivery waited out the lock or was refused
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        assert await store.count() == n
        assert await store.count(LogFilter(topic="pass.activated")) == n
        assert len(await store.log_page(limit=n + 10)) == n
        assert (await store.stats()).received == n
