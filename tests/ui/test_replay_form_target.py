"""The replay form offers a real target, never a grey example: where the delivery was forwarded,
else where its topic last went; and its footer shows its keys (Ctrl+S sends)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input
from ui_helpers import attempt, plain, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.screens.replay import ReplayScreen
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.webhooks.store import Store

APP = "http://127.0.0.1:3000/webhooks"
OTHER = "http://127.0.0.1:3001/hooks"


async def open_form(app: WalletPassApp, pilot: object) -> ReplayScreen:
    await pilot.pause()  # type: ignore[attr-defined]
    await pilot.press("R")  # type: ignore[attr-defined]
    await wait_for(lambda: isinstance(app.screen, ReplayScreen))
    await pilot.pause()  # type: ignore[attr-defined]
    form = app.screen
    assert isinstance(form, ReplayScreen)
    return form


async def test_the_form_offers_where_it_was_forwarded_and_shows_its_keys(
    make_app: Callable[..., WalletPassApp], store: Store, tmp_path: Path
) -> None:
    await store.record(attempt(1, topic="pass.activated"), forward_to=(APP,))
    await store.record(attempt(2, topic="pass.deactivated"), forward_to=(OTHER,))
    await store.record(attempt(3, topic="pass.activated"))  # not forwarded: its topic's last
    await store.record(attempt(4, topic=None))  # nothing of its topic went anywhere
    await store.settled()
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        expected = {0: "", 1: APP, 2: OTHER, 3: APP}  # rows newest first
        for row, target in expected.items():
            if row:
                await pilot.press("down")
            form = await open_form(app, pilot)
            assert form.query_one("#replay-target", Input).value == target, row
            keys = plain(form.query_one(KeyLine).render())
            assert "Send" in keys and "Cancel" in keys and "^s" in keys, keys
            if row == 1:
                app.save_screenshot("replay-form.svg", path=str(tmp_path))
            await pilot.press("escape")
            await wait_for(lambda: not isinstance(app.screen, ReplayScreen))
    assert (tmp_path / "replay-form.svg").exists()
