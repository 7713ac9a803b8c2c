"""A stream of deliveries redraws what changed: each new row is drawn once and the header's
counts follow, so watching a busy receiver costs the dashboard little."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from ui_helpers import SIZE, attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.models import LogRow
from walletpass_tui.webhooks.store import Store


async def test_streamed_rows_are_each_drawn_once_and_the_counts_follow(
    make_app: Callable[..., WalletPassApp], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows_drawn: Counter[tuple[int, bool]] = Counter()
    render_row = LogLines._render_row

    def counted_row(self: LogLines, row: LogRow, selected: bool, *args: Any) -> Any:
        rows_drawn[(row.id, selected)] += 1
        return render_row(self, row, selected, *args)

    monkeypatch.setattr(LogLines, "_render_row", counted_row)

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total is not None)
        await pilot.pause()
        n = 0
        for index in range(8):  # batches, each drawn in frames of its own
            batch = [attempt(n + k) for k in range(15)]
            n += len(batch)
            stored = await record_all(store, batch)
            newest = stored[-1].id
            await wait_for(lambda: log.view.visible_rows()[0].id == newest, timeout=10)  # noqa: B023
            await pilot.pause()
            if index == 0:  # the first rows set the columns' widths; from now on they stay
                rows_drawn.clear()
        header = app.screen.query_one(StatusBar)
        await wait_for(lambda: header.stats is not None and header.stats.received == n)
        shown = str(header.render())
        assert f"{n:,} in" in shown or f"{n:,} received" in shown
        # Every row on screen was drawn, each at most once in each of its two looks (the newest
        # selected while followed, then plain once a newer one came).
        on_screen = {row.id for row in log.view.visible_rows()}
        assert on_screen <= {row_id for row_id, _ in rows_drawn}
        assert max(rows_drawn.values()) == 1
