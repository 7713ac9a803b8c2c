"""Pictures of the main screens with fixed data (``pytest --snapshot-update`` to accept changes).

The app runs under ``App.run()`` here (pytest-textual-snapshot's own event loop), so it is given a
runtime *opener*: the store is opened and filled inside that loop and closed by the app at exit.
There is no receiver (no random port); the header shows a fixed address instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from snapshot_scene import (
    CREATED,
    make,
    settle,
    traffic_scene,
)
from textual.pilot import Pilot
from textual.widgets import Input

from walletpass_tui.ui.app import WalletPassApp


def snap(snap_compare: Callable[..., bool], app: WalletPassApp, **kw: Any) -> bool:
    return snap_compare(app, **kw)


def test_main_screen_wide(snap_compare: Callable[..., bool]) -> None:
    assert snap(
        snap_compare, make("test_main_screen_wide"), terminal_size=(130, 36), run_before=settle
    )


def test_main_screen_80x24(snap_compare: Callable[..., bool]) -> None:
    assert snap(
        snap_compare,
        make("test_main_screen_80x24", with_key=False),
        terminal_size=(80, 24),
        run_before=settle,
    )


def test_detail_screen_of_a_retried_message(snap_compare: Callable[..., bool]) -> None:
    async def open_detail(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause(0.2)

    assert snap(
        snap_compare,
        make("test_detail_screen_of_a_retried_message"),
        terminal_size=(100, 30),
        run_before=open_detail,
    )


def test_create_endpoint_form(snap_compare: Callable[..., bool]) -> None:
    async def fill(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("n")
        await pilot.pause(0.1)
        field = pilot.app.screen.query_one("#endpoint-url", Input)
        field.cursor_blink = False
        field.value = "http://localhost:300"
        field.cursor_position = len(field.value)
        await pilot.press("0")
        await pilot.pause(0.1)

    assert snap(
        snap_compare, make("test_create_endpoint_form"), terminal_size=(100, 30), run_before=fill
    )


def test_secret_shown_once(snap_compare: Callable[..., bool]) -> None:
    async def create(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("n")
        await pilot.pause(0.1)
        field = pilot.app.screen.query_one("#endpoint-url", Input)
        field.cursor_blink = False
        field.value = CREATED["url"]
        await pilot.press("ctrl+s")
        for _ in range(100):
            if pilot.app.screen.__class__.__name__ == "EndpointSecretScreen":
                break
            await pilot.pause(0.02)
        await pilot.pause(0.1)

    assert snap(
        snap_compare, make("test_secret_shown_once"), terminal_size=(100, 30), run_before=create
    )


def test_light_theme_and_help(snap_compare: Callable[..., bool]) -> None:
    async def light(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("d", "question_mark")
        await pilot.pause(0.1)

    assert snap(
        snap_compare, make("test_light_theme_and_help"), terminal_size=(120, 40), run_before=light
    )


def test_templates_json(snap_compare: Callable[..., bool]) -> None:
    async def show(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("1", "enter")
        await pilot.pause(0.1)

    assert snap(snap_compare, make("test_templates_json"), terminal_size=(100, 30), run_before=show)


def test_replay_form(snap_compare: Callable[..., bool]) -> None:
    async def open_form(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("R")
        for _ in range(100):
            if pilot.app.screen.__class__.__name__ == "ReplayScreen":
                break
            await pilot.pause(0.02)
        field = pilot.app.screen.query_one("#replay-target", Input)
        field.cursor_blink = False
        field.value = "http://localhost:3000/webhooks"
        await pilot.pause(0.1)

    assert snap(
        snap_compare, make("test_replay_form"), terminal_size=(100, 34), run_before=open_form
    )


def test_stats_screen(snap_compare: Callable[..., bool]) -> None:
    async def open_stats(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("s")
        for _ in range(100):
            if pilot.app.screen.__class__.__name__ == "StatsScreen":
                break
            await pilot.pause(0.02)
        await pilot.pause(0.2)

    assert snap(
        snap_compare,
        make("test_stats_screen", rows=traffic_scene, forwards=True),
        terminal_size=(120, 36),
        run_before=open_stats,
    )
