"""``relay follow`` against a hostile relay: an unreadable event is skipped with a reason and its
cursor saved (the ones after it are handed over), and a refused cursor is never saved."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fake_relay import SSE_HEAD, Connection, FakeRelay, connected, delivery, event, heartbeat
from relay_helpers import stop_task

from walletpass_tui.relay.link.follow import Handed, RelayFollower, Skipped


async def test_follow_skips_what_cannot_be_read_and_never_saves_a_refused_cursor(
    tmp_path: Path, start_server: Any
) -> None:
    target = await start_server()
    target.answer("POST", "/webhooks", status=200)

    async def stream(conn: Connection) -> None:
        if conn.last_event_id == "0":
            await conn.write(
                SSE_HEAD
                + connected(10)
                + delivery(1)
                + event(2, b"{not json")
                + delivery(3)
                + delivery(4611686018427387904)  # far past the head: refused, not handed over
            )
        else:
            await conn.write(SSE_HEAD + connected(10) + delivery(4) + heartbeat(10))
        await conn.hold()

    handed: list[Handed] = []
    skipped: list[Skipped] = []
    enough = asyncio.Event()

    def on_handed(h: Handed) -> None:
        handed.append(h)
        if len(handed) == 3:
            enough.set()

    cursor_file = tmp_path / "home" / "relay-cursors" / "x.cursor"
    async with FakeRelay(stream) as relay:
        follower = RelayFollower(
            relay.url,
            "wpr_token",
            f"{target.url}/webhooks",
            cursor_file,
            on_handed=on_handed,
            on_skipped=skipped.append,
            backoff_initial_s=0.05,
        )
        task = asyncio.create_task(follower.run())
        try:
            async with asyncio.timeout(60):
                await enough.wait()
        finally:
            await stop_task(task)
    assert [h.delivery.cursor for h in handed] == [1, 3, 4]
    assert [s.cursor for s in skipped] == [2]
    assert skipped[0].why.startswith("its data is not JSON")
    assert [c.last_event_id for c in relay.connections] == ["0", "3"]
    assert cursor_file.read_text() == "4\n"
    assert len(target.requests_to("POST", "/webhooks")) == 3
