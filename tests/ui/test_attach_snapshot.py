"""Pictures of an attached dashboard's header (``pytest --snapshot-update`` to accept changes): the
receiver it follows, and that receiver stopped (``p`` greyed). Fixed data: a fixed receiver record
and state, the history of the other snapshots, the pictures' clock; no receiver is looked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from snapshot_scene import NOW, fixed_home
from textual.pilot import Pilot
from ui_helpers import scene

from walletpass_tui.config import Settings
from walletpass_tui.runtime.attached import AttachedRuntime
from walletpass_tui.runtime.control import OPS, ReceiverStatus
from walletpass_tui.runtime.instance import InstanceRecord
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.store import Store

RECORD = InstanceRecord(
    pid=4242, kind="listen", url="http://127.0.0.1:8787/webhooks", started_at_ms=NOW - 3_600_000
)


def attached_app(name: str, *, stopped: bool = False) -> WalletPassApp:
    settings = Settings(home=fixed_home(name))

    async def open_runtime() -> AttachedRuntime:
        async with await Store.open(settings.database_path) as store:
            for row in scene():
                await store.record(row)
            await store.settled()
        runtime = AttachedRuntime(settings, RECORD, find_receiver=False)
        await runtime.open()
        if stopped:
            runtime.gone = True
        else:  # as the receiver's hello says: it takes every request, one forward target
            runtime.connected = True
            runtime.status = ReceiverStatus(
                controls=OPS, forwarding=True, forward_targets=("http://localhost:3000/webhooks",)
            )
        return runtime

    return build_app(open_runtime, clock=lambda: NOW)


async def settle(pilot: Pilot[Any]) -> None:
    """Until the log shows its rows and the header its sparkline."""
    app = pilot.app
    while not isinstance(app.screen, MainScreen) or not app.screen.assembled:
        await pilot.pause(0.02)
    log = app.screen.query_one(EventLogPane)
    header = app.screen.query_one(StatusBar)
    while log.total is None or not header.sparks or header.stats is None:
        await pilot.pause(0.02)
    await pilot.pause(0.2)


def test_the_header_of_an_attached_dashboard(snap_compare: Callable[..., bool]) -> None:
    app = attached_app("test_attached_header")
    assert snap_compare(app, terminal_size=(130, 36), run_before=settle)


def test_the_header_when_the_receiver_stopped(snap_compare: Callable[..., bool]) -> None:
    app = attached_app("test_attached_stopped", stopped=True)
    assert snap_compare(app, terminal_size=(130, 36), run_before=settle)
