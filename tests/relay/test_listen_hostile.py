"""``listen --relay`` as a real process against a hostile relay: a line past every bound drops the
connection with one line saying why, and listen keeps running, its local receiver with it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp
import pytest
from fake_relay import SSE_HEAD, Connection, FakeRelay, connected, heartbeat
from laptop_process import Laptop
from relay_helpers import signed

pytestmark = pytest.mark.slow


async def stderr_until(laptop: Laptop, pattern: str, seen: list[str], timeout: float = 60) -> str:
    """Read listen's stderr (its info lines with --json) until a line matches ``pattern``."""
    assert laptop.proc is not None and laptop.proc.stderr is not None
    async with asyncio.timeout(timeout):
        while True:
            raw = await laptop.proc.stderr.readline()
            if not raw:
                raise AssertionError(f"listen ended: {seen}")
            line = raw.decode().rstrip("\n")
            seen.append(line)
            if re.search(pattern, line):
                return line


async def test_a_line_past_the_bound_drops_the_relay_not_listen_nor_its_receiver(
    tmp_path: Path,
) -> None:
    async def stream(conn: Connection) -> None:
        await conn.write(SSE_HEAD + connected(0))
        if conn.last_event_id == "0" and len(relay.connections) == 1:
            # Past any bound: the event bound (~2.3 MiB) and the 8 MiB line bound there was.
            await conn.write(b"data: " + b"x" * (9 * 1024 * 1024) + b"\n")
        while True:
            await conn.write(heartbeat(0))
            await asyncio.sleep(0.2)

    async with FakeRelay(stream) as relay:
        laptop = Laptop(tmp_path / "laptop", relay.url, "wpr_" + "t" * 43)
        await laptop.start()
        seen: list[str] = []
        try:
            listening = await stderr_until(laptop, r"^Listening on ", seen)
            url = listening.split()[2]
            why = await stderr_until(laptop, r"relay disconnected", seen)
            await stderr_until(laptop, r"relay connected", seen)  # it came back
            assert laptop.proc is not None and laptop.proc.returncode is None
            body, headers = signed()
            async with (
                aiohttp.ClientSession() as session,
                session.post(url, data=body, headers=headers) as answer,
            ):
                assert answer.status == 200, await answer.text()
            await laptop.read(1)  # stored and printed
        finally:
            code = await laptop.stop()
    assert code == 0
    assert re.fullmatch(
        r"relay disconnected \(the relay sent an event of more than 2,446,680 bytes\); "
        r"next try in \d+(\.\d)? s",
        why,
    )
    assert [line for line in seen if "more than" in line] == [why]
    assert laptop.attempts[0]["webhook_id"] == headers["webhook-id"]
    assert len(relay.connections) >= 2
