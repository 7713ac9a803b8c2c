"""The relay as a real process on 127.0.0.1: fan-out, catch-up, a SIGKILL, an idle subscriber."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest
from relay_helpers import (
    SECRET,
    Collected,
    RelayProcess,
    add_channel,
    follow,
    post_all,
    signed,
    stop_task,
)
from standardwebhooks import Webhook

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url

pytestmark = pytest.mark.slow


def verify_all(got: Collected) -> None:
    """Every relayed delivery still verifies with the real secret (standardwebhooks itself)."""
    hook = Webhook(SECRET)
    for d in got.items:
        hook.verify(d.body, dict(d.headers))


async def test_two_subscribers_each_receive_every_delivery(
    relay_process: RelayProcess,
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    sub_url = subscribe_url(relay_process.url, issued.channel.slug)
    _, alice, a_task = await follow(sub_url, issued.token)
    _, bob, b_task = await follow(sub_url, issued.token)
    try:
        await asyncio.wait_for(asyncio.gather(alice.connected.wait(), bob.connected.wait()), 30)
        async with aiohttp.ClientSession() as session:
            ids = await post_all(session, ingress, 30)
        await alice.wait_for(30)
        await bob.wait_for(30)
    finally:
        await stop_task(a_task)
        await stop_task(b_task)
    assert alice.ids == ids and bob.ids == ids
    verify_all(alice)
    verify_all(bob)


async def test_a_stopped_subscriber_catches_up_on_50_in_order_each_once(
    relay_process: RelayProcess,
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    sub_url = subscribe_url(relay_process.url, issued.channel.slug)
    async with aiohttp.ClientSession() as session:
        sub, first, task = await follow(sub_url, issued.token)
        before = await post_all(session, ingress, 3)
        await first.wait_for(3)
        await stop_task(task)  # the laptop sleeps
        cursor = sub.cursor
        missed = await post_all(session, ingress, 50)
    _, later, task = await follow(sub_url, issued.token, after=cursor)
    try:
        await later.wait_for(50)
        await asyncio.sleep(0.5)  # a couple of heartbeats: nothing more arrives
    finally:
        await stop_task(task)
    assert first.ids == before
    assert later.ids == missed  # all 50, in order, none twice
    cursors = [d.cursor for d in later.items]
    assert cursors == sorted(set(cursors))
    verify_all(later)


async def test_a_sigkill_under_load_loses_nothing_acknowledged(
    relay_process: RelayProcess,
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()
    port = relay_process.port
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    acked: list[str] = []
    enough = asyncio.Event()

    async def poster(session: aiohttp.ClientSession) -> None:
        while True:
            body, headers = signed()
            try:
                async with session.post(ingress, data=body, headers=headers) as r:
                    if r.status == 200:
                        acked.append(headers["webhook-id"])
                        if len(acked) >= 200:
                            enough.set()
            except (aiohttp.ClientError, OSError):
                return

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8)) as session:
        posters = [asyncio.create_task(poster(session)) for _ in range(8)]
        await asyncio.wait_for(enough.wait(), 120)
        relay_process.kill()  # SIGKILL, with posts in flight
        await asyncio.wait_for(asyncio.gather(*posters), 60)
    count = len(acked)

    relay_process.start(port)
    sub_url = subscribe_url(relay_process.url, issued.channel.slug)
    _, got, task = await follow(sub_url, issued.token)
    try:
        async with asyncio.timeout(60):
            while not set(acked) <= set(got.ids):
                got.arrived.clear()
                await got.arrived.wait()
    finally:
        await stop_task(task)
    assert count >= 200
    assert set(acked) <= set(got.ids)
    assert len(got.ids) == len(set(got.ids))  # each once


def _rss_kib(proc: RelayProcess) -> int:
    return proc.rss_kib()


async def test_a_subscriber_that_reads_nothing_does_not_grow_the_relay(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    sub_url = subscribe_url(relay_process.url, issued.channel.slug)

    # A subscriber that connects, asks for the stream, and never reads a byte.
    idle = socket.socket()
    idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    idle.connect(("127.0.0.1", relay_process.port))
    path = sub_url.split(str(relay_process.port), 1)[1]
    idle.sendall(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {issued.token}\r\n\r\n".encode()
    )
    _, reader, task = await follow(sub_url, issued.token)
    big = b'{"type":"pass.activated","pad":"' + b"x" * (60 * 1024) + b'"}'
    try:
        await asyncio.wait_for(reader.connected.wait(), 30)
        async with aiohttp.ClientSession() as session:
            # Warm up (allocator, SQLite cache), then measure across 40 MB of deliveries.
            for _ in range(50):
                body, headers = signed(body=big)
                async with session.post(ingress, data=body, headers=headers) as r:
                    assert r.status == 200
            await reader.wait_for(50)
            baseline = _rss_kib(relay_process)
            count = 650
            for _ in range(count):
                body, headers = signed(body=big)
                async with session.post(ingress, data=body, headers=headers) as r:
                    assert r.status == 200  # ingress never waits for the idle subscriber
            await reader.wait_for(50 + count)
            grown = _rss_kib(relay_process) - baseline
    finally:
        await stop_task(task)
        idle.close()
    posted_kib = count * len(big) // 1024
    # The idle subscriber holds a cursor and a socket buffer, not the deliveries it did not read.
    assert grown < posted_kib // 4, f"RSS grew {grown} KiB while {posted_kib} KiB went through"
