"""``relay follow``: relayed deliveries reach a real ``listen`` process as direct POSTs would."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from relay_helpers import OTHER_SECRET, ROOT, SECRET, add_channel, signed, stop_task, urls

from walletpass_tui.relay.link.follow import Handed, RelayFollower, cursor_path, load_cursor
from walletpass_tui.relay.server.serve import RelayServer

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, WALLETPASS_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def laptop(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """``walletpass-tui listen --secret`` as a process with its own home: (home, receiver URL)."""
    home = tmp_path / "laptop-home"
    port = free_port()
    env = dict(os.environ, WALLETPASS_HOME=str(home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port), "--secret", SECRET],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(400):
        try:
            with socket.create_connection(("127.0.0.1", port), 0.1):
                break
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(
                    proc.stderr.read() if proc.stderr else "listen exited"
                ) from None
            time.sleep(0.05)
    yield home, f"http://127.0.0.1:{port}/webhooks"
    proc.terminate()
    proc.wait(timeout=30)


async def test_relayed_deliveries_are_verified_stored_and_resumed_by_the_laptop(
    relay: RelayServer, laptop: tuple[Path, str], tmp_path: Path
) -> None:
    home, target = laptop
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    cursor_file = cursor_path(home, sub_url)

    async def post(count: int, secret: str = SECRET) -> list[str]:
        ids = []
        async with aiohttp.ClientSession() as session:
            for _ in range(count):
                body, headers = signed(secret)
                async with session.post(ingress, data=body, headers=headers) as r:
                    assert r.status == 200
                ids.append(headers["webhook-id"])
        return ids

    async def follow_until(count: int) -> list[Handed]:
        handed: list[Handed] = []
        enough = asyncio.Event()

        def on_handed(h: Handed) -> None:
            handed.append(h)
            if len(handed) >= count:
                enough.set()

        follower = RelayFollower(
            sub_url, issued.token, target, cursor_file, on_handed=on_handed, backoff_initial_s=0.05
        )
        task = asyncio.create_task(follower.run())
        try:
            await asyncio.wait_for(enough.wait(), 60)
            await asyncio.sleep(0.3)  # heartbeats pass: nothing more is handed over
        finally:
            await stop_task(task)
        return handed

    genuine = await post(3)
    forged = await post(1, OTHER_SECRET)  # no edge secret: the laptop is the one to refuse it
    first = await follow_until(4)
    assert [h.status for h in first] == [200, 200, 200, 401]
    assert cursor_file.read_text().strip() == str(first[-1].delivery.cursor)
    assert oct(cursor_file.stat().st_mode & 0o777) == "0o600"

    later = await post(2)  # the laptop was away: it resumes after its cursor, nothing twice
    second = await follow_until(2)
    assert [h.delivery.webhook_id for h in second] == later

    listed = cli(home, "events", "list", "--json", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    messages = {m["webhook_id"]: m for m in json.loads(listed.stdout)}
    assert set(messages) == {*genuine, *later, *forged}
    assert all(messages[i]["verdict"] == "verified" for i in genuine + later)
    assert messages[forged[0]]["verdict"] == "rejected"
    assert all(m["attempts"] == 1 for m in messages.values())  # each stored once

    shown = cli(home, "events", "show", later[0], "--json")
    attempt = json.loads(shown.stdout)["attempts"][0]
    assert attempt["forwarded_for"] == "127.0.0.1"  # the client the relay saw


async def test_follow_stops_on_a_wrong_token_with_exit_1_and_one_line(
    relay: RelayServer, tmp_path: Path
) -> None:
    issued = add_channel(relay, "team")
    _, sub_url = urls(relay, issued)
    env = dict(os.environ, WALLETPASS_HOME=str(tmp_path / "home"), WALLETPASS_RELAY_TOKEN="wpr_x")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "walletpass_tui",
        "relay",
        "follow",
        sub_url,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1
    assert err.decode().count("\n") == 1 and "401" in err.decode()
    assert "wpr_x" not in out.decode() + err.decode()
    assert "retrying" not in out.decode()  # refused for good: no line promises another try


async def test_follow_says_each_time_the_receiver_does_not_take_a_delivery_then_hands_it_over(
    relay: RelayServer, tmp_path: Path
) -> None:
    """A receiver that refuses connections: each try says so (why, and when the next one is),
    and once it runs the delivery is handed over, nothing skipped."""
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    body, headers = signed(SECRET)
    async with (
        aiohttp.ClientSession() as session,
        session.post(ingress, data=body, headers=headers) as r,
    ):
        assert r.status == 200
    port = free_port()  # nothing listens there yet
    env = dict(
        os.environ, WALLETPASS_HOME=str(tmp_path / "home"), WALLETPASS_RELAY_TOKEN=issued.token
    )
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "walletpass_tui", "relay", "follow", sub_url),
        *("--to", f"http://127.0.0.1:{port}/hook"),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    got: list[bytes] = []

    async def hook(request: web.Request) -> web.Response:
        got.append(await request.read())
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    lines: list[str] = []
    try:
        async with asyncio.timeout(60):
            while len([line for line in lines if "not taken" in line]) < 2:
                lines.append((await proc.stdout.readline()).decode())
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            while not lines[-1].endswith("-> 200\n"):
                lines.append((await proc.stdout.readline()).decode())
    finally:
        proc.terminate()
        await proc.wait()
        await runner.cleanup()
    refused = [line for line in lines if "not taken" in line]
    webhook_id = headers["webhook-id"]
    assert refused[0].split()[1] == webhook_id
    assert re.search(
        rf"not taken \(nothing answers at 127\.0\.0\.1:{port} \(connection refused\): is it "
        r"running\?\); try 2 in \d+\.\d s",
        refused[0],
    ), refused[0]
    assert "try 3 in" in refused[1]
    assert lines[-1].split()[1:] == [webhook_id, "->", "200"]
    assert got == [body]  # handed over once it ran, exactly as the relay received it


def test_follow_without_a_token_says_where_to_put_it(tmp_path: Path) -> None:
    result = cli(tmp_path / "home", "relay", "follow", "http://127.0.0.1:9/channels/x/events")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "WALLETPASS_RELAY_TOKEN" in result.stderr


def test_follow_keeps_one_cursor_per_channel_however_its_url_is_spelt(tmp_path: Path) -> None:
    home = tmp_path / "home"
    url = "http://127.0.0.1:8080/channels/AbCd/events"
    older = home / "relay-cursors" / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.cursor"
    older.parent.mkdir(parents=True)
    older.write_text("7\n")  # saved under the URL's own name by an older version
    path = cursor_path(home, url)
    assert load_cursor(path) == 7  # taken over
    for spelling in (
        "http://localhost:8080/channels/AbCd/events",
        "http://127.0.0.1:8080/channels/AbCd/events/",
        "https://relay.example.com/team/channels/AbCd/events?x=1",
    ):
        assert cursor_path(home, spelling) == path
    assert cursor_path(home, url.replace("AbCd", "Other")) != path
