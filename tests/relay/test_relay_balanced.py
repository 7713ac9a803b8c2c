"""The deployment's topology by hand: two ``relay serve`` processes on one PostgreSQL database
behind a balancer (a small TCP proxy standing in for Caddy), one of them SIGKILLed under load."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from pg_cluster import PgCluster
from relay_helpers import SECRET, RelayProcess, add_channel, follow, signed, stop_task
from standardwebhooks import Webhook
from tcp_proxy import TcpProxy

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url

pytestmark = pytest.mark.slow


@pytest.fixture
def two_processes(pg_cluster: PgCluster, tmp_path: Path) -> Iterator[list[RelayProcess]]:
    url = pg_cluster.new_database()
    procs = [RelayProcess(tmp_path / f"host-{i}", url) for i in range(2)]
    yield procs
    for proc in procs:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.kill()
    pg_cluster.release(url)


async def until(condition: object, timeout: float = 120) -> None:
    async with asyncio.timeout(timeout):  # "did not hang"
        while True:
            if condition():  # type: ignore[operator]
                return
            await asyncio.sleep(0.02)


async def test_a_sigkill_of_one_instance_loses_nothing_it_acknowledged(
    two_processes: list[RelayProcess],
) -> None:
    a, b = two_processes
    issued = add_channel(a, "team")
    for proc in two_processes:
        proc.start()
    slug = issued.channel.slug
    proxy = TcpProxy([("127.0.0.1", a.port), ("127.0.0.1", b.port)])
    await proxy.start()
    # Four laptops through the balancer: two land on each instance.
    followers = [await follow(subscribe_url(proxy.url, slug), issued.token) for _ in range(4)]
    acked: dict[str, list[str]] = {"a": [], "b": []}
    stop = asyncio.Event()

    async def poster(session: aiohttp.ClientSession, name: str, proc: RelayProcess) -> None:
        url = ingress_url(proc.url, slug)
        while not stop.is_set():
            body, headers = signed()
            try:
                async with session.post(url, data=body, headers=headers) as r:
                    if r.status == 200:
                        acked[name].append(headers["webhook-id"])
            except (aiohttp.ClientError, OSError):
                if name == "a":
                    return  # it was killed
                await asyncio.sleep(0.05)

    connector = aiohttp.TCPConnector(limit=16)
    async with aiohttp.ClientSession(connector=connector) as session:
        try:
            await asyncio.wait_for(
                asyncio.gather(*(got.connected.wait() for _, got, _ in followers)), 60
            )
            assert {port for _, port in proxy.chosen} == {a.port, b.port}
            posters = [
                asyncio.create_task(poster(session, name, proc))
                for name, proc in (("a", a), ("b", b)) * 4
            ]
            await until(lambda: len(acked["a"]) >= 100)
            a.kill()  # SIGKILL, with posts and streams in flight
            seen_b = len(acked["b"])
            await until(lambda: len(acked["b"]) >= seen_b + 50)  # b keeps storing
            stop.set()
            await asyncio.wait_for(asyncio.gather(*posters), 60)
            everything = set(acked["a"]) | set(acked["b"])
            for _, got, _ in followers:
                async with asyncio.timeout(120):
                    while not everything <= set(got.ids):
                        got.arrived.clear()
                        await got.arrived.wait()
        finally:
            stop.set()
            for _, _, task in followers:
                await stop_task(task)
            await proxy.stop()
    hook = Webhook(SECRET)
    resumed = 0
    for _, got, _ in followers:
        assert everything <= set(got.ids)
        assert len(got.ids) == len(set(got.ids))  # each once
        cursors = [d.cursor for d in got.items]
        assert cursors == list(range(1, len(cursors) + 1))  # one order, no gap
        for d in got.items[:: max(1, len(got.items) // 20)]:
            hook.verify(d.body, dict(d.headers))
        # A laptop that was on the killed instance lost its stream and resumed on the other.
        resumed += any(not s.connected and s.error for s in got.states)
    assert resumed >= 2
