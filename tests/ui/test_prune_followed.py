"""A dashboard follows a prune: its header's counts, its Events list (the pruned rows gone, the
pane's total) and its Stats screen agree with ``events stats`` once ``events prune`` has run,
whether the receiver is the dashboard itself, a ``listen`` it is attached to, or nobody (the
command prunes by itself). Real ``walletpass-tui`` processes, a real history on disk, the real
app under ``run_test()``; deadlines are "did not hang" guards only, nothing is timed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_helpers import SECRET, attempt, record_all, wait_for

from walletpass_tui.config import Settings
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.attached import AttachedRuntime
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.screens.stats import StatsScreen
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey, sign

pytestmark = pytest.mark.slow  # runs walletpass-tui processes

DEADLINE_S = 90.0
OLD, RECENT = 24, 4  # attempts 40 minutes old (pruned) and 5 minutes old (kept)
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_77"}}'


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(home)
    return env


def cli(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *args],
        env=env_for(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def stats_total(home: Path) -> int:
    found = json.loads(cli(home, "events", "stats", "--since", "1h", "--json"))
    return int(found["totals"]["attempts"])


async def prune(home: Path, older_than: str) -> str:
    return await asyncio.to_thread(
        cli, home, "events", "prune", "--older-than", older_than, "--yes"
    )


async def fill(home: Path) -> None:
    """OLD attempts 40 minutes old, then RECENT 5 minutes old (all in the Stats screen's hour)."""
    now = int(time.time() * 1000)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        await record_all(
            store,
            [attempt(i, at_ms=now - 40 * 60_000 + i, webhook_id=f"msg_old{i}") for i in range(OLD)]
            + [
                attempt(OLD + i, at_ms=now - 5 * 60_000 + i, webhook_id=f"msg_kept{i}")
                for i in range(RECENT)
            ],
            one_by_one=True,
        )


def shown(app: WalletPassApp) -> dict[str, Any]:
    """What the dashboard shows: the header's count, the Events pane's total and rows, and the
    deliveries the Stats screen's table adds up to (when it is open)."""
    pane = app.screen_stack[1].query_one(EventLogPane)
    found: dict[str, Any] = {
        "header": app.stats.received,
        "pane": pane.total,
        "rows": sorted(str(row.webhook_id) for row in pane.window.rows),
    }
    if isinstance(app.screen, StatsScreen):
        table = app.screen.numbers
        keys = [str(column.key.value) for column in table.columns.values()]
        at = keys.index("deliveries")
        found["screen"] = sum(
            int(str(table.get_row_at(r)[at]).replace(",", "")) for r in range(table.row_count)
        )
    return found


def agreeing(ids: list[str]) -> dict[str, Any]:
    return {"header": len(ids), "pane": len(ids), "rows": sorted(ids), "screen": len(ids)}


async def opened(app: WalletPassApp, pilot: Any) -> None:
    """The history read, the Stats screen open over the main screen."""
    await wait_for(
        lambda: isinstance(app.screen, MainScreen) and app.screen.assembled, timeout=DEADLINE_S
    )
    await wait_for(lambda: app.stats.received == OLD + RECENT and app.traffic.loaded, timeout=60)
    await pilot.press("s")
    await wait_for(lambda: isinstance(app.screen, StatsScreen), timeout=DEADLINE_S)
    await pilot.press("n")  # the numbers
    kept = [f"msg_old{i}" for i in range(OLD)] + [f"msg_kept{i}" for i in range(RECENT)]
    await wait_for(lambda: shown(app) == agreeing(kept), timeout=DEADLINE_S)


KEPT = [f"msg_kept{i}" for i in range(RECENT)]


async def test_the_receivers_own_dashboard_follows_a_prune_it_ran(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await fill(home)
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    setup = DeliverySetup(options=options)
    async with DeliveryRuntime(Settings(home=home, receiver_port=0), setup) as runtime:
        await runtime.start_instance("dashboard")
        app = build_app(runtime)
        async with app.run_test(size=(160, 48)) as pilot:
            await opened(app, pilot)
            said = await prune(home, "20m")
            assert f"Removed {OLD} attempt(s)" in said
            assert runtime.store.pruning is not None  # the dashboard's own writer pruned
            await wait_for(lambda: shown(app) == agreeing(KEPT), timeout=DEADLINE_S)
            assert stats_total(home) == RECENT


class Listen:
    """``walletpass-tui listen`` on ``home``, ready once it printed its History line."""

    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", "listen", "--port", "0", "--secret", SECRET],
            env=env_for(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def ready(self) -> None:
        assert self.proc.stdout is not None
        while not (line := self.proc.stdout.readline()).startswith("History:"):
            assert line, "listen ended"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=DEADLINE_S)


@pytest.fixture
async def listen(tmp_path: Path) -> AsyncIterator[Listen]:
    home = tmp_path / "home"
    await fill(home)
    started = Listen(home)
    try:
        await asyncio.to_thread(started.ready)
        yield started
    finally:
        if started.proc.poll() is None:
            started.proc.kill()
        started.proc.wait()


async def post(url: str, msg_id: str) -> int:
    headers = {**sign(SECRET, msg_id, BODY, datetime.now(UTC)), "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        return (await http.post(url, content=BODY, headers=headers)).status_code


async def test_an_attached_dashboard_follows_a_prune_by_listen_and_one_by_the_command_alone(
    tmp_path: Path, listen: Listen
) -> None:
    home = tmp_path / "home"
    found = await asyncio.to_thread(instance.find, home)
    assert isinstance(found, instance.Running) and found.record is not None
    async with AttachedRuntime(Settings(home=home), found.record) as runtime:
        app = build_app(runtime)
        async with app.run_test(size=(160, 48)) as pilot:
            await opened(app, pilot)
            await wait_for(lambda: runtime.connected, timeout=DEADLINE_S)
            said = await prune(home, "20m")  # by listen's writer
            assert f"Removed {OLD} attempt(s)" in said
            await wait_for(lambda: shown(app) == agreeing(KEPT), timeout=DEADLINE_S)
            assert stats_total(home) == RECENT

            # Deliveries after the prune are counted from there, not from the old total.
            assert runtime.url is not None
            assert await post(runtime.url, "msg_after") == 200
            await wait_for(lambda: shown(app) == agreeing([*KEPT, "msg_after"]), timeout=60)

            # Nobody receives any more: the command prunes by itself, the dashboard notices.
            await asyncio.to_thread(listen.stop)
            await wait_for(lambda: runtime.gone, timeout=DEADLINE_S)
            await prune(home, "2m")
            await wait_for(lambda: shown(app) == agreeing(["msg_after"]), timeout=DEADLINE_S)
            assert stats_total(home) == 1
