"""Comparing deliveries in the dashboard: D on a redelivery compares it with its first attempt,
on any other delivery with the one of its topic before it; m marks a delivery for D on another;
D works from the detail screen too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ui_helpers import SIZE, attempt, body_for, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.diff import DiffScreen
from walletpass_tui.webhooks.store import Store


def history() -> list:
    first = attempt(1, body=body_for("pass.activated", "pass_0001", balance=5))
    redelivery = replace(
        attempt(2, body=body_for("pass.activated", "pass_0001", balance=7)),
        webhook_id=first.webhook_id,
    )
    other = attempt(3, topic="pass.deactivated")
    later = attempt(4, body=body_for("pass.activated", "pass_0004", tier="gold"))
    return [first, redelivery, other, later]


async def ready(app: WalletPassApp) -> EventLogPane:
    await wait_for(lambda: app.screen.query(EventLogPane))
    log = app.screen.query_one(EventLogPane)
    await wait_for(lambda: log.total == 4)
    return log


async def compared(app: WalletPassApp) -> DiffScreen:
    await wait_for(lambda: isinstance(app.screen, DiffScreen))
    screen = app.screen
    assert isinstance(screen, DiffScreen)
    await wait_for(lambda: screen.diff is not None or screen.said is not None)
    return screen


def lines(screen: DiffScreen) -> list[str]:
    from walletpass_tui.query.diff import diff_lines

    assert screen.diff is not None
    return [line for _, line in diff_lines(screen.diff)]


async def test_d_compares_a_redelivery_with_its_first_attempt_and_m_marks(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history(), one_by_one=True)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app)
        log.view.move_cursor(2)  # newest first: the redelivery (attempt 2 of msg_000001)
        await pilot.press("D")
        screen = await compared(app)
        assert "a redelivery against its first attempt" in str(
            screen.query_one("#template-dialog").border_title
        )
        assert "  ~ data.balance: 5 -> 7" in lines(screen)
        await pilot.press("escape")

        log.view.move_cursor(0)  # the newest: msg_000004, no redelivery: the one before it
        await pilot.press("D")
        screen = await compared(app)
        assert screen.diff is not None and screen.diff.a.attempt == 2
        assert '  + data.tier: "gold"' in lines(screen)
        await pilot.press("escape")

        log.view.move_cursor(3)  # the first delivery: nothing before it
        await pilot.press("D")
        screen = await compared(app)
        assert screen.said is not None and screen.said.startswith("Nothing to compare it with")
        await pilot.press("escape")

        log.view.move_cursor(1)  # msg_000003 (deactivated): mark it, compare the newest with it
        await pilot.press("m")
        log.view.move_cursor(0)
        await pilot.press("D")
        screen = await compared(app)
        assert screen.diff is not None
        assert (screen.diff.a.webhook_id, screen.diff.b.webhook_id) == ("msg_000003", "msg_000004")
        await pilot.press("escape")
        assert app.screen.marked is not None  # the mark stays for further comparisons
        log.view.move_cursor(1)
        await pilot.press("m")  # m on the marked delivery takes the mark away
        assert app.screen.marked is None


async def test_d_from_the_detail_screen(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history(), one_by_one=True)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app)
        log.view.move_cursor(2)
        log.view.focus()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        await pilot.press("D")
        screen = await compared(app)
        assert "  ~ data.balance: 5 -> 7" in lines(screen)
