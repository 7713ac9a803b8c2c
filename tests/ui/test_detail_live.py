"""The detail while deliveries stream in: reloaded a few times a second at most (less often in a
flood), drawn with the log's frames, not at all while hidden, and a megabyte body shown a part at
a time."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from ui_helpers import SIZE, attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.body_pages import PAGE_CHARS
from walletpass_tui.ui.live_rows import FLOOD_ROWS
from walletpass_tui.ui.panes import delivery_detail
from walletpass_tui.ui.panes.delivery_detail import DeliveryDetail
from walletpass_tui.ui.screens import main as main_screen
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.webhooks.store import Store

WIDE = (160, 48)


def text_of(screen: object, key: str) -> str:
    static = screen.query_one(f"#detail-{key}")  # type: ignore[attr-defined]
    return str(static.render())


async def test_following_reloads_the_detail_once_per_interval_not_per_delivery(
    make_app: Callable[..., WalletPassApp], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(main_screen, "FOLLOW_DETAIL_S", 3600.0)  # one interval lasts the test
    await record_all(store, [attempt(1)])
    loaded: list[DeliveryDetail.Loaded] = []

    def hook(message: object) -> None:
        # The hook sees a message at every node it bubbles through: count each once.
        if isinstance(message, DeliveryDetail.Loaded) and all(message is not m for m in loaded):
            loaded.append(message)

    app = make_app()
    async with app.run_test(size=WIDE, message_hook=hook) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await wait_for(lambda: len(loaded) == 1)  # the newest row, shown at once
        for n in range(2, 12):
            await record_all(store, [attempt(n)])
            await wait_for(lambda n=n: main.event_log.window.rows[0].webhook_id == f"msg_{n:06d}")
        await pilot.pause()
        assert len(loaded) == 1  # ten deliveries followed, no reload in the interval
        assert main.detail.webhook_id == "msg_000001"
        await pilot.press("j")  # a person moving the cursor is answered at once
        await wait_for(lambda: main.detail.webhook_id == "msg_000010" and len(loaded) == 2)


async def test_in_a_flood_the_detail_catches_up_less_often_and_a_key_press_at_once(
    make_app: Callable[..., WalletPassApp], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More rows a frame than anyone reads (a flood): the detail follows the newest row at the
    flood's own pace (one interval lasts the test here), while a slower stream is followed at
    every interval (none here)."""
    monkeypatch.setattr(main_screen, "FOLLOW_DETAIL_S", 0.01)
    monkeypatch.setattr(main_screen, "FLOOD_FOLLOW_S", 3600.0)
    monkeypatch.setattr(delivery_detail, "WITH_ROWS_S", 0.01)
    app = make_app()
    async with app.run_test(size=WIDE) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await wait_for(lambda: main.event_log.total is not None)
        n = 0
        for _ in range(3):  # a slow stream: every delivery followed
            n += 1
            await record_all(store, [attempt(n)])
            await wait_for(lambda n=n: main.detail.webhook_id == f"msg_{n:06d}")
        first = n + FLOOD_ROWS + 10  # the newest of the first flood frame
        for _ in range(3):  # a flood: each commit more than a frame's worth of rows
            batch = [attempt(n + k) for k in range(1, FLOOD_ROWS + 11)]
            n += len(batch)
            await record_all(store, batch)
            await wait_for(lambda n=n: main.event_log.window.rows[0].webhook_id == f"msg_{n:06d}")
            await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert main.detail.webhook_id == f"msg_{first:06d}"  # shown once, then left in peace
        await pilot.press("j", "k")  # a person is here: answered at once
        await wait_for(lambda: main.detail.webhook_id == f"msg_{n:06d}")


async def test_the_followed_detail_is_drawn_with_the_next_frame_of_rows(
    make_app: Callable[..., WalletPassApp], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The detail catching up with the newest row waits for the log's next frame of new rows, so
    the screen is composed once for both; with no new rows it is drawn all the same."""
    monkeypatch.setattr(main_screen, "FOLLOW_DETAIL_S", 3600.0)  # the test ends each interval
    monkeypatch.setattr(delivery_detail, "WITH_ROWS_S", 3600.0)
    app = make_app()
    async with app.run_test(size=WIDE) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await wait_for(lambda: main.event_log.total is not None)
        await record_all(store, [attempt(1)])
        await wait_for(lambda: main.detail.webhook_id == "msg_000001")  # the first at once
        await record_all(store, [attempt(2)])
        await wait_for(lambda: main.event_log.window.rows[0].webhook_id == "msg_000002")
        await pilot.pause()
        main._follow_caught_up()  # the interval ends: the newest is loaded
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert main.detail.webhook_id == "msg_000001"  # loaded, waiting for the next frame
        await record_all(store, [attempt(3)])
        await wait_for(lambda: main.detail.webhook_id == "msg_000002")  # drawn with it
        monkeypatch.setattr(delivery_detail, "WITH_ROWS_S", 0.01)
        await pilot.pause()
        main._follow_caught_up()
        await wait_for(lambda: main.detail.webhook_id == "msg_000003")  # no rows come: drawn


async def test_a_hidden_detail_is_not_loaded_by_live_deliveries(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:  # the detail pane folds away
        main = app.screen
        assert isinstance(main, MainScreen)
        for n in range(1, 8):
            await record_all(store, [attempt(n)])
        await wait_for(lambda: main.event_log.total == 7)
        await pilot.pause()
        assert main.detail.requested_id is None and main.detail.data is None
        await pilot.press("enter")  # on a screen of its own it is loaded
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await wait_for(lambda: screen.detail.webhook_id == "msg_000007")


async def test_a_megabyte_body_is_shown_a_part_at_a_time(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    blob = "".join(f"line {n:06d} " for n in range(87_000))
    body = json.dumps({"type": "pass.activated", "data": {"passId": "p", "blob": blob}}).encode()
    assert len(body) > 1_000_000
    await record_all(store, [attempt(1, body=body)])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.screen.query_one("#log-lines") is not None)
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await wait_for(lambda: screen.detail.data is not None)
        shown = text_of(screen, "body")
        assert len(shown) < PAGE_CHARS + 1024  # one page, not the megabyte
        assert '"passId": "p"' in shown and "line 000000" in shown
        assert "part 1" in shown and "]: next part" in shown
        assert "line 086999" not in shown
        await pilot.press("right_square_bracket")
        await wait_for(lambda: "part 2" in text_of(screen, "body"))
        assert "[: previous part" in text_of(screen, "body")
        await pilot.press("w", "right_square_bracket")  # the raw view pages on its own
        await wait_for(lambda: "part 2" in text_of(screen, "raw"))
        raw = text_of(screen, "raw")
        assert f"characters {PAGE_CHARS:,}-{2 * PAGE_CHARS:,} of a 1019.6 KiB body" in raw
        assert len(raw) < PAGE_CHARS + 1024
        assert "part 2" in text_of(screen, "body")  # the body tab kept its place
        assert app.is_running
