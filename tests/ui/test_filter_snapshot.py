"""A picture of the filter box completing a field path (``--snapshot-update`` to accept): the
known paths starting with ``data.p``, each with its type, presence and (for a field that took few)
its values, over the fixed scene the other snapshots draw."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane

SIZE = (120, 30)


def make_filter_app() -> WalletPassApp:
    from snapshot_scene import make

    return make("test_filter_completion")


async def settle(pilot: Pilot[Any]) -> None:
    from snapshot_scene import settle as main_settled

    app = pilot.app
    assert isinstance(app, WalletPassApp)
    await main_settled(pilot)
    runtime = app.context.runtime  # type: ignore[attr-defined]
    assert await runtime.field_indexer.settled(60)
    await runtime.learner.asettled()
    await pilot.press("slash")
    log = app.screen.query_one(EventLogPane)
    field = log.filter_input
    field.cursor_blink = False
    field.value = "verdict:verified data."
    field.cursor_position = len(field.value)
    await pilot.press("p")
    while not log.completions.display or log.total is None:
        await pilot.pause(0.02)
    await pilot.pause(0.2)


def test_the_filter_completes_a_path(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(make_filter_app(), terminal_size=SIZE, run_before=settle)
