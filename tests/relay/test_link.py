"""The laptop side in one event loop: a relay on 127.0.0.1 feeding a delivery runtime through a
RelayLink. Every delivery is verified locally, stored with its cursor, resumed after a restart
without loss or repeat; a refused token stops the link with a reason."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import pytest
from link_helpers import laptop, link_for, stored_until
from relay_helpers import add_channel, post_all, signed, urls

from walletpass_tui.relay.link.failures import RelayAuthError, RelayClientError
from walletpass_tui.relay.link.state import LinkState, StateLines
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.webhooks.store import wal_sync


async def test_relayed_deliveries_are_verified_stored_and_tell_where_they_came_from(
    relay: RelayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    link = link_for(sub_url, issued.token)
    states: list[LinkState] = []
    link.subscribe(states.append)
    async with laptop(tmp_path / "laptop", link) as runtime:
        await runtime.serve()
        ids = await post_all(http, ingress, 5)
        stored = await stored_until(runtime, 5)
    assert [a.webhook_id for a in stored] == ids
    assert all(a.verified for a in stored)
    assert [a.relay_cursor for a in stored] == [1, 2, 3, 4, 5]
    assert {a.relay_url for a in stored} == {sub_url}
    assert {a.remote_addr for a in stored} == {"127.0.0.1"}  # who posted to the relay
    assert any(s.connected for s in states)
    assert states[-1].cursor == 5 and states[-1].behind == 0


async def test_a_restart_resumes_after_the_last_stored_delivery_in_order_each_once(
    relay: RelayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    home = tmp_path / "laptop"
    async with laptop(home, link_for(sub_url, issued.token)) as runtime:
        await runtime.serve()
        first = await post_all(http, ingress, 3)
        await stored_until(runtime, 3)
    missed = await post_all(http, ingress, 50)  # the laptop sleeps
    link = link_for(sub_url, issued.token)
    behind: list[int] = []
    link.subscribe(lambda s: behind.append(s.behind) if s.connected else None)
    async with laptop(home, link) as runtime:
        await runtime.serve()
        stored = await stored_until(runtime, 53)
        await asyncio.sleep(0.3)  # a repeat would have arrived by now
        stored = await stored_until(runtime, 53)
    assert [a.webhook_id for a in stored] == first + missed
    assert [a.relay_cursor for a in stored] == list(range(1, 54))
    assert all(a.verified and a.attempt_no == 1 for a in stored)
    assert max(behind) == 50  # the header could say how far behind it started


async def test_after_a_mark_that_trailed_the_rows_stored_above_it_are_skipped_not_written(
    relay: RelayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    """A process that died before writing its low-water mark: the restart fetches from the mark
    again, and the deliveries stored since are skipped (no second attempt, no failed write)."""
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    home = tmp_path / "laptop"
    async with laptop(home, link_for(sub_url, issued.token)) as runtime:
        await runtime.serve()
        first = await post_all(http, ingress, 10)
        await stored_until(runtime, 10)
    history = sqlite3.connect(home / "deliveries.sqlite3")
    with history:
        assert history.execute("SELECT low_water FROM relay_marks").fetchall() == [(10,)]
        history.execute("UPDATE relay_marks SET low_water = 2")  # as if it had not been written
    link = link_for(sub_url, issued.token)
    async with laptop(home, link) as runtime:
        problems: list[str | None] = []
        runtime.store.on_health(problems.append)
        commits = runtime.store.commits
        await runtime.serve()
        later = await post_all(http, ingress, 1)
        stored = await stored_until(runtime, 11)
        assert runtime.store.commits == commits + 1  # only the new delivery was written
        assert link.state.cursor == 11
    assert problems == []  # no write refused as a second copy
    assert [a.webhook_id for a in stored] == first + later
    assert [a.relay_cursor for a in stored] == list(range(1, 12))
    assert all(a.attempt_no == 1 for a in stored)
    with history:
        assert history.execute("SELECT low_water FROM relay_marks").fetchall() == [(11,)]
    history.close()


async def test_relayed_batches_skip_the_fsync_and_a_direct_post_still_gets_one(
    relay: RelayServer,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The relay keeps every delivery on disk, so a relayed delivery's commit asks for no fsync of
    the laptop's log; a POST to the local receiver is answered only after one."""
    fsyncs: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        fsyncs.append(fd)
        real(fd)

    monkeypatch.setattr(wal_sync.os, "fsync", counted)
    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    async with laptop(tmp_path / "laptop", link_for(sub_url, issued.token)) as runtime:
        await runtime.serve()
        await post_all(http, ingress, 1)
        await stored_until(runtime, 1)
        assert fsyncs == []
        body, headers = signed()
        assert runtime.url is not None
        async with http.post(runtime.url, data=body, headers=headers) as r:
            assert r.status == 200
            assert len(fsyncs) == 1  # answered after the fsync of its commit


async def test_a_refused_token_stops_the_link_with_what_to_do(
    relay: RelayServer, tmp_path: Path
) -> None:
    issued = add_channel(relay, "team")
    _, sub_url = urls(relay, issued)
    link = link_for(sub_url, "wpr_not-the-token-at-all-0000000000")
    async with laptop(tmp_path / "laptop", link) as runtime:
        await runtime.serve()
        async with asyncio.timeout(30):
            why = await runtime.feed_stopped()
        assert runtime.serving  # the local receiver keeps listening
    assert isinstance(why, RelayAuthError)
    assert "401" in str(why) and "--relay-token" in str(why)
    assert link.state.stopped and link.state.describe().startswith("relay stopped:")
    assert "wpr_not" not in repr(link)


async def test_one_process_per_home_follows_a_relay(relay: RelayServer, tmp_path: Path) -> None:
    issued = add_channel(relay, "team")
    _, sub_url = urls(relay, issued)
    home = tmp_path / "laptop"
    first = link_for(sub_url, issued.token)
    async with laptop(home, first) as runtime:
        await runtime.serve()
        second = link_for(sub_url, issued.token)
        other = laptop(home, second)
        async with other:
            await other.serve()
            async with asyncio.timeout(30):
                why = await other.feed_stopped()
    assert isinstance(why, RelayClientError)
    assert "already follows" in str(why)


def lines(states: Sequence[LinkState]) -> list[str]:
    printer = StateLines()
    return [line for state in states if (line := printer(state))]


def test_listen_prints_a_line_per_change_of_connection_not_per_delivery() -> None:
    url = "https://relay.example.com/channels/x/events"

    def at(cursor: int, head: int, **kw: object) -> LinkState:
        return LinkState(url, cursor=cursor, head=head, started=True, **kw)  # type: ignore[arg-type]

    lost = "the connection to the relay was lost (reset)"
    steps = [
        LinkState(url),
        at(0, 0),  # connecting
        at(0, 3, connected=True, pending=3),  # the relay said three wait
        at(1, 3, connected=True, pending=2),
        at(3, 3, connected=True, pending=0),  # caught up
        at(3, 4, connected=True, pending=0),  # a live delivery: no line
        at(4, 4, connected=True, pending=0),
        at(4, 4, error=lost, retry_in=0.52),
        at(4, 4, error=lost, retry_in=1.1),  # the same failure again: no line
        at(4, 9, connected=True),  # a relay that does not say how many wait
        at(9, 9, connected=True),
        at(9, 9, error="nothing answers at relay.example.com:443 (refused)", retry_in=17.3),
        at(9, 9, error="The relay refused the token (401)", stopped=True),
    ]
    assert lines(steps) == [
        "relay connected, catching up on 3 deliveries (after cursor 0)",
        "relay caught up on 3 deliveries (cursor 3)",
        f"relay disconnected ({lost}); next try in 0.5 s",
        "relay connected, catching up to cursor 9 (after cursor 4)",
        "relay caught up (cursor 9)",
        "relay disconnected (nothing answers at relay.example.com:443 (refused)); next try in 17 s",
        "relay stopped: The relay refused the token (401)",
    ]


async def test_the_detail_says_it_came_through_the_relay_and_from_where(
    relay: RelayServer,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from walletpass_tui.cli import main

    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    async with laptop(clean_env, link_for(sub_url, issued.token)) as runtime:
        await runtime.serve()
        (webhook_id,) = await post_all(http, ingress, 1)
        await stored_until(runtime, 1)
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["events", "show", webhook_id]) == 0
    shown = capsys.readouterr().out
    assert f"via:      the relay {sub_url} (delivery 1)" in shown
    assert "from: 127.0.0.1" in shown
    assert await asyncio.to_thread(main, ["events", "show", webhook_id, "--json"]) == 0
    text = capsys.readouterr().out
    assert f'"relay_url": "{sub_url}"' in text and '"relay_cursor": 1' in text


async def test_the_dashboard_header_follows_the_relay_and_says_when_it_stops(
    relay: RelayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    from walletpass_tui.ui.app import build_app
    from walletpass_tui.ui.widgets.status_bar import StatusBar

    issued = add_channel(relay, "team")
    ingress, sub_url = urls(relay, issued)
    async with laptop(tmp_path / "laptop", link_for(sub_url, issued.token)) as runtime:
        app = build_app(runtime, None)
        async with app.run_test(size=(160, 30)) as pilot:
            await post_all(http, ingress, 2)
            await stored_until(runtime, 2)
            async with asyncio.timeout(30):
                while "⇄ relay up to date" not in app.screen.query_one(StatusBar).render().plain:
                    await pilot.pause(0.05)
    wrong = link_for(sub_url, "wpr_not-the-token-at-all-0000000000")
    async with laptop(tmp_path / "other", wrong) as runtime:
        app = build_app(runtime, None)
        async with app.run_test(size=(160, 30), notifications=True) as pilot:
            async with asyncio.timeout(30):
                await runtime.feed_stopped()
            await pilot.pause(0.1)
            header = app.screen.query_one(StatusBar).render().plain
            # The notification as drawn: a toast on the screen (Textual's Toast widget).
            notes = [toast.render().plain for toast in app.screen.query("Toast")]
    assert "⇄ relay stopped" in header and "● listening" in header
    assert any("401" in note and "--relay-token" in note for note in notes)
