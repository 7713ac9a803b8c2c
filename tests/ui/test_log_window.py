"""The in-memory window of the event log: bounded, paged at both ends, shifts reported."""

from __future__ import annotations

import pytest
from factories import log_row

from walletpass_tui.ui.view.log_window import PAGE, LogWindow
from walletpass_tui.webhooks.models import LogRow


def rows(ids: range | list[int]) -> list[LogRow]:
    return [log_row(i) for i in ids]


def newest_first(start: int, stop: int) -> list[LogRow]:
    return rows(range(stop, start - 1, -1))


def test_live_rows_go_on_top_and_the_cursor_follows_or_stays() -> None:
    window = LogWindow(capacity=400)
    window.reset(newest_first(1, 10), has_older=False)
    assert window.add_live(newest_first(11, 12), following=True) == 2
    assert window.cursor == 0 and window.current is not None and window.current.id == 12
    window.move_to(3)
    assert window.current is not None and window.current.id == 9
    assert window.add_live(newest_first(13, 15), following=False) == 3
    assert window.current is not None and window.current.id == 9  # the same row, 3 lines lower
    # Rows already there (a page and ``LiveRows`` overlapping) are not repeated.
    assert window.add_live(newest_first(14, 15), following=False) == 0
    assert [r.id for r in window.rows] == list(range(15, 0, -1))


def test_the_window_never_grows_past_capacity_and_drops_the_far_end() -> None:
    window = LogWindow(capacity=400)
    window.reset(newest_first(601, 800), has_older=True)
    window.add_older(newest_first(401, 600), exhausted=False)
    window.move_to(390)  # near the bottom
    shift = window.add_older(newest_first(201, 400), exhausted=False)
    assert len(window) == 400
    assert shift == -200  # dropped above the cursor
    assert window.has_newer and window.rows[0].id == 600
    assert window.current is not None and window.current.id == 410
    # Following and over capacity: the oldest rows go instead.
    window.reset(newest_first(1, 400), has_older=False)
    window.add_live(newest_first(401, 450), following=True)
    assert len(window) == 400 and window.rows[0].id == 450 and window.has_older


def test_paging_back_to_the_top() -> None:
    window = LogWindow(capacity=400)
    window.reset(newest_first(1, 200), has_older=False)
    window.has_newer = True
    window.add_live(newest_first(500, 501), following=False)  # away from the top: only counted
    assert window.unseen == 2 and window.rows[0].id == 200
    shift = window.add_newer(rows(range(201, 201 + PAGE)), reached_top=False)
    assert shift == PAGE and window.rows[0].id == 400 and window.has_newer
    window.add_newer(rows(range(401, 450)), reached_top=True)
    assert not window.has_newer and window.unseen == 0 and window.rows[0].id == 449
    assert len(window) == 400


def test_capacity_holds_at_least_two_pages() -> None:
    with pytest.raises(ValueError):
        LogWindow(capacity=PAGE)
