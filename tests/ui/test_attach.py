"""A dashboard attached to a real ``listen`` process (the Textual app through ``run_test()`` and
Pilot): deliveries appear, ``p`` reaches the receiver, its stop and return are shown, two attach at
once. Real signed POSTs to 127.0.0.1; deadlines are "did not hang" guards only."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_helpers import attempt, wait_for

from walletpass_tui.config import Settings
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.attached import AttachedRuntime
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.target_options import TargetOptions
from walletpass_tui.webhooks.verify import sign

SECRET = "whsec_" + base64.b64encode(b"attach-tests-secret-0123456789ab").decode()
DEADLINE_S = 60.0  # "did not hang": a busy machine only takes longer
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_77"}}'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Listen:
    """``walletpass-tui listen`` as a process on ``home``, ready once it printed its History line."""

    def __init__(self, home: Path, *more: str) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
        env["WALLETPASS_HOME"] = str(home)
        argv = ["listen", "--port", str(self.port), "--secret", SECRET, *more]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/webhooks"

    def ready(self) -> Listen:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"listen ended: {self.lines}"
            self.lines.append(line.rstrip("\n"))
            if line.startswith("History:"):
                return self

    def stop(self, sig: int = signal.SIGINT) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=DEADLINE_S)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def processes() -> Iterator[list[Listen]]:
    started: list[Listen] = []
    yield started
    for listen in started:
        if listen.proc.poll() is None:
            listen.proc.kill()
            listen.proc.wait()


async def start_listen(home: Path, processes: list[Listen], *more: str) -> Listen:
    listen = Listen(home, *more)
    processes.append(listen)
    return await asyncio.to_thread(listen.ready)


async def post(url: str, msg_id: str) -> int:
    headers = {**sign(SECRET, msg_id, BODY, datetime.now(UTC)), "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        return (await http.post(url, content=BODY, headers=headers)).status_code


@contextlib.asynccontextmanager
async def attached(home: Path) -> AsyncIterator[tuple[WalletPassApp, Any]]:
    """An attached dashboard on ``home``, as ``walletpass-tui attach`` builds it, under Pilot."""
    found = await asyncio.to_thread(instance.find, home)
    assert isinstance(found, instance.Running) and found.record is not None, found
    async with AttachedRuntime(Settings(home=home), found.record) as runtime:
        app = build_app(runtime)
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(
                lambda: isinstance(app.screen, MainScreen) and app.screen.assembled,
                timeout=DEADLINE_S,
            )
            yield app, pilot


def header(app: WalletPassApp) -> str:
    return str(app.screen.query_one(StatusBar).render())


def log_ids(app: WalletPassApp) -> list[str | None]:
    return [row.webhook_id for row in app.screen.query_one(EventLogPane).window.rows]


def pause_hint_greyed(app: WalletPassApp) -> bool:
    line = app.screen.query_one(KeyLine)
    return next(greyed for _, _, words, greyed in line._hints() if words == "Pause acks")


def said(app: WalletPassApp, words: str) -> bool:
    return any(words in str(n.message) for n in app._notifications)


async def until(condition: Any) -> None:
    await wait_for(condition, timeout=DEADLINE_S, interval=0.02)


async def test_an_attached_dashboard_follows_listen_through_its_stop_and_return(
    home: Path, processes: list[Listen]
) -> None:
    listen = await start_listen(home, processes)
    assert any(
        line == f"Attach a dashboard: walletpass-tui attach --home {home}" for line in listen.lines
    )
    async with attached(home) as (app, pilot):
        await until(lambda: f"attached to listen, pid {listen.proc.pid}" in header(app))
        assert f"127.0.0.1:{listen.port}/webhooks" in header(app)
        assert not pause_hint_greyed(app)

        # A delivery reaches the screen.
        assert await post(listen.url, "msg_first") == 200
        await until(lambda: "msg_first" in log_ids(app))

        # p pauses the receiver in the other process: it answers 503 until p again.
        await pilot.press("p")
        await until(lambda: "ACKS PAUSED" in header(app))
        assert await post(listen.url, "msg_paused") == 503
        await until(lambda: "msg_paused" in log_ids(app))  # stored all the same
        await pilot.press("p")
        await until(lambda: "ACKS PAUSED" not in header(app))
        assert await post(listen.url, "msg_resumed") == 200

        # The receiver stops: the dashboard says so, keeps the history, greys p and says why.
        await asyncio.to_thread(listen.stop)
        await until(lambda: "receiver stopped; showing the history" in header(app))
        assert "msg_resumed" in log_ids(app)
        await until(lambda: pause_hint_greyed(app))
        await pilot.press("p")
        await until(lambda: said(app, "The receiver is not running"))

        # Rows another program writes meanwhile (events replay, check) still show.
        async with await Store.open(home / "deliveries.sqlite3") as store:
            await store.record(attempt(1, webhook_id="msg_written_elsewhere"))
        await until(lambda: "msg_written_elsewhere" in log_ids(app))

        # A receiver starts on the home again: followed, with its new pid and port.
        again = await start_listen(home, processes)
        await until(lambda: f"attached to listen, pid {again.proc.pid}" in header(app))
        await until(lambda: not pause_hint_greyed(app))
        assert await post(again.url, "msg_again") == 200
        await until(lambda: "msg_again" in log_ids(app))
        again.stop()


async def test_two_dashboards_attach_at_once_and_see_each_others_pause(
    home: Path, processes: list[Listen]
) -> None:
    listen = await start_listen(home, processes)
    async with attached(home) as (first, first_pilot), attached(home) as (second, _):
        assert await post(listen.url, "msg_both") == 200
        await until(lambda: "msg_both" in log_ids(first) and "msg_both" in log_ids(second))
        await first_pilot.press("p")
        await until(lambda: "ACKS PAUSED" in header(second))  # told by the receiver
        assert await post(listen.url, "msg_paused") == 503
        await first_pilot.press("p")
        await until(lambda: "ACKS PAUSED" not in header(second))
    # Both detached: the receiver never noticed.
    assert await post(listen.url, "msg_after") == 200
    assert listen.proc.poll() is None
    listen.stop()


async def test_a_sigkilled_receiver_is_shown_stopped(home: Path, processes: list[Listen]) -> None:
    listen = await start_listen(home, processes)
    async with attached(home) as (app, _):
        await until(lambda: "attached to listen" in header(app))
        await asyncio.to_thread(listen.stop, signal.SIGKILL)
        await until(lambda: "receiver stopped; showing the history" in header(app))
        found = await asyncio.to_thread(instance.find, home)
        assert isinstance(found, instance.Stale) and found.record is not None
        assert found.record.pid == listen.proc.pid


async def test_an_attached_dashboard_marks_drift_the_receiver_learned(
    home: Path, processes: list[Listen]
) -> None:
    """The receiver learns in its own process; the attached dashboard reads what it learned."""
    listen = await start_listen(home, processes)

    async def deliver(msg_id: str, serial: object) -> None:
        payload = {"type": "pass.activated", "data": {"passId": "pass_1", "serialNumber": serial}}
        raw = json.dumps(payload).encode()
        headers = {
            **sign(SECRET, msg_id, raw, datetime.now(UTC)),
            "content-type": "application/json",
        }
        async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
            assert (await http.post(listen.url, content=raw, headers=headers)).status_code == 200

    async with attached(home) as (app, _):
        for n in range(20):
            await deliver(f"msg_steady_{n}", f"SN-{n}")
        await deliver("msg_drifted", 7)  # serialNumber turns into an integer
        await until(lambda: "msg_drifted" in log_ids(app))
        drifted = next(
            row.id
            for row in app.screen.query_one(EventLogPane).window.rows
            if row.webhook_id == "msg_drifted"
        )
        marks = app.live.drift_marks
        assert marks is not None and marks.enabled
        await until(lambda: drifted in marks)
        await until(lambda: "Δ 1" in header(app))  # the header counts the finding
        steady_ids = [
            row.id
            for row in app.screen.query_one(EventLogPane).window.rows
            if (row.webhook_id or "").startswith("msg_steady_")
        ]
        assert steady_ids and not any(i in marks for i in steady_ids)


async def test_a_replay_from_an_attached_dashboard_takes_the_default_target_options(
    home: Path, processes: list[Listen]
) -> None:
    """The receiver's --header and --ca-bundle live in its own process; an attached
    dashboard's replay and check screens ask for a target's options all the same."""
    await start_listen(home, processes)
    async with attached(home) as (app, _):
        options = app.context.target_options("http://127.0.0.1:9/hooks")
        assert options == TargetOptions()


async def test_check_my_app_in_an_attached_dashboard_carries_listens_headers(
    home: Path, processes: list[Listen], start_server: Any
) -> None:
    """check.md: sent to a --forward-to target, the cases carry its --header headers. listen
    runs in its own process: it tells them to the attached dashboard over its control channel,
    so an app behind authentication gets them from the dashboard's check as from listen's
    forwards; nothing the dashboard shows holds a value in full."""
    from walletpass_tui.ui.screens.check import CheckScreen
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

    token = "apptoken-0123456789abcdef"
    app_server = await start_server()
    app_server.answer("POST", "/hook", status=200)
    target = app_server.url + "/hook"
    EndpointRegistry(Settings(home=home).endpoints_path).import_endpoint(
        "ep_app", "https://example.com/wh", ["pass.activated"], SECRET
    )
    await start_listen(
        home, processes, "--forward-to", target, "-H", f"Authorization: Bearer {token}",
        "-H", "X-Env: staging",
    )  # fmt: skip
    async with attached(home) as (app, pilot):
        await until(lambda: app.context.target_options(target).headers)
        await pilot.press("c")
        await until(lambda: isinstance(app.screen, CheckScreen))
        screen = app.screen
        assert isinstance(screen, CheckScreen)
        await pilot.press("ctrl+r")
        await wait_for(lambda: screen.results and not screen.running, timeout=DEADLINE_S)
        sent = app_server.requests_to("POST", "/hook")
        assert len(sent) == len(screen.cases) > 0
        assert {r.headers.get("Authorization") for r in sent} == {f"Bearer {token}"}
        assert {r.headers.get("X-Env") for r in sent} == {"staging"}
        assert token not in app.export_screenshot()
        assert app.context.target_options(app_server.url + "/other") == TargetOptions()


async def test_a_control_socket_removed_under_listen_is_made_again(
    home: Path, processes: list[Listen]
) -> None:
    """A cleaner of old files removes run/control.sock under a running listen: listen makes it
    again, so a dashboard attached afterwards reaches the receiver (p pauses it) instead of
    showing "attached" with every request failing."""
    listen = await start_listen(home, processes)
    sock = instance.socket_path(home)
    before = sock.stat().st_ino
    sock.unlink()
    await until(lambda: sock.exists() and sock.stat().st_ino != before)
    async with attached(home) as (app, pilot):
        await until(lambda: f"attached to listen, pid {listen.proc.pid}" in header(app))
        await pilot.press("p")
        await until(lambda: "ACKS PAUSED" in header(app))
        assert await post(listen.url, "msg_paused") == 503
        await pilot.press("p")
        await until(lambda: "ACKS PAUSED" not in header(app))
    assert any("made it again" in line for line in await asyncio.to_thread(listen_lines, listen))


def listen_lines(listen: Listen) -> list[str]:
    listen.stop()
    assert listen.proc.stdout is not None
    return listen.lines + listen.proc.stdout.read().splitlines()
