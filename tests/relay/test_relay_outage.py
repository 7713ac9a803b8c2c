"""PostgreSQL stopped and started again under load, with two relay instances on it: ingress answers
503 with Retry-After while it is away, subscribers are told and wait, nothing acknowledged is
lost, and both sides recover by themselves. A cluster of its own, since this test stops it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from pg_cluster import PgCluster
from relay_helpers import SECRET, RelayData, add_channel, follow, signed, stop_task
from standardwebhooks import Webhook

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url

pytestmark = pytest.mark.slow


@pytest.fixture
def own_cluster() -> Iterator[PgCluster]:
    try:
        cluster = PgCluster.create("outage")
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield cluster
    cluster.destroy()


async def test_a_database_outage_under_load_loses_nothing_acknowledged_and_heals_itself(
    own_cluster: PgCluster, tmp_path: Path
) -> None:
    url = own_cluster.new_database()
    servers = [RelayData(tmp_path / f"host-{i}", url).server(heartbeat_s=0.2) for i in range(2)]
    for server in servers:
        await server.start()
    issued = add_channel(servers[0], "team")
    slug = issued.channel.slug
    followers = [await follow(subscribe_url(s.url, slug), issued.token) for s in servers]
    acked: list[str] = []
    refused: list[tuple[int, str | None]] = []
    stop = asyncio.Event()

    async def poster(session: aiohttp.ClientSession, target: str) -> None:
        while not stop.is_set():
            body, headers = signed()
            async with session.post(target, data=body, headers=headers) as r:
                if r.status == 200:
                    acked.append(headers["webhook-id"])
                else:
                    refused.append((r.status, r.headers.get("Retry-After")))
                    await asyncio.sleep(0.02)

    async def until(condition: object, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):  # "did not hang"
            while True:
                if condition():  # type: ignore[operator]
                    return
                await asyncio.sleep(0.02)

    session = aiohttp.ClientSession()
    raw: aiohttp.ClientResponse | None = None
    posters: list[asyncio.Task[None]] = []
    try:
        # A subscriber reading the stream's bytes itself, to see what it is told.
        raw = await session.get(
            subscribe_url(servers[1].url, slug),
            headers={"Authorization": f"Bearer {issued.token}"},
        )
        told = bytearray()

        async def read_raw() -> None:
            assert raw is not None
            with contextlib.suppress(Exception):
                async for chunk in raw.content.iter_any():
                    told.extend(chunk)

        reader = asyncio.create_task(read_raw())
        posters = [
            asyncio.create_task(poster(session, ingress_url(s.url, slug))) for s in servers * 2
        ]
        await until(lambda: len(acked) >= 40)

        own_cluster.stop("fast")  # the database goes away under load
        before = len(refused)
        await until(lambda: len(refused) > before + 10)
        await until(lambda: b": database unavailable" in told)
        async with session.get(f"{servers[0].url}/healthz") as r:
            assert r.status == 503 and (await r.json())["database"]["reachable"] is False

        own_cluster.start()  # ...and comes back; nobody restarts the relays
        after = len(acked)
        await until(lambda: len(acked) >= after + 40)
        await until(lambda: b": database available again" in told)
        stop.set()
        await asyncio.gather(*posters)
        for _, got, _ in followers:
            async with asyncio.timeout(60):
                while not set(acked) <= set(got.ids):
                    got.arrived.clear()
                    await got.arrived.wait()
        reader.cancel()
    finally:
        stop.set()
        for task in posters:
            task.cancel()
        for _, _, task in followers:
            await stop_task(task)
        if raw is not None:
            raw.close()
        await session.close()
        for server in servers:
            await server.stop()
    assert refused and {status for status, _ in refused} == {503}
    assert all(retry_after and retry_after.isdigit() for _, retry_after in refused)
    hook = Webhook(SECRET)
    for _, got, _ in followers:
        assert set(acked) <= set(got.ids)  # every acknowledged delivery, on both instances
        assert len(got.ids) == len(set(got.ids))  # each once
        cursors = [d.cursor for d in got.items]
        assert cursors == sorted(cursors)
        for d in got.items:
            hook.verify(d.body, dict(d.headers))
