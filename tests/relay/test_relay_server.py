"""The relay server in this event loop, over real HTTP on 127.0.0.1: ingress, tokens, streams."""

from __future__ import annotations

import asyncio
import socket
import threading
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from relay_helpers import (
    OTHER_SECRET,
    SECRET,
    RelayData,
    TestDB,
    add_channel,
    follow,
    query,
    revoke,
    signed,
    stop_task,
    urls,
)
from standardwebhooks import Webhook

from walletpass_tui.relay.link.failures import RelayAuthError
from walletpass_tui.relay.server.channels import subscribe_url
from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
from walletpass_tui.relay.server.storage.target import database_path
from walletpass_tui.webhooks.verify import sign


def counts(server: RelayServer) -> tuple[int, int]:
    rows = query(
        server,
        "SELECT (SELECT COUNT(*) FROM deliveries), (SELECT COUNT(*) FROM rejected)",
    )
    return int(rows[0][0]), int(rows[0][1])


async def test_a_delivery_reaches_a_subscriber_with_its_raw_bytes_and_headers(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    body = b'{"type":"pass.activated","odd":"\xff\xfe not utf-8"}'
    # Signed over the raw (non-UTF-8) bytes, as the service would.
    headers = sign(SECRET, "msg_raw_bytes", body, datetime.now(UTC))
    async with http.post(ingress, data=body, headers=headers) as r:
        assert r.status == 200, await r.text()
    _, got, task = await follow(sub_url, issued.token)
    try:
        await got.wait_for(1)
    finally:
        await stop_task(task)
    d = got.items[0]
    assert d.body == body
    assert d.webhook_id == headers["webhook-id"]
    assert d.header("webhook-signature") == headers["webhook-signature"]
    assert d.method == "POST" and d.path.startswith("/in/")
    assert d.source == "127.0.0.1" and d.channel == "team"


async def test_unknown_slug_is_404_and_nothing_is_stored(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    add_channel(relay, "team")
    body, headers = signed()
    async with http.post(f"{relay.url}/in/AAAAAAAAAAAAAAAAAAAAAA", data=body, headers=headers) as r:
        assert r.status == 404
    async with http.post(f"{relay.url}/elsewhere", data=body, headers=headers) as r:
        assert r.status == 404
    assert counts(relay) == (0, 0)


async def test_tokens_bad_revoked_or_for_another_channel_get_401(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    team = add_channel(relay, "team")
    other = add_channel(relay, "other")
    _, team_sub = urls(relay, team)

    async def status(url: str, token: str | None) -> int:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with http.get(url, headers=headers) as r:
            return r.status

    assert await status(team_sub, None) == 401
    assert await status(team_sub, "wpr_not-a-real-token") == 401
    assert await status(team_sub, other.token) == 401  # a real token, another channel
    unknown = subscribe_url(relay.url, "AAAAAAAAAAAAAAAAAAAAAA")
    assert await status(unknown, team.token) == 401  # unknown channel: same answer, no 404

    assert revoke(relay, team.token) == 1
    assert await status(team_sub, team.token) == 401
    async with http.get(
        subscribe_url(relay.url, other.channel.slug),
        headers={"Authorization": f"Bearer {other.token}"},
        params={"after": "0"},
        timeout=aiohttp.ClientTimeout(sock_read=5),
    ) as r:
        assert r.status == 200  # the other channel's token still works
        assert r.headers["Content-Type"].startswith("text/event-stream")


async def test_a_revoked_token_ends_an_open_stream(relay: RelayServer) -> None:
    team = add_channel(relay, "team")
    _, sub_url = urls(relay, team)
    _, got, task = await follow(sub_url, team.token)
    async with asyncio.timeout(10):
        await got.connected.wait()
    revoke(relay, "team")
    async with asyncio.timeout(10):
        try:
            await task
        except RelayAuthError as exc:
            assert "401" in str(exc)
        else:
            raise AssertionError("the subscriber kept going with a revoked token")


async def test_edge_verification_refuses_a_forgery_and_does_not_fan_it_out(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "verified", secret=SECRET)
    ingress, sub_url = urls(relay, issued)
    forged_body, forged = signed(OTHER_SECRET)
    async with http.post(ingress, data=forged_body, headers=forged) as r:
        assert r.status == 401
        assert "no signature matches" in await r.text()
    body, good = signed(SECRET)
    async with http.post(ingress, data=body, headers=good) as r:
        assert r.status == 200
    _, got, task = await follow(sub_url, issued.token)
    try:
        await got.wait_for(1)
        await asyncio.sleep(0.3)  # several heartbeats: nothing else is coming
    finally:
        await stop_task(task)
    assert got.ids == [good["webhook-id"]]
    assert counts(relay) == (1, 1)  # the forgery is kept as rejected, for debugging
    # And the subscriber can verify what it got with the real secret.
    d = got.items[0]
    Webhook(SECRET).verify(d.body, dict(d.headers))


async def test_hostile_posts_get_a_clear_4xx(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    ingress, _ = urls(relay, issued)
    async with http.get(ingress) as r:
        assert r.status == 405 and r.headers["Allow"] == "POST"
    async with http.post(ingress, data=b"{}") as r:
        assert r.status == 400 and "missing header" in await r.text()
    big, headers = signed(body=b"x" * (64 * 1024 + 1))
    async with http.post(ingress, data=big, headers=headers) as r:
        assert r.status == 413 and "limit" in await r.text()
    body, headers = signed()
    headers["webhook-timestamp"] = "1000000000"
    async with http.post(ingress, data=body, headers=headers) as r:
        assert r.status == 401 and "too old" in await r.text()
    assert counts(relay) == (0, 4 - 1)  # the 405 is not kept; the others are


async def test_over_its_quota_a_channel_answers_503_until_pruned(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "small", quota_bytes=2000)
    ingress, _ = urls(relay, issued)
    statuses = []
    for _ in range(10):
        body, headers = signed()
        async with http.post(ingress, data=body, headers=headers) as r:
            statuses.append(r.status)
    assert 200 in statuses and statuses[-1] == 503
    first_503 = statuses.index(503)
    assert set(statuses[first_503:]) == {503}
    with TestDB(relay) as db:
        listed = db.channel_by_name("small")
    assert listed is not None and listed.over_quota
    stored = statuses.count(200)
    assert listed.deliveries == stored

    relay.options.retention_days = 0  # everything is older than "now - 0 days"
    assert await relay.prune() == stored
    body, headers = signed()
    async with http.post(ingress, data=body, headers=headers) as r:
        assert r.status == 200


async def test_resume_after_a_cursor_with_last_event_id_or_after(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    ids = []
    for _ in range(5):
        body, headers = signed()
        ids.append(headers["webhook-id"])
        async with http.post(ingress, data=body, headers=headers) as r:
            assert r.status == 200
    _, everything, task = await follow(sub_url, issued.token)
    await everything.wait_for(5)
    await stop_task(task)
    assert everything.ids == ids
    third = everything.items[2].cursor

    # ?after= on a raw request, and Last-Event-ID through the client: the same two deliveries.
    auth = {"Authorization": f"Bearer {issued.token}"}
    async with http.get(f"{sub_url}?after={third}", headers=auth) as r:
        text = b""
        async with asyncio.timeout(10):
            while text.count(b"event: delivery") < 2:
                text += await r.content.readany()
    assert [ids[3] in text.decode(), ids[4] in text.decode(), ids[2] in text.decode()] == [
        True,
        True,
        False,
    ]
    _, rest, task = await follow(sub_url, issued.token, after=third)
    await rest.wait_for(2)
    await asyncio.sleep(0.2)
    await stop_task(task)
    assert rest.ids == ids[3:]

    async with http.get(f"{sub_url}?after=-1", headers=auth) as r:
        assert r.status == 400


async def test_healthz_counts_channels_and_connected_subscribers(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    _, sub_url = urls(relay, issued)
    _, _, task = await follow(sub_url, issued.token)
    try:
        async with asyncio.timeout(10):
            while True:
                async with http.get(f"{relay.url}/healthz") as r:
                    health = await r.json()
                if health["subscribers"] == 1:
                    break
                await asyncio.sleep(0.02)
        assert health["status"] == "ok" and health["channels"] == 1 and health["version"]
    finally:
        await stop_task(task)


async def test_an_idle_stream_gets_heartbeats_with_the_channel_head(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    body, headers = signed()
    async with http.post(ingress, data=body, headers=headers) as r:
        assert r.status == 200
    _, got, task = await follow(sub_url, issued.token)
    try:
        await got.wait_for(1)
        text = b""
        auth = {"Authorization": f"Bearer {issued.token}", "Last-Event-ID": "999999"}
        async with http.get(sub_url, headers=auth) as r:
            async with asyncio.timeout(10):
                while text.count(b": heartbeat") < 2:
                    text += await r.content.readany()
    finally:
        await stop_task(task)
    assert f"head={got.items[0].cursor}".encode() in text
    assert b"event: delivery" not in text  # nothing after cursor 999999


async def test_channel_info_gives_the_ingress_url_to_a_token_holder(
    relay: RelayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    info_url = sub_url.removesuffix("/events")
    async with http.get(info_url, headers={"Authorization": f"Bearer {issued.token}"}) as r:
        info = await r.json()
    assert info["ingress_url"] == ingress and info["name"] == "team"
    async with http.get(info_url) as r:
        assert r.status == 401


async def test_revoking_cuts_a_busy_stream_too(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    team = add_channel(relay, "team")
    ingress, sub_url = urls(relay, team)
    _, got, task = await follow(sub_url, team.token)
    stop = asyncio.Event()

    async def keep_posting() -> None:
        while not stop.is_set():
            body, headers = signed()
            async with http.post(ingress, data=body, headers=headers) as r:
                assert r.status == 200
            await asyncio.sleep(0.01)  # always more than a heartbeat's worth of traffic

    poster = asyncio.create_task(keep_posting())
    try:
        await got.wait_for(5)
        revoke(relay, "team")
        with pytest.raises(RelayAuthError):
            await asyncio.wait_for(task, 30)
    finally:
        stop.set()
        await poster


async def test_the_writer_survives_callers_that_stop_waiting(tmp_path: Path) -> None:
    from walletpass_tui.relay.server.storage.records import NewDelivery
    from walletpass_tui.relay.server.storage.sqlite.writer import RelayWriter

    issued = add_channel(tmp_path, "team")
    writer = await RelayWriter.open(database_path(tmp_path), lambda stored: None)
    try:
        release = threading.Event()
        busy = writer.submit(lambda db: release.wait(30))  # hold the writer on its first batch
        gave_up = [
            writer.submit(NewDelivery(issued.channel.id, 0, f"m{i}", b"{}")) for i in range(200)
        ]
        for future in gave_up:
            future.cancel()  # a sender hung up while its delivery waited for the writer
        await asyncio.sleep(0)
        release.set()
        assert await asyncio.wait_for(busy, 30) is True
        last = await asyncio.wait_for(
            writer.submit(NewDelivery(issued.channel.id, 0, "last", b"{}")), 30
        )
        assert last.cursor > 0
    finally:
        await writer.close()
    # Nobody saw a 2xx for the others: they were not written.
    assert query(tmp_path, "SELECT webhook_id FROM deliveries") == [("last",)]


async def test_allow_source_trusts_x_forwarded_for_only_from_a_trusted_proxy(
    relay_data: RelayData, http: aiohttp.ClientSession
) -> None:
    from walletpass_tui.relay.server.ingress import IngressOptions
    from walletpass_tui.webhooks.sources import SourcePolicy

    issued = add_channel(relay_data, "team")

    async def status_with(trust: list[str] | None, forwarded: str | None) -> int:
        server = relay_data.server(
            ingress=IngressOptions(sources=SourcePolicy.build(["203.0.113.0/24"], trust))
        )
        await server.start()
        try:
            ingress, _ = urls(server, issued)
            body, headers = signed()
            if forwarded:
                headers["X-Forwarded-For"] = forwarded
            async with http.post(ingress, data=body, headers=headers) as r:
                return r.status
        finally:
            await server.stop()

    assert await status_with(None, None) == 403  # 127.0.0.1 itself is not allowed
    assert await status_with(None, "203.0.113.9") == 200  # loopback proxy: its header counts
    assert await status_with(["10.0.0.0/8"], "203.0.113.9") == 403  # not a trusted proxy


def _open_files(path: Path) -> list[str]:
    """This process's descriptors on the database file or its -wal/-shm companions."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc to see open files")
    found = []
    for fd in fds.iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue  # closed while listed (the listing's own descriptor)
        if target.startswith(str(path)):
            found.append(target)
    return found


@pytest.mark.parametrize("failure", ["bad public URL", "port in use"])
async def test_a_start_that_fails_after_opening_the_database_closes_it(
    tmp_path: Path, failure: str
) -> None:
    """Setting up after the database opened can still fail; the relay gives the database back
    (no descriptor, no writer thread) so the next start, or another process, can have it."""
    from walletpass_tui.errors import WalletpassError

    add_channel(tmp_path, "team")
    path = database_path(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        options = RelayOptions(home=tmp_path, host="127.0.0.1", port=0)
        if failure == "port in use":
            options.port = taken.getsockname()[1]
        else:
            options.public_url = "not a url"
        server = RelayServer(options)
        with pytest.raises(WalletpassError):
            await server.start()
    assert server.storage is None
    assert _open_files(path) == []
    assert not [t for t in threading.enumerate() if t.name == "relay-writer" and t.is_alive()]
    again = RelayServer(RelayOptions(home=tmp_path, host="127.0.0.1", port=0))
    await again.start()
    await again.stop()
