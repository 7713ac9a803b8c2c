"""``listen --relay`` as real processes on 127.0.0.1: a relay process, laptops with their own
homes. Every delivery reaches every laptop, verified with the real secret; a laptop stopped while
50 arrive stores all 50 after it restarts, in order, each once; a refused token ends listen with
one line and exit 1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from laptop_process import Laptop, check_signatures, post_all
from relay_helpers import RelayProcess, add_channel

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url

pytestmark = pytest.mark.slow


async def test_two_laptops_with_their_own_homes_each_store_every_delivery(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process, "team")
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
    issued = add_channel(relay_process, "team")
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


async def test_the_same_channel_under_another_url_is_not_stored_or_forwarded_again(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    """localhost for 127.0.0.1, a trailing slash, the other instance on the same database: the
    laptop resumes where it was and the app behind --forward-to gets each delivery once."""
    issued = add_channel(relay_process, "team")
    relay_process.start()
    other = RelayProcess(relay_process.home, relay_process.database)  # same data, another port
    other.start()
    got: list[str] = []
    ids: list[str] = []
    all_in = asyncio.Event()

    async def hook(request: web.Request) -> web.Response:
        await request.read()
        got.append(request.headers["webhook-id"])
        if set(ids) <= set(got):
            all_in.set()
        return web.Response()

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    target = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
    slug = issued.channel.slug
    spellings = [
        subscribe_url(relay_process.url, slug),
        subscribe_url(relay_process.url.replace("127.0.0.1", "localhost"), slug),
        subscribe_url(other.url, slug) + "/",
    ]
    home = tmp_path / "laptop"
    try:
        for url in spellings:
            all_in.clear()
            ids += await post_all(ingress_url(relay_process.url, slug), 2)
            laptop = Laptop(home, url, issued.token, "--forward-to", target)
            await laptop.start()
            try:
                # the two new ones, nothing before them again; both forwarded, and their
                # answers stored, before the laptop stops (a forward cut off by the stop is
                # sent again, as it should be)
                await laptop.read(2, forwards=2)
                async with asyncio.timeout(60):
                    await all_in.wait()
            finally:
                assert await laptop.stop() == 0
            assert [a["webhook_id"] for a in laptop.attempts] == ids[-2:]
        rows = laptop.stored()
    finally:
        other.terminate()
        await runner.cleanup()
    assert [r[0] for r in rows] == ids  # each stored once, in order
    assert [r[1] for r in rows] == list(range(1, 7))
    assert sorted(got) == sorted(ids)  # each forwarded once


async def test_a_refused_token_ends_listen_with_one_line_and_exit_1(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process, "team")
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
    assert not any("retrying" in line for line in lines), lines  # refused for good: no next try
    assert "0" * 43 not in err.decode() + out.decode()  # the token is never printed
