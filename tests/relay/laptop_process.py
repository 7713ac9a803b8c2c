"""``walletpass-tui listen --json --relay URL`` as a real process with its own home, and posts
signed by the standardwebhooks package: the laptop side of the relay's process tests."""

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
from relay_helpers import ROOT, SECRET, signed
from standardwebhooks import Webhook


class Laptop:
    """``walletpass-tui listen --json --relay URL`` with its own WALLETPASS_HOME."""

    def __init__(self, home: Path, relay_url: str, token: str, *extra: str) -> None:
        """``extra``: more arguments to listen (``--forward-to URL``)."""
        self.home = home
        self.relay_url = relay_url
        self.token = token
        self.extra = extra
        self.proc: asyncio.subprocess.Process | None = None
        self.attempts: list[dict[str, Any]] = []
        self.forwards: list[dict[str, Any]] = []

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
            *("--secret", SECRET, "--relay", self.relay_url, *self.extra),
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async def read(self, count: int, timeout: float = 60, *, forwards: int = 0) -> None:
        """Read stdout until ``count`` attempts (and ``forwards`` forward answers, each printed
        once it is stored) were printed since start."""
        assert self.proc is not None and self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            while len(self.attempts) < count or len(self.forwards) < forwards:
                line = await self.proc.stdout.readline()
                if not line:
                    raise AssertionError("listen ended before printing every attempt")
                printed = json.loads(line)
                if "forward" in printed:  # a forward's answer, printed between attempts
                    self.forwards.append(printed["forward"])
                else:
                    self.attempts.append(printed)

    async def kill(self) -> None:
        """SIGKILL: the process writes nothing more."""
        assert self.proc is not None
        self.proc.kill()
        async with asyncio.timeout(30):
            await self.proc.wait()

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


async def post_one(url: str, msg_id: str) -> str:
    async with aiohttp.ClientSession() as session:
        body, headers = signed(msg_id=msg_id)
        async with session.post(url, data=body, headers=headers) as r:
            assert r.status == 200, await r.text()
    return msg_id
