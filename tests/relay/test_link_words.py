"""What the relay link says: how many deliveries it is catching up on (never "up to date" before
the backlog is known), why the relay cannot be reached in this project's words, and when it
tries again."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp
import pytest
from link_helpers import laptop, link_for, stored_until
from peers import (  # noqa: F401  (the "certificate", "local_resolver" and "peers" fixtures)
    Certificate,
    Peers,
    Resolver,
    certificate_fixture,
    closed_port_url,
    local_resolver_fixture,
    peers_fixture,
)
from relay_helpers import add_channel, post_all, stop_task, urls

from walletpass_tui.relay.link import feed
from walletpass_tui.relay.link.state import LinkState, StateLines
from walletpass_tui.relay.link.subscriber import RelaySubscriber, SubscriberState
from walletpass_tui.relay.server.serve import RelayServer


async def test_the_link_says_how_many_it_is_catching_up_on_then_that_it_caught_up(
    relay: RelayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    team = add_channel(relay, "team")
    other = add_channel(relay, "other")
    # Interleaved with another channel's: on SQLite the team's cursors then skip numbers, so
    # the count comes from the relay, not from the cursors' distance.
    for _ in range(3):
        await post_all(http, urls(relay, other)[0], 1)
        await post_all(http, urls(relay, team)[0], 1)
    states: list[LinkState] = []
    link = link_for(urls(relay, team)[1], team.token)
    link.subscribe(states.append)
    async with laptop(tmp_path / "laptop", link) as runtime:
        await runtime.serve()
        stored = await stored_until(runtime, 3)
        async with asyncio.timeout(30):  # the state follows the last commit
            while True:
                if link.state.cursor == stored[-1].relay_cursor:
                    break
                await asyncio.sleep(0.02)
    last = stored[-1].relay_cursor
    printer = StateLines()
    assert [line for s in states if (line := printer(s))] == [
        "relay connected, catching up on 3 deliveries (after cursor 0)",
        f"relay caught up on 3 deliveries (cursor {last})",
    ]
    assert [s.headline for s in states if s.connected][:1] == ["relay 3 behind"]
    assert not any(s.connected and s.behind == 0 and s.cursor == 0 for s in states)


async def states_until_it_fails(url: str, **kw: object) -> SubscriberState:
    """The subscriber's state once its first connection failed (the link then waits)."""
    failed = asyncio.Event()
    seen: list[SubscriberState] = []

    def on_state(state: SubscriberState) -> None:
        seen.append(state)
        if state.error:
            failed.set()

    async def on_delivery(_: object) -> None:
        raise AssertionError("nothing is delivered here")

    subscriber = RelaySubscriber(
        url,
        "wpr_token",
        on_delivery=on_delivery,
        on_state=on_state,
        **kw,  # type: ignore[arg-type]
    )
    task = asyncio.create_task(subscriber.run())
    try:
        async with asyncio.timeout(30):
            await failed.wait()
    finally:
        await stop_task(task)
    return next(s for s in seen if s.error)


def line_for(state: SubscriberState, url: str) -> str:
    printer = StateLines()
    printer(LinkState(url, started=True, connected=True))
    shown = LinkState(url, started=True, error=state.error, retry_in=state.retry_in)
    line = printer(shown)
    assert line is not None
    return line


async def test_a_relay_where_nothing_listens_is_said_so_with_the_next_try() -> None:
    url = closed_port_url().replace("/hook", "/channels/x/events")
    port = url.split(":")[2].split("/")[0]
    state = await states_until_it_fails(url, backoff_initial_s=2.0)
    assert state.error == (
        f"nothing answers at 127.0.0.1:{port} (connection refused): is the relay running?"
    )
    assert state.retry_in is not None and 1.0 <= state.retry_in <= 2.0  # 2 s, with jitter
    assert re.fullmatch(
        rf"relay disconnected \(nothing answers at 127\.0\.0\.1:{port} \(connection refused\): "
        r"is the relay running\?\); next try in \d\.\d s",
        line_for(state, url),
    )


async def test_the_link_says_a_refused_connection_at_once_with_the_next_try(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The first thing the link asks (the channel, before following it) is refused: that is
    said then, with the next try's delay, not once the stream is tried (10 s on; an hour
    here)."""
    monkeypatch.setattr(feed, "CHANNEL_WAIT_S", 3600.0)
    url = closed_port_url().replace("/hook", "/channels/x/events")
    port = url.split(":")[2].split("/")[0]
    link = link_for(url, "wpr_token")
    lines: list[str] = []
    printer = StateLines()
    said = asyncio.Event()

    def on_state(state: LinkState) -> None:
        if line := printer(state):
            lines.append(line)
            said.set()

    link.subscribe(on_state)
    async with laptop(tmp_path / "laptop", link) as runtime:
        await runtime.serve()
        async with asyncio.timeout(60):
            await said.wait()
    assert len(lines) == 1, lines  # one line, not one per try
    assert re.fullmatch(
        rf"relay disconnected \(nothing answers at 127\.0\.0\.1:{port} \(connection refused\): "
        r"is the relay running\?\); next try in \d\.\d s",
        lines[0],
    )


async def test_a_relay_host_that_does_not_resolve_is_said_so(local_resolver: Resolver) -> None:
    state = await states_until_it_fails("https://relay.example.invalid/channels/x/events")
    assert state.error == (
        "cannot find the relay's host relay.example.invalid (its name does not resolve)"
    )
    assert "relay.example.invalid" in local_resolver.asked


async def test_a_relay_whose_certificate_is_not_trusted_is_said_so(
    peers: Peers, certificate: Certificate
) -> None:
    url = (await peers.tls(certificate)).replace("/hook", "/channels/x/events")
    port = url.split(":")[2].split("/")[0]
    state = await states_until_it_fails(url)
    assert state.error is not None
    assert state.error.startswith(f"the TLS certificate of 127.0.0.1:{port} is not trusted (")
    assert "Cannot connect to host" not in state.error  # the library's words are not the reason


@pytest.mark.parametrize(
    ("retry_in", "shown"),
    [(0.26, "next try in 0.3 s"), (9.94, "next try in 9.9 s"), (30.0, "next try in 30 s")],
)
def test_the_next_try_is_said_in_seconds(retry_in: float, shown: str) -> None:
    state = LinkState("https://relay.example.com/channels/x/events", error="why", retry_in=retry_in)
    assert state.describe() == f"relay disconnected (why); {shown}"
