"""PostgreSQL stopped and started again under load, with two relay instances on it: ingress answers
503 with Retry-After while it is away, subscribers are told and wait, nothing acknowledged is
lost, and both sides recover by themselves. A cluster of its own, since this test stops it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
from pg_cluster import PgCluster
from relay_helpers import ROOT, SECRET, RelayData, add_channel, follow, signed, stop_task
from standardwebhooks import Webhook
from tcp_proxy import TcpProxy

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


async def test_an_outage_is_one_line_each_way_never_the_drivers_tracebacks(
    own_cluster: PgCluster, tmp_path: Path
) -> None:
    """``relay serve --quiet`` while PostgreSQL is stopped and started: one line when it goes,
    one when it is back, however many times the driver's pool tries to reconnect meanwhile (it
    connects through a proxy here, which counts the tries)."""
    url = own_cluster.new_database()
    issued = add_channel(RelayData(tmp_path / "relay", url), "team")
    proxy = TcpProxy([("127.0.0.1", own_cluster.port)])
    await proxy.start()
    url = url.replace(f":{own_cluster.port}/", f":{proxy.port}/")
    out = tmp_path / "relay.out"
    env = dict(os.environ, WALLETPASS_HOME=str(tmp_path / "relay"), PYTHONUNBUFFERED="1")
    env["WALLETPASS_RELAY_DATABASE"] = url
    with out.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "walletpass_tui", "relay", "serve", "--quiet",
            "--host", "127.0.0.1", "--port", "0",
            cwd=ROOT, env=env, stdout=sink, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
    try:
        await _until(lambda: "Relay listening on " in out.read_text())
        ingress = ingress_url(out.read_text().split("Relay listening on ", 1)[1].split()[0], "")
        ingress += issued.channel.slug
        own_cluster.stop("fast")
        tried = proxy.accepted
        async with aiohttp.ClientSession() as session:
            async with asyncio.timeout(120):
                while proxy.accepted < tried + 12:  # the relay tried again and again
                    body, headers = signed()
                    async with session.post(ingress, data=body, headers=headers) as r:
                        assert r.status == 503
                    await asyncio.sleep(0.5)
            own_cluster.start()
            await _until(lambda: "reachable again" in out.read_text())
            body, headers = signed()
            async with session.post(ingress, data=body, headers=headers) as r:
                assert r.status == 200
    finally:
        proc.terminate()
        async with asyncio.timeout(30):
            await proc.wait()
        await proxy.stop()
    said = out.read_text()
    assert "Traceback" not in said and "Failed to restore" not in said, said
    assert said.count("is unreachable") == 1 and said.count("reachable again") == 1, said


async def _until(condition: Callable[[], bool], timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):  # "did not hang"
        while True:
            if condition():
                return
            await asyncio.sleep(0.05)
