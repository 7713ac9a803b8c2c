"""A relay database restored from a backup: the channel's cursors go back, and the relay numbers
new deliveries with cursors a laptop has already passed. The laptop says so in one line, lets go
of those cursors (what it stored keeps its place in the history) and takes every new delivery:
nothing lost, nothing stored twice. Real relay and ``listen`` processes, on both back ends; the
restore is what restoring an older dump does to the rows."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from laptop_process import Laptop, check_signatures, post_all
from link_helpers import laptop, link_for, stored_until
from relay_helpers import ROOT, RelayData, RelayProcess, add_channel, query, urls
from relay_helpers import post_all as relay_post_all

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.serve import RelayServer

pytestmark = pytest.mark.slow


def restore_to(where: RelayProcess | RelayData, cursor: int) -> None:
    """What restoring a dump taken when the channel's head was ``cursor`` does to the rows."""
    query(where, f"DELETE FROM deliveries WHERE cursor > {cursor}")
    used = "(SELECT COALESCE(SUM(size), 0) FROM deliveries d WHERE d.channel_id = channels.id)"
    if where.database:
        query(where, f"UPDATE channels SET last_cursor = {cursor}, used_bytes = {used}")
    else:
        query(where, f"UPDATE sqlite_sequence SET seq = {cursor} WHERE name = 'deliveries'")
        query(where, f"UPDATE channels SET used_bytes = {used}")


async def said(laptop: Laptop, words: str) -> list[str]:
    """listen's relay lines (stderr with --json) until one holds ``words``."""
    assert laptop.proc is not None and laptop.proc.stderr is not None
    lines: list[str] = []
    async with asyncio.timeout(60):
        while not lines or words not in lines[-1]:
            line = await laptop.proc.stderr.readline()
            if not line:
                raise AssertionError(f"listen ended before saying {words!r}: {lines}")
            lines.append(line.decode())
    return lines


async def test_a_restore_under_a_running_relay_loses_nothing_on_a_connected_laptop(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    laptop = Laptop(
        tmp_path / "laptop", subscribe_url(relay_process.url, issued.channel.slug), issued.token
    )
    await laptop.start()
    try:
        before = await post_all(ingress, 4)
        await laptop.read(4)
        restore_to(relay_process, 2)  # the relay keeps running
        after = await post_all(ingress, 3)  # numbered 3, 4, 5 again
        lines = await said(laptop, "went back")
        await laptop.read(7)
    finally:
        assert await laptop.stop() == 0
    assert lines[-1].startswith("relay went back from cursor 4 to 2 (was its database restored")
    rows = laptop.stored()
    assert [r[0] for r in rows] == before + after  # each once, none lost
    assert [r[1] for r in rows] == [1, 2, 3, 4, 3, 4, 5]  # as the relay numbered them
    check_signatures(rows)


async def test_a_laptop_away_during_a_restore_says_so_and_takes_what_comes_after(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    """The relay restarted on the restored database; the laptop comes back to a head below its
    cursor, and what the relay numbers from there on is stored, also after a restart."""
    issued = add_channel(relay_process, "team")
    relay_process.start()
    port = relay_process.port
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    sub_url = subscribe_url(relay_process.url, issued.channel.slug)
    laptop = Laptop(tmp_path / "laptop", sub_url, issued.token)
    await laptop.start()
    before = await post_all(ingress, 4)
    await laptop.read(4)
    assert await laptop.stop() == 0
    relay_process.terminate()
    restore_to(relay_process, 1)
    relay_process.start(port)
    laptop.attempts.clear()
    await laptop.start()
    try:
        lines = await said(laptop, "went back")
        after = await post_all(ingress, 2)  # numbered 2 and 3 again
        await laptop.read(2)
    finally:
        assert await laptop.stop() == 0
    assert "relay went back from cursor 4 to 1" in lines[-1]
    laptop.attempts.clear()
    await laptop.start()  # the mark went back with the relay: nothing fetched twice
    try:
        later = await post_all(ingress, 2)  # 4 and 5, both again
        await laptop.read(2)
    finally:
        assert await laptop.stop() == 0
    rows = laptop.stored()
    assert [r[0] for r in rows] == before + after + later
    assert [r[1] for r in rows] == [1, 2, 3, 4, 2, 3, 4, 5]
    check_signatures(rows)


async def test_a_channel_whose_deliveries_were_all_pruned_keeps_its_head(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    """Old deliveries pruned are not a restore: the head a laptop is told stays where it was."""
    issued = add_channel(relay, "team")
    await relay_post_all(http, urls(relay, issued)[0], 3)
    assert await relay.storage.head(issued.channel.id) == 3
    await relay.storage.prune(-60_000)  # everything received before a minute from now
    assert query(relay, "SELECT COUNT(*) FROM deliveries") == [(0,)]
    assert await relay.storage.head(issued.channel.id) == 3


async def test_relay_follow_hands_over_what_a_restored_relay_numbers_again(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    got: list[str] = []

    async def hook(request: web.Request) -> web.Response:
        await request.read()
        got.append(request.headers["webhook-id"])
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    env = dict(
        os.environ, WALLETPASS_HOME=str(tmp_path / "home"), WALLETPASS_RELAY_TOKEN=issued.token
    )
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "walletpass_tui", "relay", "follow"),
        *(subscribe_url(relay_process.url, issued.channel.slug), "--to"),
        f"http://127.0.0.1:{port}/hook",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    lines: list[str] = []

    async def until(count: int) -> None:
        while len([line for line in lines if line.rstrip().endswith("-> 200")]) < count:
            lines.append((await proc.stdout.readline()).decode())  # type: ignore[union-attr]

    try:
        async with asyncio.timeout(60):
            before = await post_all(ingress, 3)
            await until(3)
            restore_to(relay_process, 1)
            after = await post_all(ingress, 2)
            await until(5)
    finally:
        proc.terminate()
        await proc.wait()
        await runner.cleanup()
    assert got == before + after
    assert any(line.startswith("relay: went back from cursor 3 to 1 (") for line in lines), lines


async def test_the_dashboard_says_the_relay_went_back_and_shows_every_new_delivery(
    relay: RelayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    from walletpass_tui.ui.app import build_app

    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    async with laptop(tmp_path / "laptop", link_for(sub_url, issued.token)) as runtime:
        app = build_app(runtime, None)
        async with app.run_test(size=(160, 30), notifications=True) as pilot:
            before = await relay_post_all(http, ingress, 3)
            await stored_until(runtime, 3)
            restore_to(RelayData(relay.options.home, relay.options.database), 1)
            after = await relay_post_all(http, ingress, 2)
            stored = await stored_until(runtime, 5)
            async with asyncio.timeout(30):
                while not (notes := [t.render().plain for t in app.screen.query("Toast")]):
                    await pilot.pause(0.05)
    assert [a.webhook_id for a in stored] == before + after
    assert any("relay went back from cursor 3 to 1" in note for note in notes), notes
