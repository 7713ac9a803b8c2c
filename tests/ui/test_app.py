"""App-wide behaviour: the palette, help, pausing acknowledgements, themes, small terminals, and
quitting cleanly through the real command line path."""

from __future__ import annotations

import argparse
import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.command import CommandPalette
from textual.widget import Widget
from textual.widgets import Static, Tabs
from ui_helpers import SIZE, attempt, body_for, plain, record_all, sender_for, wait_for

from walletpass_tui.cli import dashboard_cmd
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.commands import COMMANDS, action_target
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.help import HelpScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.screens.replay import ReplayScreen
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.receiver import Receiver
from walletpass_tui.webhooks.store import Store


async def main_of(app: WalletPassApp) -> MainScreen:
    """The main screen, once the parts mounted after its first frame are there too."""
    await wait_for(lambda: isinstance(app.screen, MainScreen) and app.screen.assembled)
    assert isinstance(app.screen, MainScreen)
    return app.screen


async def test_every_palette_command_runs_an_action_of_the_main_screen_or_the_app(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(1), attempt(2, verdict="rejected")])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main = await main_of(app)
        for command in COMMANDS:
            assert action_target(command, main, app) is not None, command.action
        # The app keeps only app-wide actions: the screen's are not passed through it.
        for name in ("filter_log", "follow", "only", "open_detail", "new_endpoint"):
            assert not hasattr(app, f"action_{name}"), name
        await pilot.press("ctrl+p")
        await wait_for(lambda: CommandPalette.is_open(app))
        await pilot.press(*"only rejected")
        await pilot.pause(0.3)
        await pilot.press("enter")
        log = main.query_one(EventLogPane)
        await wait_for(lambda: log.filter.verdict == "rejected" and log.total == 1)


async def test_the_palette_over_a_delivery_replays_that_delivery(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(1), attempt(2)])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main = await main_of(app)
        await wait_for(lambda: main.event_log.total == 2)
        await pilot.press("j", "enter")  # the older one, on a screen of its own
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        detail = app.screen
        # Commands of the main screen are not offered here; the screen's own and the app's are.
        assert (
            action_target(next(c for c in COMMANDS if c.name == "filter_log"), detail, app) is None
        )
        await pilot.press("ctrl+p")
        await wait_for(lambda: CommandPalette.is_open(app))
        await pilot.press(*"replay the selected")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))
        assert isinstance(app.screen, ReplayScreen)
        assert app.screen.attempt.webhook_id == "msg_000001"


async def test_help_lists_the_keys(make_app: Callable[..., WalletPassApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await main_of(app)
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen))
        text = plain(app.screen.query_one("#help-table", Static).content)
        for words in (
            "New webhook endpoint",
            "Pause or resume",
            "Filter",
            "follow new deliveries",
            "Copy the webhook-id",
            "^q",
        ):
            assert words in text, words
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_pause_acknowledgements_answers_503_and_says_so(
    make_app: Callable[..., WalletPassApp], receiver: Receiver, http: httpx.AsyncClient
) -> None:
    app = make_app(receiver=receiver, receiver_display=None)
    async with app.run_test(size=SIZE) as pilot:
        main = await main_of(app)
        header = main.query_one(StatusBar)
        await pilot.press("p")
        assert receiver.paused
        assert "ACKS PAUSED" in str(header.render())
        answer = await sender_for(receiver, http).post(body_for("pass.activated", "p"), msg_id="m1")
        assert answer.status_code == 503
        log = main.query_one(EventLogPane)
        await wait_for(lambda: log.total == 1)
        row = log.window.rows[0]
        assert (row.verdict, row.status, row.note) == (
            "verified",
            503,
            "injected: acknowledgements paused",
        )
        await pilot.press("p")
        assert not receiver.paused
        assert "ACKS PAUSED" not in str(header.render())
        answer = await sender_for(receiver, http).post(body_for("pass.activated", "p"), msg_id="m1")
        assert answer.status_code == 200
        await wait_for(lambda: log.total == 2)
        assert log.window.rows[0].attempt_no == 2  # the same message, delivered again
        assert header.stats is not None and header.stats.redeliveries == 1


async def test_dark_and_light(make_app: Callable[..., WalletPassApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await main_of(app)
        assert app.current_theme.dark
        await pilot.press("d")
        assert not app.current_theme.dark
        await pilot.press("d")
        assert app.current_theme.dark


async def test_at_80x24_the_panes_fold_into_tabs_and_the_detail_is_a_screen(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(n) for n in range(1, 6)])
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = await main_of(app)
        assert main.has_class("-narrow")
        assert shown(main.query_one("#pane-tabs"))
        assert not shown(main.detail)
        assert shown(main.event_log) and not shown(main.templates)
        await pilot.press("1")
        assert shown(main.templates) and not shown(main.event_log)
        assert not shown(main.endpoints)
        await pilot.press("2")
        assert shown(main.endpoints) and not shown(main.templates)
        await pilot.press("3")
        log = main.event_log
        await wait_for(lambda: log.total == 5)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
    app = make_app()
    async with app.run_test(size=(160, 48)):
        main = await main_of(app)
        assert main.has_class("-wide") and main.has_class("-tall")
        assert not shown(main.query_one("#pane-tabs"))
        assert all(shown(w) for w in (main.detail, main.templates, main.endpoints, main.event_log))


async def test_a_pane_key_pressed_before_the_side_panes_are_mounted_is_not_lost(
    make_app: Callable[..., WalletPassApp], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first frame shows the log; the side panes and the narrow layout's tabs are mounted
    right after it. Asking for a pane in between (here: as the screen mounts) still switches
    to it once it is there."""
    await record_all(store, [attempt(n) for n in range(1, 4)])
    mounted = MainScreen.on_mount
    asked_early: list[bool] = []

    def on_mount(screen: MainScreen) -> None:
        mounted(screen)
        asked_early.append(not screen.query("#endpoints"))
        screen.action_show_pane("endpoints")

    monkeypatch.setattr(MainScreen, "on_mount", on_mount)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = await main_of(app)
        await wait_for(lambda: main.pane == "endpoints")
        await pilot.pause()
        assert asked_early == [True]
        assert shown(main.endpoints) and not shown(main.event_log)
        assert main.query_one("#pane-tabs", Tabs).active == "tab-endpoints"


async def test_the_detail_pane_follows_the_cursor_on_a_wide_terminal(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(n) for n in range(1, 6)])
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        main = await main_of(app)
        await wait_for(lambda: main.detail.data is not None)
        assert main.detail.data is not None
        assert main.detail.data.attempt.webhook_id == "msg_000005"
        await pilot.press("j", "j")
        await wait_for(
            lambda: (
                main.detail.data is not None and main.detail.data.attempt.webhook_id == "msg_000003"
            )
        )


def shown(widget: Widget) -> bool:
    """Displayed, and so are all its containers."""
    return all(node.display for node in (widget, *widget.ancestors) if isinstance(node, Widget))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_command_line_runs_the_dashboard_and_ctrl_q_quits_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``walletpass-tui --port P``: receiver listening while the app runs; after ctrl+q the port
    is free again and the history holds what was acknowledged."""
    for name in ("WALLETPASS_API_KEY", "WALLETPASS_BASE_URL", "WALLETPASS_HOME"):
        monkeypatch.delenv(name, raising=False)
    port = free_port()
    seen: dict[str, Any] = {}
    original = WalletPassApp.run_async

    async def headless(self: WalletPassApp, **kwargs: Any) -> Any:
        async def pilot_run(pilot: Any) -> None:
            await wait_for(lambda: isinstance(self.screen, MainScreen))
            async with httpx.AsyncClient() as http:
                answer = await http.post(f"http://127.0.0.1:{port}/webhooks", content=b"{}")
            seen["status"] = answer.status_code  # unsigned: rejected, but stored
            await wait_for(lambda: self.stats.received == 1)
            seen["header"] = str(self.screen.query_one(StatusBar).render())
            await pilot.press("ctrl+q")

        return await original(self, headless=True, size=(120, 36), auto_pilot=pilot_run)

    monkeypatch.setattr(WalletPassApp, "run_async", headless)
    args = argparse.Namespace(home=str(tmp_path / "home"), port=port)
    assert dashboard_cmd.run_dashboard(args) == 0
    assert seen["status"] == 400
    assert f"listening 127.0.0.1:{port}/webhooks" in seen["header"]
    assert "No pass templates without the service's API key" not in seen["header"]
    with socket.socket() as sock:  # released
        sock.bind(("127.0.0.1", port))

    async def count() -> int:
        async with await Store.open(tmp_path / "home" / "deliveries.sqlite3") as store:
            return (await store.stats()).received

    assert asyncio.run(count()) == 1
