"""A prune the receiver's writer runs is told to whoever shows the history: the receiver's own
subscribers (its dashboard) hear ``gaps`` and every attached viewer but the one that asked hears
``removed``, with counts that add up to what was deleted. A real runtime with its control socket
in the home, a real history on disk."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import factories
import pytest
from waiting import until

from walletpass_tui.config import Settings
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.attached import REMOVED_EVERY_S, AttachedRuntime
from walletpass_tui.runtime.control_client import ControlClient
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.store import Store

OLD = 1_500
DEADLINE_S = 60.0  # "did not hang" guard, never a timing assertion


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[DeliveryRuntime]:
    home = tmp_path / "home"
    old = int(time.time() * 1000) - 86_400_000
    async with await Store.open(home / "deliveries.sqlite3") as store:
        await asyncio.gather(
            *(store.record(factories.json_attempt(f"msg_old{i}", at=old + i)) for i in range(OLD))
        )
    options = ReceiverOptions(host="127.0.0.1", port=0)
    async with DeliveryRuntime(Settings(home=home), DeliverySetup(options=options)) as runtime:
        await runtime.start_instance("listen")
        yield runtime


async def test_every_viewer_and_the_receivers_own_dashboard_hear_rows_pruned(
    running: DeliveryRuntime,
) -> None:
    heard_here: list[int] = []
    running.subscribe(gaps=heard_here.append)
    sock = instance.socket_path(running.settings.home)
    asker, onlooker = await ControlClient.connect(sock), await ControlClient.connect(sock)
    asked: list[dict[str, Any]] = []
    looked: list[dict[str, Any]] = []
    readings = [
        asyncio.create_task(asker.run(asked.append)),
        asyncio.create_task(onlooker.run(looked.append)),
    ]
    try:
        await asker.request("prune", before_ms=int(time.time() * 1000))
        await until(lambda: any(m.get("end") for m in asked))
        await until(lambda: sum(heard_here) == OLD)
        await until(lambda: sum(m["deleted"] for m in looked if m["type"] == "removed") == OLD)
    finally:
        asker.close()
        onlooker.close()
        await asyncio.gather(*readings)
    removed = [m for m in looked if m.get("type") == "removed"]
    assert removed and all(m["deleted"] > 0 for m in removed)
    assert {m["type"] for m in asked} == {"pruned"}  # the asker hears its own progress only
    assert await running.store.count() == 0


async def test_a_flood_of_removed_messages_reads_the_history_again_a_bounded_number_of_times(
    tmp_path: Path,
) -> None:
    """A receiver (here a hostile one on a real socket) telling ``removed`` a thousand times
    makes an attached dashboard read its history again a handful of times, the counts added up;
    counts that are not whole numbers in range are ignored."""
    path = tmp_path / "fake.sock"
    lines = [b'{"type":"hello","protocol":1,"instance":{},"state":{},"upto":0}\n']
    lines += [b'{"type":"removed","deleted":1}\n'] * 1000
    for bad in (b"-1", b"0", b'"5"', b"1.5", b"true", str(2**70).encode(), b"null"):
        lines.append(b'{"type":"removed","deleted":' + bad + b"}\n")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.writelines(lines)
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(answer, str(path))
    try:
        runtime = AttachedRuntime(Settings(home=tmp_path / "home"), None, find_receiver=False)
        heard: list[int] = []
        runtime.subscribe(gaps=heard.append)
        client = await ControlClient.connect(path)
        async with asyncio.timeout(DEADLINE_S):
            await runtime._talk(client)  # until the fake closes
        await until(lambda: sum(heard) == 1000)
        await asyncio.sleep(REMOVED_EVERY_S * 2)  # nothing more is told after the count is
        await runtime.close()
    finally:
        server.close()
    assert sum(heard) == 1000 and len(heard) < 100  # not once a message
