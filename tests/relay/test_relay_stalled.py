"""Subscribers that stop reading, as a real relay process sees them: raw sockets on 127.0.0.1.

A subscriber that asks for a backlog and then reads nothing must cost the relay a bounded, small
amount of memory whatever the backlog, must not slow ingress or the other subscribers, and is
dropped once it has made no progress for two heartbeats (it resumes later with Last-Event-ID).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import aiohttp
import pytest
from relay_helpers import RelayProcess, add_channel, follow, signed, stop_task

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url

pytestmark = pytest.mark.slow

BACKLOG = 200  # deliveries of 64 KiB: about 17 MiB of events, many times the socket buffers
STALLED = 16
BIG = b'{"type":"pass.activated","pad":"' + b"x" * (64 * 1024) + b'"}'
PER_STALLED_KIB = 1024  # the bound: well under this for each subscriber that stopped reading


def open_stalled(port: int, path: str, token: str, **headers: str) -> socket.socket:
    """A subscriber that sends its GET and then never reads a byte (a small receive window)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    extra = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    s.sendall(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\n{extra}\r\n".encode()
    )
    return s


async def post_big(session: aiohttp.ClientSession, url: str, count: int) -> None:
    async def one() -> None:
        body, headers = signed(body=BIG)
        async with session.post(url, data=body, headers=headers) as r:
            assert r.status == 200, await r.text()

    for start in range(0, count, 16):
        await asyncio.gather(*(one() for _ in range(min(16, count - start))))


async def health(session: aiohttp.ClientSession, base: str) -> dict[str, Any]:
    async with session.get(f"{base}/healthz") as r:
        return dict(await r.json())


async def test_stalled_subscribers_with_a_backlog_cost_little_and_slow_nothing(
    relay_process: RelayProcess,
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start(0, "--heartbeat", "600")  # no drop, no heartbeat wakes a reader
    base = relay_process.url
    ingress = ingress_url(base, issued.channel.slug)
    sub_url = subscribe_url(base, issued.channel.slug)
    path = sub_url.removeprefix(base)
    stalled: list[socket.socket] = []
    _, reader, task = await follow(sub_url, issued.token)
    try:
        async with aiohttp.ClientSession() as session:
            await post_big(session, ingress, BACKLOG)
            await reader.wait_for(BACKLOG, timeout=120)  # warm: every page read once
            baseline = relay_process.rss_kib()
            bound = STALLED * PER_STALLED_KIB

            stalled = [open_stalled(relay_process.port, path, issued.token) for _ in range(STALLED)]
            grown = 0
            async with asyncio.timeout(120):  # "did not hang"
                while True:
                    grown = relay_process.rss_kib() - baseline
                    state = await health(session, base)
                    if grown > bound or state.get("stalled", 0) >= STALLED:
                        break
                    await asyncio.sleep(0.1)
            assert grown < bound, (
                f"RSS grew {grown} KiB for {STALLED} stalled subscribers "
                f"({grown // STALLED} KiB each; the bound is {PER_STALLED_KIB} KiB)"
            )
            assert state["subscribers"] == STALLED + 1

            # Ingress answers while they stall, and the subscriber that reads gets it all.
            async with asyncio.timeout(60):
                await post_big(session, ingress, 20)
            await reader.wait_for(BACKLOG + 20, timeout=60)
            grown = relay_process.rss_kib() - baseline
            assert grown < bound, f"RSS grew {grown} KiB after more deliveries"
            assert (await health(session, base))["stalled"] == STALLED
    finally:
        await stop_task(task)
        for s in stalled:
            s.close()
    assert len(set(reader.ids)) == BACKLOG + 20


async def wait_health(
    session: aiohttp.ClientSession, base: str, key: str, want: int, timeout: float = 30
) -> None:
    async with asyncio.timeout(timeout):
        while True:
            if (await health(session, base)).get(key) == want:
                return
            await asyncio.sleep(0.05)


def reset_or_closed(s: socket.socket, timeout: float = 30) -> bool:
    """Whether the relay ended the connection: a reset, or the end of what it sent."""
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


async def test_a_subscriber_that_makes_no_progress_is_dropped(
    relay_process: RelayProcess,
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start(0, "--heartbeat", "0.2")
    base = relay_process.url
    ingress = ingress_url(base, issued.channel.slug)
    path = subscribe_url(base, issued.channel.slug).removeprefix(base)
    async with aiohttp.ClientSession() as session:
        await post_big(session, ingress, 100)
        s = open_stalled(relay_process.port, path, issued.token)
        try:
            await wait_health(session, base, "subscribers", 1)
            # Two heartbeats without a byte drained: the relay lets go of it.
            await wait_health(session, base, "subscribers", 0)
            assert await asyncio.to_thread(reset_or_closed, s)
        finally:
            s.close()


async def test_a_reader_of_a_few_bytes_a_second_is_dropped_too(
    relay_process: RelayProcess,
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start(0, "--heartbeat", "0.2")
    base = relay_process.url
    ingress = ingress_url(base, issued.channel.slug)
    path = subscribe_url(base, issued.channel.slug).removeprefix(base)
    async with aiohttp.ClientSession() as session:
        await post_big(session, ingress, 100)
        s = open_stalled(relay_process.port, path, issued.token)
        s.setblocking(False)

        async def trickle() -> None:  # a byte every 50 ms, whatever the relay does
            while True:
                with contextlib.suppress(BlockingIOError, ConnectionResetError):
                    s.recv(1)
                await asyncio.sleep(0.05)

        reading = asyncio.create_task(trickle())
        try:
            await wait_health(session, base, "subscribers", 1)
            await wait_health(session, base, "subscribers", 0)
        finally:
            await stop_task(reading)
            s.close()
