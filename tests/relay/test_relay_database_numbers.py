"""Numbers the relay reads from its database setting and from the database's notices are ASCII
digits: a superscript, a fullwidth or an Arabic-Indic digit is not a number, and never an
exception."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from pg_cluster import PgCluster

from walletpass_tui.relay.server.storage import open_storage
from walletpass_tui.relay.server.storage.base import Committed
from walletpass_tui.relay.server.storage.postgres.schema import NOTIFY_CHANNEL
from walletpass_tui.relay.server.storage.records import Stored
from walletpass_tui.relay.server.storage.target import database_target


@pytest.mark.parametrize("port", ["²", "５４３２", "5432x"])
def test_a_port_that_is_not_ascii_digits_is_described_as_unknown(port: str, tmp_path: Path) -> None:
    target = database_target(f"postgresql://relay@db:{port}/relay", tmp_path)
    assert target.describe() == {
        "backend": "postgresql",
        "host": "db",
        "port": None,
        "database": "relay",
    }


class Heard:
    def __init__(self) -> None:
        self.committed: list[Committed] = []
        self.heard = asyncio.Event()

    def on_commit(self, stored: list[Stored]) -> None:
        pass

    def on_committed(self, committed: Committed) -> None:
        self.committed.append(committed)
        self.heard.set()

    def on_channels_changed(self) -> None:
        pass

    def on_database(self, reachable: bool) -> None:
        pass


@pytest.fixture
def pg_database(pg_cluster: PgCluster) -> Iterator[str]:
    url = pg_cluster.new_database()
    yield url
    pg_cluster.release(url)


async def test_a_notice_with_digits_of_another_script_is_ignored(
    pg_database: str, tmp_path: Path
) -> None:
    loop = asyncio.get_running_loop()
    raised: list[object] = []
    loop.set_exception_handler(lambda _loop, context: raised.append(context))
    storage = await open_storage(database_target(pg_database, tmp_path))
    heard = Heard()
    try:
        await storage.serve(heard)
        conn = await asyncpg.connect(pg_database)
        try:
            for payload in ("d ² 1 1 1", "d 1 ５ 5 9", "d 1 1 1 ١٢٣", "d 7 1 2 300"):
                await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, payload)
        finally:
            await conn.close()
        # Notices arrive in order: once the last one is heard, the others were read before it.
        await asyncio.wait_for(heard.heard.wait(), 30)  # a "did not hang" guard
    finally:
        await storage.close()
        loop.set_exception_handler(None)
    assert heard.committed == [Committed(7, 1, 2)]
    assert raised == []
