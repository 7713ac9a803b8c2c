"""A filtered log's rare rows are not held back a frame by the deliveries it filters out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.live_rows import LiveRows
from walletpass_tui.ui.messages import DeliveriesStored
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.webhooks.models import Attempt, LogFilter
from walletpass_tui.webhooks.store import Store

NEVER = 3600.0  # a frame that does not end within a test


class Collector:
    """Stands in for the app: keeps what the feed posts."""

    def __init__(self) -> None:
        self.messages: list[DeliveriesStored] = []

    def post_message(self, message: Any) -> bool:
        self.messages.append(message)
        return True


def activated(a: Attempt) -> bool:
    return a.topic == "pass.activated"


async def settle() -> None:
    """Let callbacks scheduled for now run (a few loop turns, no waiting)."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_the_first_shown_row_goes_at_once_while_filtered_out_ones_wait(store: Store) -> None:
    target = Collector()
    feed = LiveRows(store, target, interval=NEVER, shown=activated)  # type: ignore[arg-type]
    feed.start()
    await record_all(store, [attempt(1, topic="pass.deactivated")])
    await settle()
    assert target.messages == []  # a delivery the log does not show waits for the frame
    await record_all(store, [attempt(2, topic="pass.activated")])
    await wait_for(lambda: len(target.messages) == 1)
    assert [a.webhook_id for a in target.messages[0].attempts] == ["msg_000001", "msg_000002"]
    # Right after it, rows the log shows are a stream again: they wait for the frame.
    await record_all(store, [attempt(3, topic="pass.activated")])
    await record_all(store, [attempt(4, topic="pass.deactivated")])
    await settle()
    assert len(target.messages) == 1
    assert feed.pending == 2
    feed.stop()


async def test_without_a_filter_of_the_log_every_delivery_waits_for_its_frame(
    store: Store,
) -> None:
    target = Collector()
    feed = LiveRows(store, target, interval=NEVER)  # type: ignore[arg-type]
    feed.start()
    await record_all(store, [attempt(n) for n in range(1, 4)], one_by_one=True)
    await settle()
    assert target.messages == [] and feed.pending == 3
    feed.stop()


async def test_the_app_feed_knows_which_deliveries_the_log_shows(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    app = make_app()
    async with app.run_test() as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.pause()
        shown = app.live.shown
        assert shown(attempt(1, topic="pass.deactivated"))  # no filter: every row is shown
        main.event_log.set_filter(LogFilter(topic="pass.activated"))
        assert shown(attempt(2, topic="pass.activated"))
        assert not shown(attempt(3, topic="pass.deactivated"))
