"""Nothing acknowledged is lost: ``listen`` is killed (SIGKILL) mid-stream under load, and every
webhook-id that got a 2xx must be in the database afterwards."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from walletpass_tui.webhooks.models import LogFilter
from walletpass_tui.webhooks.store import Store

SECRET = "whsec_" + base64.b64encode(b"d" * 32).decode()
CLIENTS = 8
KILL_AFTER_ACKS = 300  # killed mid-stream once this many were acknowledged, however slow


def signed(msg_id: str, body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    key = base64.b64decode(SECRET.split("_", 1)[1])
    digest = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
        "content-type": "application/json",
    }


def start_listen(home: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port), "--secret", SECRET],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, "listen exited early"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return proc, port
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("listen did not start")


@pytest.mark.slow
async def test_every_acknowledged_delivery_survives_sigkill(tmp_path: Path) -> None:
    proc, port = start_listen(tmp_path)
    url = f"http://127.0.0.1:{port}/webhooks"
    acked: set[str] = set()
    failed_answers: list[int] = []
    sent = 0

    async def client(n: int) -> None:
        nonlocal sent
        async with httpx.AsyncClient(timeout=5) as http:
            i = 0
            while True:
                msg_id = f"msg_{n}_{i:05d}"
                body = b'{"type": "pass.activated", "data": {"passId": "pass_%d_%d"}}' % (n, i)
                i += 1
                sent += 1
                try:
                    answer = await http.post(url, content=body, headers=signed(msg_id, body))
                except httpx.TransportError:
                    return  # the receiver is gone
                if 200 <= answer.status_code < 300:
                    acked.add(msg_id)
                    if len(acked) >= KILL_AFTER_ACKS:
                        enough.set()
                else:
                    failed_answers.append(answer.status_code)

    enough = asyncio.Event()

    async def killer() -> None:
        # Counted, not timed: a loaded machine only takes longer to get there.
        await enough.wait()
        proc.send_signal(signal.SIGKILL)  # no chance to flush anything

    try:
        await asyncio.wait_for(
            asyncio.gather(killer(), *(client(n) for n in range(CLIENTS))), timeout=120
        )
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert failed_answers == []
    assert len(acked) >= KILL_AFTER_ACKS
    assert sent > len(acked)  # some requests were in flight when it died

    db_path = tmp_path / "deliveries.sqlite3"
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        stored = {row[0] for row in db.execute("SELECT webhook_id FROM attempts")}
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    missing = acked - stored
    assert not missing, f"{len(missing)} acknowledged deliveries lost, e.g. {sorted(missing)[:5]}"

    # The history opens again after the crash, and search catches up with what it missed.
    async with await Store.open(db_path) as store:
        assert await store.count() == len(stored)
        some = sorted(acked)[-1]
        assert await store.count(LogFilter(text=some)) == 1
