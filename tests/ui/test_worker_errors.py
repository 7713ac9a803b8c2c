"""A worker that fails is reported in the pane that ran it: a damaged history database shows a
message in the event log instead of leaving it on "…", and the detail says it cannot read."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from ui_helpers import SIZE, attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.widgets.notice import Notice
from walletpass_tui.ui.worker_errors import failure_text
from walletpass_tui.webhooks.models import StoreError
from walletpass_tui.webhooks.store import Store


def damage(path: Path) -> None:
    """Fold the write-ahead log into the file, then overwrite its pages past the header: what a
    disk or another program corrupting it looks like to SQLite."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xff" * 4096 * 32)


async def test_a_damaged_history_is_reported_in_the_event_log(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(n) for n in range(1, 60)])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 59)
        damage(store.path)
        await pilot.press("v")  # filter on a verdict: the log reloads from the store
        await wait_for(lambda: log.problem is not None)
        notice = log.query_one("#log-notice", Notice)
        assert notice.display and notice.notice is not None
        assert notice.notice.headline == "The history cannot be read."
        assert "damaged" in (notice.notice.hint or "")
        assert str(store.path) in (notice.notice.hint or "")
        title = str(log.border_title)
        assert "unreadable" in title and "…" not in title
        await pilot.press("f")  # try again: still damaged, still said, the app still runs
        await wait_for(lambda: log.problem is not None)
        assert app.is_running


def test_the_failure_sentence_is_the_store_s_own_explanation() -> None:
    explained = StoreError("The history database /x is locked by another program; close it.")
    assert failure_text(explained) == str(explained)
    assert failure_text(ValueError("bad")) == "ValueError: bad"
    assert failure_text(None) == "It stopped unexpectedly."
