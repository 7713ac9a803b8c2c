"""What several relay instances on one PostgreSQL database believe of it and of each other.

Any role that can connect to the database can send a notice on the relay's channel: a notice is
a hint to read the database, never a number to believe (what is announced and streamed comes
from the rows). And instances whose clocks differ, each within the tolerance, stamp the same
channel's deliveries with one clock (the database's, in the inserting transaction), so the
laptop's rule on received times holds across them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from link_helpers import laptop, link_for, stored_until
from pg_cluster import PgCluster
from relay_helpers import (
    ROOT,
    RelayData,
    TestDB,
    add_channel,
    follow,
    post_all,
    signed,
    stop_task,
)

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.relay.server.storage.postgres.schema import NOTIFY_CHANNEL

HUGE = 2**62


@pytest.fixture
def pg_database(pg_cluster: PgCluster) -> Iterator[str]:
    url = pg_cluster.new_database()
    yield url
    pg_cluster.release(url)


def skewed(minutes: float) -> Callable[[], datetime]:
    return lambda: datetime.now(UTC) + timedelta(minutes=minutes)


@contextlib.asynccontextmanager
async def instances(
    url: str, root: Path, clocks: list[Callable[[], datetime] | None]
) -> AsyncIterator[list[RelayServer]]:
    """One relay per clock on one database; heartbeats of 600 s, so streams are woken by the
    database's notices alone."""
    servers = [
        RelayServer(RelayData(root / f"host-{i}", url).options(heartbeat_s=600), clock=clock)
        for i, clock in enumerate(clocks)
    ]
    try:
        for server in servers:
            await server.start()
        yield servers
    finally:
        for server in servers:
            await server.stop()


async def until(condition: Callable[[], bool], timeout: float = 30) -> None:
    """Poll ``condition()`` until true; a "did not hang" guard, not a timing."""
    async with asyncio.timeout(timeout):
        while True:
            if condition():
                return
            await asyncio.sleep(0.02)


async def notify(url: str, payload: str) -> None:
    """A notice as any role that can connect may send it."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, payload)
    finally:
        await conn.close()


async def test_a_forged_notice_announces_nothing_and_delays_nothing(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with instances(pg_database, tmp_path, [None, None]) as (a, b):
        issued = add_channel(a, "team")
        channel_id, slug = issued.channel.id, issued.channel.slug
        await until(lambda: a.fanouts is not None and len(a.fanouts) == 1)  # A heard of it
        # Cursors and usage far past anything stored, before anyone subscribes at A...
        await notify(pg_database, f"d {channel_id} {HUGE} {HUGE} {HUGE}")
        await asyncio.sleep(0.3)  # heard by A (nothing to wait on: it must change nothing)
        _, got, task = await follow(subscribe_url(a.url, slug), issued.token)
        try:
            await asyncio.wait_for(got.connected.wait(), 30)
            # ... and once more while a subscriber is there.
            await notify(pg_database, f"d {channel_id} 1 {HUGE} {HUGE}")
            await asyncio.sleep(0.3)
            # A still takes posts (the forged usage is not its quota) ...
            ids = await post_all(http, ingress_url(a.url, slug), 1)
            # ... and a post to B reaches A's subscriber at once, not at a heartbeat.
            ids += await post_all(http, ingress_url(b.url, slug), 1)
            await got.wait_for(2, timeout=30)  # a "did not hang" guard: heartbeats are 600 s
            _, late, late_task = await follow(subscribe_url(a.url, slug), issued.token, after=2)
            try:
                await asyncio.wait_for(late.connected.wait(), 30)
            finally:
                await stop_task(late_task)
        finally:
            await stop_task(task)
    assert got.ids == ids
    # The heads announced are the rows': at connecting, and at every step after.
    assert max(s.head for s in got.states) <= 2
    assert max(s.head for s in late.states) <= 2


async def test_instances_with_clocks_minutes_apart_lose_nothing_to_the_received_time_rule(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """A's clock is four minutes ahead, B's four behind (each within the 5-minute tolerance):
    what was posted to B after what was posted to A is stored verified, not refused as going
    back eight minutes along the cursor."""
    async with instances(pg_database, tmp_path, [skewed(4), skewed(-4)]) as (a, b):
        issued = add_channel(a, "team")
        slug = issued.channel.slug
        link = link_for(subscribe_url(a.url, slug), issued.token)
        async with laptop(tmp_path / "laptop", link) as runtime:
            await runtime.serve()
            before = time.time() * 1000
            ids = await post_all(http, ingress_url(a.url, slug), 1)
            ids += await post_all(http, ingress_url(b.url, slug), 1)
            after = time.time() * 1000
            stored = await stored_until(runtime, 2)
    assert [(x.webhook_id, x.verdict, x.reason) for x in stored] == [
        (ids[0], "verified", "verified"),
        (ids[1], "verified", "verified"),
    ]
    # Stamped by the database's clock (this machine's here), not by either instance's.
    for attempt in stored:
        assert before - 5_000 <= attempt.received_at_ms <= after + 5_000


async def test_the_received_time_an_event_carries_is_the_one_stored_for_it(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """The ring (what this instance committed) and the database (what another reads) give one
    event the same bytes."""
    async with instances(pg_database, tmp_path, [skewed(3), None]) as (a, b):
        issued = add_channel(a, "team")
        slug = issued.channel.slug
        on_a = await follow(subscribe_url(a.url, slug), issued.token)
        on_b = await follow(subscribe_url(b.url, slug), issued.token)
        try:
            await asyncio.wait_for(
                asyncio.gather(on_a[1].connected.wait(), on_b[1].connected.wait()), 30
            )
            body, headers = signed()
            async with http.post(ingress_url(a.url, slug), data=body, headers=headers) as r:
                assert r.status == 200
            await on_a[1].wait_for(1)
            await on_b[1].wait_for(1)
        finally:
            await stop_task(on_a[2])
            await stop_task(on_b[2])
    conn = await asyncpg.connect(pg_database)
    try:
        row = await conn.fetchrow("SELECT received_at_ms, data FROM deliveries")
    finally:
        await conn.close()
    assert on_a[1].items == on_b[1].items
    assert on_a[1].items[0].received_at_ms == row["received_at_ms"]
    assert b'"received_at_ms":%d,' % row["received_at_ms"] in bytes(row["data"])
    assert abs(row["received_at_ms"] - time.time() * 1000) < 60_000  # not A's clock


# A relay process whose clock (time.time, what now_ms reads) runs SKEW seconds ahead, as on a
# machine resumed from an old snapshot or with a broken clock; the database's is right.
SKEWED_RELAY = """
import os, sys, time
real = time.time
time.time = lambda: real() + float(os.environ["SKEW"])
from walletpass_tui.cli import main
sys.argv[0] = "walletpass-tui"
sys.exit(main(sys.argv[1:]))
"""


async def test_an_instance_days_ahead_prunes_nothing_fresh_and_says_its_clock_is_off(
    pg_database: str, tmp_path: Path
) -> None:
    data = RelayData(tmp_path / "a", pg_database)
    issued = add_channel(data, "team")
    server = data.server()
    await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            await post_all(http, ingress_url(server.url, issued.channel.slug), 3)
    finally:
        await server.stop()
    out = tmp_path / "d.out"
    env = dict(os.environ, WALLETPASS_HOME=str(tmp_path / "d"), PYTHONUNBUFFERED="1")
    env.update(WALLETPASS_RELAY_DATABASE=pg_database, SKEW=str(8 * 86400))
    with out.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", SKEWED_RELAY, "relay", "serve", "--quiet",
            "--host", "127.0.0.1", "--port", "0",
            cwd=ROOT, env=env, stdout=sink, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
    try:
        async with asyncio.timeout(60):  # it says so after its first pruning round
            while "clock is" not in out.read_text():
                assert proc.returncode is None, out.read_text()
                await asyncio.sleep(0.05)
    finally:
        proc.terminate()
        async with asyncio.timeout(30):
            await proc.wait()
    said = out.read_text()
    assert "this machine's clock is 8.0 days ahead of the database's" in said, said
    assert "NTP" in said and "Traceback" not in said
    with TestDB(data) as db:
        assert db.query("SELECT COUNT(*) FROM deliveries") == [(3,)]  # seconds old: all kept
