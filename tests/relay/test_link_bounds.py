"""What the link holds while the store is slow is bounded by count and by bytes, so a relay that
sends large deliveries fast cannot grow the laptop's memory past that."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from fake_relay import SSE_HEAD, Connection, FakeRelay, connected, delivery
from link_helpers import laptop, link_for, signed_at, stored_until

from walletpass_tui.relay.link.feed import MAX_IN_FLIGHT_BYTES

MIB = 1024 * 1024
COUNT = 48


def large(cursor: int) -> bytes:
    """A genuine delivery of almost 1 MiB (the default max_body)."""
    now = datetime.now(UTC)
    body, headers = signed_at(now)
    body = body[:-1] + b', "pad": "' + b"p" * (MIB - 200) + b'"}'
    body, headers = _resigned(body, headers, now)
    return delivery(cursor, body=body, headers=headers, received_at_ms=int(now.timestamp() * 1000))


def _resigned(
    body: bytes, headers: tuple[tuple[str, str], ...], when: datetime
) -> tuple[bytes, tuple[tuple[str, str], ...]]:
    from relay_helpers import SECRET
    from standardwebhooks import Webhook

    msg_id = dict(headers)["webhook-id"]
    signature = Webhook(SECRET).sign(msg_id, when, body.decode())
    return body, tuple((k, signature if k == "webhook-signature" else v) for k, v in headers)


async def settled(value: Callable[[], int]) -> int:
    """``value()`` once it is above 0 and has not changed for half a second."""
    last, same = -1, 0
    async with asyncio.timeout(60):
        while same < 5:
            await asyncio.sleep(0.1)
            now = value()
            same = same + 1 if now == last and now > 0 else 0
            last = now
    return last


async def test_large_deliveries_wait_for_a_slow_store_within_the_in_flight_bytes(
    tmp_path: Path,
) -> None:
    events = [large(cursor) for cursor in range(1, COUNT + 1)]
    go = asyncio.Event()

    async def stream(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(COUNT))
        await go.wait()  # once the store is held
        for one in events:  # as fast as the laptop reads (the relay's buffer stays small)
            await conn.write(one)
        await conn.hold()

    async with FakeRelay(stream) as relay:
        link = link_for(relay.url, "wpr_token")
        held = asyncio.Event()
        link.subscribe(lambda state: held.set() if link._in_flight_bytes else None)
        async with laptop(tmp_path / "laptop", link) as runtime:
            await runtime.serve()
            await relay.wait_connections(1)
            tracemalloc.start()
            try:
                async with runtime.store.hold_writes():  # a disk that does not answer
                    go.set()
                    waiting = await settled(lambda: link._in_flight_bytes)
                    peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            stored = await stored_until(runtime, COUNT)
    assert MAX_IN_FLIGHT_BYTES <= waiting <= MAX_IN_FLIGHT_BYTES + MIB, waiting / MIB
    # What is held, the parser's share and the socket's buffers: never the 48 MiB sent.
    assert peak < 40 * MIB, f"peak {peak / MIB:.1f} MiB"
    assert all(a.verified for a in stored) and len(stored) == COUNT
