"""The watcher: a tunnel that dies is said and started again with backoff, one that cannot start
is said once, stopping leaves nothing running, and nothing a provider does escapes it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tunnel_helpers import install_fake

from walletpass_tui.tunnel.cloudflared import Cloudflared
from walletpass_tui.tunnel.watch import Backoff, TunnelState, TunnelWatcher

DEADLINE_S = 30.0
FAST = Backoff(first_s=0.01, cap_s=0.04)


class Record:
    def __init__(self, watcher: TunnelWatcher) -> None:
        self.states: list[TunnelState] = []
        watcher.subscribe(self.states.append)

    def phases(self) -> list[str]:
        return [s.phase for s in self.states]

    async def until(self, check: object) -> None:
        for _ in range(1500):
            if check():  # type: ignore[operator]
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"never happened; states: {self.states}")


async def test_a_tunnel_that_dies_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "flaky")
    watcher = TunnelWatcher(Cloudflared(), backoff=FAST)
    seen = Record(watcher)
    watcher.start("http://127.0.0.1:9")
    first = await asyncio.wait_for(watcher.first_answer(), DEADLINE_S)
    assert first.phase == "up"
    await seen.until(lambda: seen.phases().count("up") == 2)
    up = [s for s in seen.states if s.phase == "up"]
    down = next(s for s in seen.states if s.phase == "down")
    # A quick tunnel's URL changes at every start: the new one is said.
    [(_, _, host1), (_, _, host2)] = fake.starts()
    assert [s.public_url for s in up] == [f"https://{host1}", f"https://{host2}"]
    assert down.detail is not None and down.detail.startswith("cloudflared exited (status 1: ")
    assert down.retry_in_s == FAST.first_s
    assert seen.phases()[:5] == ["starting", "up", "down", "starting", "up"]
    await watcher.stop()
    assert watcher.state.phase == "stopped"
    assert fake.running() == []


async def test_failures_in_a_row_wait_longer_up_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "exit")
    watcher = TunnelWatcher(Cloudflared(), backoff=FAST)
    seen = Record(watcher)
    watcher.start("http://127.0.0.1:9")
    await seen.until(lambda: seen.phases().count("down") >= 5)
    await watcher.stop()
    waits = [s.retry_in_s for s in seen.states if s.phase == "down"][:5]
    assert waits == [0.01, 0.02, 0.04, 0.04, 0.04]
    assert all(
        "failed to request quick Tunnel" in (s.detail or "")
        for s in seen.states
        if s.phase == "down"
    )


def test_backoff_doubles_from_a_second_to_a_minute() -> None:
    delays = [Backoff().delay(n) for n in range(1, 10)]
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60, 60]


async def test_a_tunnel_that_cannot_start_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    watcher = TunnelWatcher(Cloudflared(), backoff=FAST)
    seen = Record(watcher)
    watcher.start("http://127.0.0.1:9")
    state = await asyncio.wait_for(watcher.first_answer(), DEADLINE_S)
    assert state.phase == "unavailable"
    assert state.detail is not None and "not installed" in state.detail
    await asyncio.sleep(0.1)  # had it retried, a second try would have started by now
    assert seen.phases() == ["starting", "unavailable"]
    await watcher.stop()


class Broken:
    """A provider with a bug: its open() raises something no provider should."""

    name = "broken"
    describe = "a broken tunnel"

    def __init__(self) -> None:
        self.tries = 0

    async def open(self, local_url: str) -> object:
        self.tries += 1
        raise KeyError("oops")


async def test_a_provider_bug_is_logged_and_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    provider = Broken()
    watcher = TunnelWatcher(provider, backoff=FAST)  # type: ignore[arg-type]
    seen = Record(watcher)
    watcher.start("http://127.0.0.1:9")
    await seen.until(lambda: provider.tries >= 3)
    await watcher.stop()
    down = next(s for s in seen.states if s.phase == "down")
    assert down.detail == "broken failed ('oops')"
    assert "The broken tunnel failed to start" in caplog.text


async def test_stopping_while_it_starts_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "silent")
    watcher = TunnelWatcher(Cloudflared(), backoff=FAST)
    watcher.start("http://127.0.0.1:9")
    for _ in range(500):
        if fake.running():
            break
        await asyncio.sleep(0.02)
    assert fake.running()
    await watcher.stop()
    assert fake.running() == []
    assert watcher.state.phase == "stopped"


def test_the_headline_says_why_there_is_no_public_url() -> None:
    assert TunnelState("cloudflared", "up", public_url="https://x.example").headline() is None
    assert TunnelState("cloudflared").headline() == "cloudflared tunnel starting"
    down = TunnelState("ngrok", "down", detail="ngrok could not be reached (x)", retry_in_s=4)
    assert down.headline() == "ngrok tunnel down, again in 4 s: ngrok could not be reached (x)"
    gone = TunnelState("cloudflared", "unavailable", detail="bad\x1b[2Jthing")
    assert gone.headline() == "no tunnel: bad\\x1b[2Jthing"
