"""Hostile subscribers over raw sockets: too many streams, bad cursors, heads that never end."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import struct
import urllib.parse
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from relay_helpers import RelayData, add_channel, signed, urls

from walletpass_tui.relay.server.ingress import IngressOptions
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.relay.server.subscribe import DEFAULT_MAX_CHANNEL_SUBSCRIBERS


@contextlib.asynccontextmanager
async def running(relay_data: RelayData, **options: Any) -> AsyncIterator[RelayServer]:
    server = relay_data.server(**options)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def raw_get(server: RelayServer, path: str, head: bytes = b"") -> tuple[int, bytes, Conn]:
    """Send a GET with these extra header lines; the status, the head and the connection."""
    assert server.bound is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound[1])
    writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + head + b"\r\n")
    async with asyncio.timeout(30):
        answer = await reader.readuntil(b"\r\n\r\n")
    return int(answer.split(b" ", 2)[1]), answer, (reader, writer)


async def until(condition: Callable[[], bool], timeout: float = 30) -> None:
    """Poll for a condition; the timeout is a "did not hang" guard."""
    async with asyncio.timeout(timeout):
        while True:
            if condition():
                return
            await asyncio.sleep(0.02)


async def close(conn: Conn) -> None:
    conn[1].close()
    with contextlib.suppress(ConnectionError):
        await conn[1].wait_closed()


async def test_a_token_holder_opening_many_streams_gets_429_past_the_channel_limit(
    relay_data: RelayData,
) -> None:
    async with running(relay_data, heartbeat_s=600) as relay:  # no heartbeat finds a closed one
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[1].removeprefix(relay.url)
        auth = f"Authorization: Bearer {issued.token}\r\n".encode()
        gate = asyncio.Semaphore(64)  # within the listen backlog: no SYN retried a second later

        async def one() -> tuple[int, bytes, Conn]:
            async with gate:
                return await raw_get(relay, path, auth)

        attempts = DEFAULT_MAX_CHANNEL_SUBSCRIBERS + 50
        results = await asyncio.gather(*(one() for _ in range(attempts)))
        try:
            statuses = [status for status, _, _ in results]
            assert statuses.count(200) == DEFAULT_MAX_CHANNEL_SUBSCRIBERS
            assert statuses.count(429) == attempts - DEFAULT_MAX_CHANNEL_SUBSCRIBERS, sorted(
                set(statuses)
            )
            refused = next(r for r in results if r[0] == 429)
            assert b"Retry-After: 30" in refused[1]
            body = await refused[2][0].read(200)
            assert b"limit" in body and b"close one or retry later" in body
            assert relay.fanouts is not None
            assert relay.fanouts.subscribers == DEFAULT_MAX_CHANNEL_SUBSCRIBERS

            # A stream whose subscriber hangs up frees its place at once.
            await close(next(r[2] for r in results if r[0] == 200))
            fanouts = relay.fanouts
            await until(lambda: fanouts.subscribers == DEFAULT_MAX_CHANNEL_SUBSCRIBERS - 1)
            status, _, conn = await raw_get(relay, path, auth)
            assert status == 200
            await close(conn)
        finally:
            await asyncio.gather(*(close(r[2]) for r in results))


async def test_past_the_relay_wide_limit_streams_get_503(relay_data: RelayData) -> None:
    async with running(relay_data, max_subscribers=3) as relay:
        team = add_channel(relay, "team")
        other = add_channel(relay, "other")
        opened = []
        try:
            for issued in (team, team, other):
                path = urls(relay, issued)[1].removeprefix(relay.url)
                auth = f"Authorization: Bearer {issued.token}\r\n".encode()
                status, _, conn = await raw_get(relay, path, auth)
                opened.append(conn)
                assert status == 200
            path = urls(relay, other)[1].removeprefix(relay.url)
            auth = f"Authorization: Bearer {other.token}\r\n".encode()
            status, head, conn = await raw_get(relay, path, auth)
            opened.append(conn)
            assert status == 503 and b"Retry-After: 30" in head
            assert b"retry later" in await conn[0].read(200)
            # A wrong token is told so, not that the relay is full.
            status, _, conn = await raw_get(relay, path, b"Authorization: Bearer wpr_wrong\r\n")
            opened.append(conn)
            assert status == 401
        finally:
            await asyncio.gather(*(close(c) for c in opened))


CURSORS = [
    (b"0", 200),
    (b" 1 ", 200),
    (str(2**63 - 1).encode(), 200),
    (b"-1", 400),
    (str(2**63).encode(), 400),
    (b"abc", 400),
    (b"+5", 400),
    (b"0x10", 400),
    (b"1e3", 400),
    (b"1" * 40, 400),
    ("²".encode(), 400),  # a digit to str.isdigit, not a cursor
    ("٣".encode(), 400),  # an Arabic-Indic three
    (b"\xb2", 400),  # not UTF-8 at all
]


@pytest.mark.parametrize(("value", "status"), CURSORS)
async def test_a_cursor_is_ascii_digits_up_to_2_63_minus_1_or_a_clear_400(
    relay_data: RelayData, value: bytes, status: int
) -> None:
    async with running(relay_data) as relay:
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[1].removeprefix(relay.url)
        auth = f"Authorization: Bearer {issued.token}\r\n".encode()
        got, _, conn = await raw_get(relay, path, auth + b"Last-Event-ID: " + value + b"\r\n")
        try:
            assert got == status
            if status == 400:
                assert b"Last-Event-ID and ?after= take a cursor" in await conn[0].read(200)
        finally:
            await close(conn)
        if value.isascii():
            query = urllib.parse.quote(value.decode().strip(), safe="")
            got, _, conn = await raw_get(relay, f"{path}?after={query}", auth)
            await close(conn)
            assert got == status


async def test_a_cursor_past_the_head_gets_heartbeats_then_what_comes_next(
    relay_data: RelayData,
) -> None:
    async with running(relay_data, heartbeat_s=0.1) as relay:
        issued = add_channel(relay, "team")
        ingress, sub_url = urls(relay, issued)
        path = sub_url.removeprefix(relay.url)
        auth = f"Authorization: Bearer {issued.token}\r\n".encode()
        status, _, conn = await raw_get(relay, path, auth + b"Last-Event-ID: 0\r\n")
        assert status == 200
        async with aiohttp.ClientSession() as http:
            body, headers = signed()
            async with http.post(ingress, data=body, headers=headers) as r:
                assert r.status == 200
        seen = b""
        async with asyncio.timeout(30):
            while b"event: delivery" not in seen or b"heartbeat head=1" not in seen:
                seen += await conn[0].read(65536)
        await close(conn)


async def test_a_head_that_never_ends_is_cut_at_the_read_timeout(relay_data: RelayData) -> None:
    async with running(relay_data, ingress=IngressOptions(read_timeout_s=0.5)) as relay:
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[1].removeprefix(relay.url)
        assert relay.bound is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.bound[1])
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())

        async def trickle() -> None:  # an invalid token, a byte at a time, never finished
            for byte in b"Authorization: Bearer wpr_" + b"x" * 10_000:
                writer.write(bytes([byte]))
                await asyncio.sleep(0.02)

        sending = asyncio.create_task(trickle())
        try:
            async with asyncio.timeout(30):  # "did not hang": the relay closes it
                with contextlib.suppress(ConnectionError):
                    assert await reader.read() == b""
        finally:
            sending.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await sending
            writer.close()


async def test_a_connection_that_sends_nothing_is_closed_at_the_read_timeout(
    relay_data: RelayData,
) -> None:
    async with running(relay_data, ingress=IngressOptions(read_timeout_s=0.5)) as relay:
        assert relay.bound is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.bound[1])
        try:
            async with asyncio.timeout(30):  # "did not hang"
                with contextlib.suppress(ConnectionError):
                    assert await reader.read() == b""
        finally:
            writer.close()


async def test_oversized_heads_get_a_400_and_nothing_else(relay_data: RelayData) -> None:
    async with running(relay_data) as relay:
        issued = add_channel(relay, "team")
        path = urls(relay, issued)[1].removeprefix(relay.url)
        token = f"Authorization: Bearer {issued.token}\r\n".encode()
        long_line = b"X-Pad: " + b"a" * (17 * 1024) + b"\r\n"
        many = b"".join(b"X-%d: 1\r\n" % i for i in range(200))
        for head in (long_line + token, many + token):
            status, _, conn = await raw_get(relay, path, head)
            await close(conn)
            assert status == 400
        status, _, conn = await raw_get(relay, path + "?after=" + "0" * 17 * 1024, token)
        await close(conn)
        assert status == 400  # a request line past 16 KiB


async def test_a_stalled_subscriber_that_hangs_up_leaves_no_error_behind(
    relay_data: RelayData,
) -> None:
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    big = b'{"pad":"' + b"x" * (64 * 1024) + b'"}'
    async with running(relay_data, heartbeat_s=600) as relay:
        issued = add_channel(relay, "team")
        ingress, sub_url = urls(relay, issued)
        async with aiohttp.ClientSession() as http:
            for _ in range(40):
                body, headers = signed(body=big)
                async with http.post(ingress, data=body, headers=headers) as r:
                    assert r.status == 200
        assert relay.bound is not None and relay.fanouts is not None
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", relay.bound[1]))
        path = sub_url.removeprefix(relay.url)
        head = f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {issued.token}\r\n\r\n"
        await loop.sock_sendall(sock, head.encode())
        await until(lambda: relay.fanouts is not None and relay.fanouts.stalled == 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset while the relay waits for it to read
        await until(lambda: relay.fanouts is not None and relay.fanouts.subscribers == 0)
        assert relay.fanouts.stalled == 0
        gc.collect()
        await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert errors == []


async def test_stopping_the_relay_ends_streams_stalled_on_a_peer_that_reads_nothing(
    relay_data: RelayData,
) -> None:
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    big = b'{"pad":"' + b"x" * (64 * 1024) + b'"}'
    relay = relay_data.server(heartbeat_s=600)
    await relay.start()
    stopped = False
    socks = []
    try:
        issued = add_channel(relay, "team")
        ingress, sub_url = urls(relay, issued)
        async with aiohttp.ClientSession() as http:
            for _ in range(40):
                body, headers = signed(body=big)
                async with http.post(ingress, data=body, headers=headers) as r:
                    assert r.status == 200
        assert relay.bound is not None and relay.fanouts is not None
        path = sub_url.removeprefix(relay.url)
        head = f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {issued.token}\r\n\r\n"
        for _ in range(3):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.setblocking(False)
            await loop.sock_connect(sock, ("127.0.0.1", relay.bound[1]))
            await loop.sock_sendall(sock, head.encode())
            socks.append(sock)
        fanouts = relay.fanouts
        await until(lambda: fanouts.stalled == 3)
        async with asyncio.timeout(30):  # "did not hang"
            await relay.stop()
        stopped = True
        assert fanouts.subscribers == 0 and fanouts.stalled == 0
    finally:
        if not stopped:
            await relay.stop()
        for sock in socks:
            sock.close()
        loop.set_exception_handler(None)
    gc.collect()
    assert errors == []
