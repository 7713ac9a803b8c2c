"""Requests "Check my app" sent are kept in the history like replays; the log marks them with a
word (not a colour alone) and the filter hides them (``source:received``) or shows only them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from ui_helpers import SECRET, attempt, record_all, type_into, wait_for

from walletpass_tui.check.cases import build_cases
from walletpass_tui.check.runner import CheckOptions, run_check
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.view.log_columns import cell_text
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.webhooks.models import CHECK, RECEIVED, LogFilter
from walletpass_tui.webhooks.store import Store


@pytest.fixture
async def your_app(start_server: Any) -> Any:
    server = await start_server()

    async def ok(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.Response(status=204)

    server.reply("POST", "/webhooks", ok)
    return server


async def checked_history(store: Store, your_app: Any) -> None:
    """A delivery the service sent, then two requests the check sent to a real local app."""
    await record_all(store, [attempt(1)])
    options = CheckOptions(your_app.url + "/webhooks", SECRET, ("pass.activated",))
    cases = build_cases(SECRET, options.topics)[:2]
    report = await run_check(options, store=store, cases=cases)
    assert len(report.results) == 2
    await store.settled()


def rendered_rows(app: WalletPassApp) -> list[str]:
    view = app.screen.query_one(LogLines)
    return ["".join(s.text for s in view.render_line(y)) for y in range(len(view.visible_rows()))]


async def test_check_requests_say_so_in_the_log_and_the_filter_hides_them(
    make_app: Callable[..., WalletPassApp], store: Store, your_app: Any
) -> None:
    await checked_history(store, your_app)
    # The store tells them apart: the same filter the dashboard uses, counted in SQL.
    assert await store.count(LogFilter(source=RECEIVED)) == 1
    assert await store.count(LogFilter(source=CHECK)) == 2

    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 3)
        rows = log.window.rows
        assert [cell_text(r, "verdict") for r in rows] == [
            "⚑ check pass",
            "⚑ check pass",
            "✓ verified",
        ]
        await pilot.pause()
        lines = rendered_rows(app)
        assert "⚑ check pass" in lines[0] and "✓ verified" in lines[2], lines

        await pilot.press("slash")
        await type_into(pilot, log.filter_input, "source:received")
        await wait_for(lambda: log.total == 1 and len(log.window) == 1)
        assert log.window.rows[0].webhook_id == "msg_000001"
        assert "source:received" in str(log.border_title)

        await type_into(pilot, log.filter_input, "source:check")
        await wait_for(lambda: log.total == 2 and len(log.window) == 2)

        # A check run while the log hides them adds no row; a delivery does.
        await type_into(pilot, log.filter_input, "source:received")
        await wait_for(lambda: log.total == 1)
        await pilot.press("enter")
        options = CheckOptions(your_app.url + "/webhooks", SECRET, ("pass.activated",))
        await run_check(options, store=store, cases=build_cases(SECRET, options.topics)[:1])
        await record_all(store, [attempt(9)])
        await wait_for(lambda: log.window.rows[0].webhook_id == "msg_000009")
        assert [r.webhook_id for r in log.window.rows] == ["msg_000009", "msg_000001"]


async def test_the_palette_hides_check_requests(
    make_app: Callable[..., WalletPassApp], store: Store, your_app: Any
) -> None:
    await checked_history(store, your_app)
    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 3)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"hide check")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(lambda: log.filter.source == RECEIVED and log.total == 1)
