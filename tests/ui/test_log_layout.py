"""The log's columns use the width they are given: ids as long as they are, the note with the rest,
and Ctrl+B gives the log the whole width."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.view.log_columns import layout
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.webhooks.store import Store

PASS_ID = "pass_HokSgLQ49ieEw9xYgFMp"  # 25 characters, as the service's look
ENDPOINT_ID = "ep_fAWu2ptPF0ZCubJNIBRbK37e"  # 27
WEBHOOK_ID = "msg_SKWpFQBLwnM6VsBo4nlY6eGB"  # 28


def widths(width: int, wants: dict[str, int] | None) -> dict[str, int]:
    return {c.key: n for c, n in layout(width, wants)}


def test_spare_width_goes_to_the_ids_their_values_need_then_to_the_note() -> None:
    wants = {"pass": len(PASS_ID), "endpoint": len(ENDPOINT_ID), "webhook": len(WEBHOOK_ID)}
    wide = widths(136, {**wants, "reason": 0})
    assert wide["pass"] >= len(PASS_ID)
    assert wide["endpoint"] >= len(ENDPOINT_ID)
    assert wide["webhook"] >= len(WEBHOOK_ID)
    # An empty note column gave its room to the ids rather than stand empty.
    assert "reason" not in wide
    # With notes to show and room for everything, the note takes what the ids leave.
    noted = widths(200, {**wants, "reason": 30})
    assert noted["pass"] >= len(PASS_ID) and noted["endpoint"] >= len(ENDPOINT_ID)
    assert noted["reason"] >= 30
    for width in (60, 80, 120, 136, 200, 260):
        for measured in (None, {}, wants, {**wants, "reason": 80}):
            chosen = layout(width, measured)
            assert sum(n for _, n in chosen) + len(chosen) - 1 <= width
            assert {"time", "verdict", "webhook"} <= {c.key for c, _ in chosen}
    # Too narrow for every id: each is cut about as much as the others, none left at its least.
    tight = widths(110, wants)
    assert min(tight["pass"], tight["endpoint"], tight["webhook"]) >= 18


def row_text(app: WalletPassApp) -> str:
    view = app.screen.query_one(LogLines)
    return "".join(segment.text for segment in view.render_line(0))


async def test_at_200_columns_whole_ids_are_shown_and_ctrl_b_gives_the_log_the_width(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    long_ids = replace(attempt(1), pass_id=PASS_ID, endpoint_id=ENDPOINT_ID, webhook_id=WEBHOOK_ID)
    await record_all(store, [long_ids])
    app = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 1)
        await pilot.pause()
        line = row_text(app)
        assert PASS_ID in line and ENDPOINT_ID in line and WEBHOOK_ID in line, line

    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 1)
        await wait_for(lambda: bool(app.screen.query("#templates")))
        await pilot.pause()
        left = app.screen.query_one("#left")
        before = log.view.size.width
        assert left.display and PASS_ID not in row_text(app)
        await pilot.press("ctrl+b")
        await wait_for(lambda: log.view.size.width > before)
        await pilot.pause()
        assert not left.display
        line = row_text(app)
        assert PASS_ID in line and ENDPOINT_ID in line and WEBHOOK_ID in line, line
        await pilot.press("ctrl+b")
        await wait_for(lambda: log.view.size.width == before)
