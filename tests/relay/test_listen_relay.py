"""``listen --relay`` as real processes on 127.0.0.1: a relay process, laptops with their own
homes. Every delivery reaches every laptop, verified with the real secret; a laptop stopped while
50 arrive stores all 50 after it restarts, in order, each once; a refused token ends listen with
one line and exit 1."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from relay_helpers import ROOT, SECRET, RelayProcess, add_channel, signed
from standardwebhooks import Webhook

from walletpass_tui.relay.channels import ingress_url, subscribe_url

pytestmark = pytest.mark.slow


class Laptop:
    """``walletpass-tui listen --json --relay URL`` with its own WALLETPASS_HOME."""

    def __init__(self, home: Path, relay_url: str, token: str) -> None:
        self.home = home
        self.relay_url = relay_url
        self.token = token
        self.proc: asyncio.subprocess.Process | None = None
        self.attempts: list[dict[str, Any]] = []

    async def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
        env.update(
            WALLETPASS_HOME=str(self.home),
            WALLETPASS_RELAY_TOKEN=self.token,
            PYTHONUNBUFFERED="1",
            XDG_CONFIG_HOME=str(self.home / "xdg"),
        )
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "walletpass_tui", "listen", "--json", "--port", "0"),
            *("--secret", SECRET, "--relay", self.relay_url),
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async def read(self, count: int, timeout: float = 60) -> None:
        """Read attempts from stdout until ``count`` were printed since start."""
        assert self.proc is not None and self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            while len(self.attempts) < count:
                line = await self.proc.stdout.readline()
                if not line:
                    raise AssertionError("listen ended before printing every attempt")
                self.attempts.append(json.loads(line))

    async def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            return await self.proc.wait()

    def stored(self) -> list[tuple[str, int, str, str, bytes]]:
        """(webhook_id, relay_cursor, verdict, headers, body) of every stored attempt, in order."""
        db = sqlite3.connect(f"file:{self.home / 'deliveries.sqlite3'}?mode=ro", uri=True)
        try:
            return db.execute(
                "SELECT webhook_id, relay_cursor, verdict, headers, body FROM attempts ORDER BY id"
            ).fetchall()
        finally:
            db.close()


async def post_all(url: str, count: int) -> list[str]:
    ids = []
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            body, headers = signed()
            async with session.post(url, data=body, headers=headers) as r:
                assert r.status == 200, await r.text()
            ids.append(headers["webhook-id"])
    return ids


def check_signatures(rows: list[tuple[str, int, str, str, bytes]]) -> None:
    """Every stored delivery verifies with the standardwebhooks package and the real secret."""
    hook = Webhook(SECRET)
    for _, _, verdict, headers, body in rows:
        assert verdict == "verified"
        hook.verify(bytes(body), dict(json.loads(headers)))


async def test_two_laptops_with_their_own_homes_each_store_every_delivery(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process.home, "team")
    relay_process.start()
    sub_url = subscribe_url(relay_process.url, issued.channel.slug)
    alice = Laptop(tmp_path / "alice", sub_url, issued.token)
    bob = Laptop(tmp_path / "bob", sub_url, issued.token)
    await alice.start()
    await bob.start()
    try:
        ids = await post_all(ingress_url(relay_process.url, issued.channel.slug), 20)
        await asyncio.gather(alice.read(20), bob.read(20))
    finally:
        assert await alice.stop() == 0
        assert await bob.stop() == 0
    for laptop in (alice, bob):
        assert [a["webhook_id"] for a in laptop.attempts] == ids
        rows = laptop.stored()
        assert [r[0] for r in rows] == ids
        assert [r[1] for r in rows] == list(range(1, 21))
        check_signatures(rows)


async def test_a_stopped_laptop_stores_all_50_after_restart_in_order_each_once(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process.home, "team")
    relay_process.start()
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    laptop = Laptop(
        tmp_path / "laptop", subscribe_url(relay_process.url, issued.channel.slug), issued.token
    )
    await laptop.start()
    first = await post_all(ingress, 3)
    await laptop.read(3)
    assert await laptop.stop() == 0  # the lid closes
    missed = await post_all(ingress, 50)
    laptop.attempts.clear()
    await laptop.start()
    try:
        await laptop.read(50)
        later = await post_all(ingress, 1)  # and it goes on live after catching up
        await laptop.read(51)
    finally:
        assert await laptop.stop() == 0
    rows = laptop.stored()
    assert [r[0] for r in rows] == first + missed + later
    assert [r[1] for r in rows] == list(range(1, 55))
    check_signatures(rows)


async def test_a_refused_token_ends_listen_with_one_line_and_exit_1(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process.home, "team")
    relay_process.start()
    laptop = Laptop(
        tmp_path / "laptop",
        subscribe_url(relay_process.url, issued.channel.slug),
        "wpr_" + "0" * 43,
    )
    await laptop.start()
    assert laptop.proc is not None
    async with asyncio.timeout(60):
        out, err = await laptop.proc.communicate()
    assert laptop.proc.returncode == 1
    lines = err.decode().strip().splitlines()
    errors = [line for line in lines if "error" in line]
    assert len(errors) == 1, lines
    assert "401" in errors[0] and "--relay-token" in errors[0]
    assert "Traceback" not in err.decode()
    assert "0" * 43 not in err.decode() + out.decode()  # the token is never printed
