"""Several relay processes on one PostgreSQL database behave as one relay: two ``RelayServer``s in
this event loop (each with its own pool and LISTEN connection, as two hosts would have), posts
at either, laptops on either."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from link_helpers import laptop, link_for, stored_until
from pg_cluster import PgCluster
from relay_helpers import (
    SECRET,
    Collected,
    RelayData,
    TestDB,
    add_channel,
    follow,
    post_all,
    signed,
    stop_task,
)
from standardwebhooks import Webhook

from walletpass_tui.cli import main
from walletpass_tui.relay.events import delivery_data
from walletpass_tui.relay.link.failures import RelayAuthError
from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.relay.server.storage.postgres.schema import (
    NOTIFY_CHANNEL,
    PRUNE_LOCK,
    SCHEMA_VERSION,
)
from walletpass_tui.relay.server.storage.postgres.storage import PostgresStorage
from walletpass_tui.relay.server.storage.records import NewDelivery
from walletpass_tui.relay.server.storage.target import database_target


@pytest.fixture
def pg_database(pg_cluster: PgCluster) -> Iterator[str]:
    url = pg_cluster.new_database()
    yield url
    pg_cluster.release(url)


@contextlib.asynccontextmanager
async def instances(
    url: str, root: Path, count: int = 2, heartbeat_s: float = 0.1
) -> AsyncIterator[list[RelayServer]]:
    """``count`` relays on one database. A long ``heartbeat_s`` leaves streams nothing but the
    database's notices to wake them (a heartbeat also reads after the cursor)."""
    servers = [
        RelayData(root / f"host-{i}", url).server(heartbeat_s=heartbeat_s) for i in range(count)
    ]
    try:
        for server in servers:
            await server.start()
        yield servers
    finally:
        for server in servers:
            await server.stop()


def bare_data() -> bytes:
    """What ingress stores for a delivery, with nothing in it."""
    return delivery_data(
        received_at_ms=0,
        method="POST",
        path="/in/x",
        headers=[],
        body=b"",
        source=None,
        forwarded_for=None,
        client=None,
        channel="team",
    )


def verify_all(got: Collected) -> None:
    hook = Webhook(SECRET)
    for d in got.items:
        hook.verify(d.body, dict(d.headers))


async def until(condition: object, timeout: float = 30) -> None:
    """Poll ``condition()`` (sync or async) until true; a "did not hang" guard, not a timing."""
    async with asyncio.timeout(timeout):
        while True:
            result = condition()  # type: ignore[operator]
            if asyncio.iscoroutine(result):
                result = await result
            if result:
                return
            await asyncio.sleep(0.02)


async def test_a_laptop_on_one_instance_stores_and_verifies_what_was_posted_to_the_other(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with instances(pg_database, tmp_path, heartbeat_s=600) as (a, b):
        issued = add_channel(a, "team")
        slug = issued.channel.slug
        link = link_for(subscribe_url(a.url, slug), issued.token)
        async with laptop(tmp_path / "laptop", link) as runtime:
            await runtime.serve()
            ids = await post_all(http, ingress_url(b.url, slug), 20)
            stored = await stored_until(runtime, 20)
    assert [x.webhook_id for x in stored] == ids  # in cursor order, each once
    assert all(x.verified for x in stored)  # checked with the real secret, on the laptop
    assert [x.relay_cursor for x in stored] == list(range(1, 21))


async def test_a_restore_under_both_instances_is_seen_by_the_one_a_laptop_is_on(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """The database goes back under running instances; the new deliveries are posted to B only:
    A learns it from the rows (B's notice names a cursor whose event A holds another delivery
    at) and its stream tells the laptop, which stores them all."""
    async with instances(pg_database, tmp_path, heartbeat_s=600) as (a, b):
        issued = add_channel(a, "team")
        slug = issued.channel.slug
        link = link_for(subscribe_url(a.url, slug), issued.token)
        async with laptop(tmp_path / "laptop", link) as runtime:
            await runtime.serve()
            before = await post_all(http, ingress_url(a.url, slug), 4)
            await stored_until(runtime, 4)
            with TestDB(a) as db:
                db.query("DELETE FROM deliveries WHERE cursor > 2")
                db.query("UPDATE channels SET last_cursor = 2")
            after = await post_all(http, ingress_url(b.url, slug), 3)
            stored = await stored_until(runtime, 7)
    assert [x.webhook_id for x in stored] == before + after
    assert [x.relay_cursor for x in stored] == [1, 2, 3, 4, 3, 4, 5]
    assert all(x.verified for x in stored)
    assert link.state.rewound == (4, 2)


async def test_posts_at_both_instances_reach_every_laptop_on_either_once_in_cursor_order(
    pg_database: str, tmp_path: Path
) -> None:
    async with instances(pg_database, tmp_path, heartbeat_s=600) as servers:
        issued = add_channel(servers[0], "team")
        slug = issued.channel.slug
        followers = [
            await follow(subscribe_url(servers[i % 2].url, slug), issued.token) for i in range(4)
        ]
        acked: list[str] = []

        async def poster(server: RelayServer, count: int) -> None:
            async with aiohttp.ClientSession() as session:
                for _ in range(count):
                    body, headers = signed()
                    url = ingress_url(server.url, slug)
                    async with session.post(url, data=body, headers=headers) as r:
                        assert r.status == 200, await r.text()
                    acked.append(headers["webhook-id"])

        try:
            await asyncio.wait_for(
                asyncio.gather(*(followers[i][1].connected.wait() for i in range(4))), 30
            )
            # Four posters, two at each instance, at once: their transactions interleave.
            await asyncio.gather(*(poster(servers[i % 2], 25) for i in range(4)))
            for _, got, _ in followers:
                await got.wait_for(100)
            await asyncio.sleep(0.3)  # nothing more arrives
        finally:
            for _, _, task in followers:
                await stop_task(task)
    for _, got, _ in followers:
        assert sorted(got.ids) == sorted(acked)  # none missing
        assert len(got.ids) == len(set(got.ids)) == 100  # none twice
        assert [d.cursor for d in got.items] == list(range(1, 101))  # one order for everyone
        verify_all(got)
    assert len({tuple(got.ids) for _, got, _ in followers}) == 1


async def test_a_later_cursor_never_commits_before_an_earlier_one(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """Another process has taken cursor 2 and is slow to commit. A post at instance B must wait
    for it (B's writer waits on the channel's row), so no reader ever sees 3 without 2."""
    async with instances(pg_database, tmp_path, heartbeat_s=600) as (a, b):
        issued = add_channel(a, "team")
        channel_id, slug = issued.channel.id, issued.channel.slug
        _, got, task = await follow(subscribe_url(a.url, slug), issued.token)
        slow = await asyncpg.connect(pg_database)
        try:
            first = await post_all(http, ingress_url(b.url, slug), 1)
            await got.wait_for(1)
            # A transaction as a relay's writer makes it: cursor 2 taken, the row inserted,
            # the notice sent; not committed yet.
            body, headers = signed()
            data = delivery_data(
                received_at_ms=0,
                method="POST",
                path=f"/in/{slug}",
                headers=list(headers.items()),
                body=body,
                source="127.0.0.1",
                forwarded_for=None,
                client="127.0.0.1",
                channel="team",
            )
            tx = slow.transaction()
            await tx.start()
            taken = await slow.fetchval(
                "UPDATE channels SET last_cursor = last_cursor + 1, used_bytes = used_bytes + $2 "
                "WHERE id = $1 RETURNING last_cursor",
                channel_id,
                len(data),
            )
            assert taken == 2
            await slow.execute(
                "INSERT INTO deliveries (channel_id, cursor, received_at_ms, webhook_id, size, "
                "data) VALUES ($1, 2, 0, $2, $3, $4)",
                channel_id,
                headers["webhook-id"],
                len(data),
                data,
            )
            await slow.execute(
                "SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, f"d {channel_id} 2 2 {len(data)}"
            )
            later_body, later_headers = signed()
            post = asyncio.ensure_future(
                http.post(ingress_url(b.url, slug), data=later_body, headers=later_headers)
            )

            async def writer_waits_on_the_row() -> bool:
                waiting = await slow.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                    "'walletpass-relay' AND wait_event_type = 'Lock'"
                )
                return bool(waiting)

            await until(writer_waits_on_the_row)
            assert not post.done()  # B holds the post: nothing after 2 can commit first
            with TestDB(a) as db:
                assert db.read_after(channel_id, 1, 10, 1 << 20) == []  # 2 is not visible yet
            assert got.ids == first
            await tx.commit()
            async with await post as answer:
                assert answer.status == 200
            await got.wait_for(3)
            await asyncio.sleep(0.3)
        finally:
            await slow.close()
            await stop_task(task)
    assert [d.cursor for d in got.items] == [1, 2, 3]
    assert got.ids == [*first, headers["webhook-id"], later_headers["webhook-id"]]


async def test_a_revoked_token_ends_its_streams_on_every_instance(
    pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with instances(pg_database, tmp_path) as (a, b):
        issued = add_channel(a, "team")
        slug = issued.channel.slug
        on_a = await follow(subscribe_url(a.url, slug), issued.token)
        on_b = await follow(subscribe_url(b.url, slug), issued.token)
        tasks = [on_a[2], on_b[2]]
        try:
            await asyncio.wait_for(
                asyncio.gather(on_a[1].connected.wait(), on_b[1].connected.wait()), 30
            )
            # From a third host: the channel command against the shared database.
            admin = ["--home", str(tmp_path / "admin"), "--database", pg_database]
            code = main(["relay", "channel", "revoke", "team", *admin[2:], *admin[:2]])
            assert code == 0
            for task in tasks:
                with pytest.raises(RelayAuthError):
                    await asyncio.wait_for(task, 30)
        finally:
            for task in tasks:
                if not task.done():
                    await stop_task(task)
    assert "Revoked 1 token" in capsys.readouterr().out


async def test_channels_added_and_removed_anywhere_take_effect_on_every_instance(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with instances(pg_database, tmp_path) as servers:
        issued = add_channel(RelayData(tmp_path / "admin", pg_database), "late")  # after start
        slug = issued.channel.slug
        for server in servers:
            body, headers = signed()
            async with http.post(ingress_url(server.url, slug), data=body, headers=headers) as r:
                assert r.status == 200
        with TestDB(RelayData(tmp_path / "admin", pg_database)) as db:
            db.remove("late")

        async def gone_everywhere() -> bool:
            for server in servers:
                body, headers = signed()
                url = ingress_url(server.url, slug)
                async with http.post(url, data=body, headers=headers) as r:
                    if r.status != 404:
                        return False
            return True

        await until(gone_everywhere)


async def test_the_quota_counts_what_every_instance_stored(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with instances(pg_database, tmp_path) as (a, b):
        issued = add_channel(a, "small", quota_bytes=4000)
        slug = issued.channel.slug
        statuses = []
        for _ in range(10):
            body, headers = signed()
            async with http.post(ingress_url(a.url, slug), data=body, headers=headers) as r:
                statuses.append(r.status)
        assert statuses[0] == 200 and statuses[-1] == 503
        at_b: list[int] = []

        async def b_refuses_too() -> bool:
            body, headers = signed()
            async with http.post(ingress_url(b.url, slug), data=body, headers=headers) as r:
                at_b.append(r.status)
                return r.status == 503 and bool(r.headers.get("Retry-After"))

        # B hears of A's deliveries from the database: it reads their rows, then the usage. A
        # post that reaches it while it reads may be stored, and its own commit then tells it
        # the usage, so one at most.
        await until(b_refuses_too)
        assert at_b.count(200) <= 1
        b.options.retention_days = 0
        assert await b.prune() == statuses.count(200) + at_b.count(200)

        async def a_accepts_again() -> bool:
            body, headers = signed()
            async with http.post(ingress_url(a.url, slug), data=body, headers=headers) as r:
                return r.status == 200

        await until(a_accepts_again)


async def test_pruning_runs_on_one_instance_at_a_time(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with instances(pg_database, tmp_path, count=1) as (a,):
        issued = add_channel(a, "team")
        await post_all(http, ingress_url(a.url, issued.channel.slug), 3)
        a.options.retention_days = 0
        other = await asyncpg.connect(pg_database)  # another instance, pruning now
        try:
            assert await other.fetchval("SELECT pg_try_advisory_lock($1)", PRUNE_LOCK)
            assert await a.prune() is None  # not at the same time
            with TestDB(a) as db:
                assert db.query("SELECT COUNT(*) FROM deliveries") == [(3,)]
            await other.execute("SELECT pg_advisory_unlock($1)", PRUNE_LOCK)
        finally:
            await other.close()
        assert await a.prune() == 3


async def test_healthz_names_the_database_without_the_user_or_password(
    pg_database: str, tmp_path: Path, http: aiohttp.ClientSession, pg_cluster: PgCluster
) -> None:
    async with instances(pg_database, tmp_path, count=1) as (a,), http.get(f"{a.url}/healthz") as r:
        text = await r.text()
        assert r.status == 200
        health = await r.json()
    name = pg_database.rsplit("/", 1)[1]
    assert health["database"] == {
        "backend": "postgresql",
        "host": "127.0.0.1",
        "port": pg_cluster.port,
        "database": name,
        "reachable": True,
    }
    assert pg_cluster.password not in text and "relay:" not in text


async def test_relays_starting_at_once_create_the_schema_once(pg_database: str) -> None:
    target = database_target(pg_database, Path("/nonexistent"))
    opened = await asyncio.gather(*(PostgresStorage.open(target, serving=False) for _ in range(4)))
    for storage in opened:
        await storage.close()
    conn = await asyncpg.connect(pg_database)
    try:
        versions = await conn.fetch("SELECT version FROM schema_version ORDER BY version")
        assert [v[0] for v in versions] == list(range(1, SCHEMA_VERSION + 1))
        await conn.execute("INSERT INTO schema_version(version) VALUES ($1)", SCHEMA_VERSION + 1)
    finally:
        await conn.close()
    with pytest.raises(RelayStoreError, match="newer walletpass-tui") as info:
        await PostgresStorage.open(target, serving=False)
    assert target.url and target.url.split("@")[0].split(":")[-1] not in str(info.value)


async def test_the_writer_stores_nothing_for_callers_that_stopped_waiting(
    pg_database: str, tmp_path: Path
) -> None:
    async with instances(pg_database, tmp_path, count=1) as (a,):
        issued = add_channel(a, "team")
        assert a.storage is not None
        gave_up = [
            a.storage.submit(NewDelivery(issued.channel.id, 0, f"m{i}", bare_data()))
            for i in range(200)
        ]
        for future in gave_up:
            future.cancel()  # senders that hung up before their delivery was written
        last = await asyncio.wait_for(
            a.storage.submit(NewDelivery(issued.channel.id, 0, "last", bare_data())), 30
        )
        assert last.cursor == 1  # nobody saw a 2xx for the others: they were not written
        with TestDB(a) as db:
            assert db.query("SELECT webhook_id FROM deliveries") == [("last",)]


async def test_what_was_committed_while_an_instance_could_not_listen_reaches_its_subscribers(
    pg_database: str, tmp_path: Path, pg_cluster: PgCluster, http: aiohttp.ClientSession
) -> None:
    """A's listening connection is cut and cannot come back for a while; B stores a delivery
    meanwhile, whose notice A never hears. Once A listens again, its subscriber gets it: A reads
    the database after every subscriber's cursor (no heartbeat does it here: they are 600 s)."""
    name = pg_database.rsplit("/", 1)[1]
    async with instances(pg_database, tmp_path, heartbeat_s=600) as (a, b):
        issued = add_channel(a, "team")
        slug = issued.channel.slug
        _, got, task = await follow(subscribe_url(a.url, slug), issued.token)
        try:
            first = await post_all(http, ingress_url(b.url, slug), 1)
            await got.wait_for(1)
            # No new connection to the database (the pools keep theirs), then the listening
            # connection of A (the first started) cut.
            pg_cluster.psql(f"ALTER DATABASE {name} CONNECTION LIMIT 0", database="postgres")
            pg_cluster.psql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{name}' AND application_name = 'walletpass-relay-listen' "
                "AND backend_start = (SELECT min(backend_start) FROM pg_stat_activity "
                f"WHERE datname = '{name}' AND application_name = 'walletpass-relay-listen')",
                database="postgres",
            )
            await until(lambda: not a.storage.reachable)  # type: ignore[union-attr]
            missed = await post_all(http, ingress_url(b.url, slug), 1)  # A hears nothing of it
            await asyncio.sleep(0.3)
            assert got.ids == first
            pg_cluster.psql(f"ALTER DATABASE {name} CONNECTION LIMIT -1", database="postgres")
            await got.wait_for(2)
        finally:
            pg_cluster.psql(f"ALTER DATABASE {name} CONNECTION LIMIT -1", database="postgres")
            await stop_task(task)
    assert got.ids == first + missed
