"""A stream of deliveries redraws what changed: each new row is drawn once, the header's counts
and the log's title follow, and what did not change is not drawn again, so watching a busy
receiver costs the dashboard little."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from textual.geometry import Region
from textual.widget import Widget
from ui_helpers import SIZE, attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.models import LogRow, Stats
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


async def test_a_stream_redraws_the_counts_and_the_log_title_line_not_what_did_not_change(
    make_app: Callable[..., WalletPassApp], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While rows stream in, the header sends only its changed count cells to the screen, the
    log's pane only its title line, and the panes on the left are not drawn again at all."""
    header_regions: list[Region | None] = []
    refresh = StatusBar.refresh

    def recorded(self: StatusBar, *regions: Region, **kwargs: Any) -> Any:
        header_regions.extend(regions or [None])  # None: the whole line
        return refresh(self, *regions, **kwargs)

    pane_lines: Counter[str] = Counter()
    render_lines = Widget.render_lines

    def counted_lines(self: Widget, crop: Region) -> Any:
        pane_lines[type(self).__name__] += 1
        return render_lines(self, crop)

    pane_content = EventLogPane.render_line

    def pane_line(self: EventLogPane, y: int) -> Any:
        pane_lines["EventLogPane content line"] += 1
        return pane_content(self, y)

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main = app.screen
        log = main.query_one(EventLogPane)
        header = main.query_one(StatusBar)
        await wait_for(lambda: log.total is not None and header.stats is not None)
        n = 0
        for round_no in range(4):
            stored = await record_all(store, [attempt(n + k) for k in range(12)])
            n += 12
            newest = stored[-1].id
            await wait_for(lambda: log.view.visible_rows()[0].id == newest, timeout=10)  # noqa: B023
            await wait_for(lambda: header.stats is not None and header.stats.received == n)  # noqa: B023
            await pilot.pause()
            if round_no == 0:  # from here on: what the stream redraws
                monkeypatch.setattr(StatusBar, "refresh", recorded)
                monkeypatch.setattr(Widget, "render_lines", counted_lines)
                monkeypatch.setattr(EventLogPane, "render_line", pane_line)
        assert f"{n:,} in" in str(header.render()) or f"{n:,} received" in str(header.render())
        assert f"Events {n:,}" in str(log.border_title)
        width = header.size.width
        left_words = len(str(header.render()).rstrip().rsplit("  ", 4)[0])
        assert header_regions, "the counts were drawn"
        for region in header_regions:  # only cells right of the receiver's words
            assert region is not None and region.width < width and region.x >= left_words
        # The pane's title line is drawn, not its content lines; nothing on the left at all.
        assert pane_lines["EventLogPane"] >= 3 and pane_lines["EventLogPane content line"] == 0
        assert pane_lines["TemplatesPane"] == pane_lines["EndpointsPane"] == 0
        # A count set again unchanged draws nothing.
        header_regions.clear()
        header.stats = Stats(**vars(header.stats))
        await pilot.pause()
        assert header_regions == []
