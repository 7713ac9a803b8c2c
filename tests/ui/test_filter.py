"""Filtering the event log with ``/``: text (full-text search), topic:, verdict:, live rows."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Input
from ui_helpers import SIZE, attempt, body_for, record_all, type_into, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.webhooks.models import REJECTED
from walletpass_tui.webhooks.store import Store


def history() -> list:
    rows = []
    for n in range(1, 41):
        topic = "pass.activated" if n % 2 else "pass.deactivated"
        verdict = REJECTED if n % 10 == 0 else "verified"
        body = body_for(topic, f"pass_{n:04d}", note="harbour ferry" if n == 7 else "coffee")
        rows.append(attempt(n, topic=topic, verdict=verdict, body=body))
    return rows


async def ready(app: WalletPassApp, total: int) -> EventLogPane:
    await wait_for(lambda: app.screen.query(EventLogPane))
    log = app.screen.query_one(EventLogPane)
    await wait_for(lambda: log.total == total)
    return log


def ids(log: EventLogPane) -> list[str | None]:
    return [row.webhook_id for row in log.window.rows]


async def test_filter_by_text_topic_and_verdict_then_clear(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history())
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app, 40)
        await pilot.press("slash")
        field = log.query_one("#log-filter", Input)
        assert field.has_focus

        await type_into(pilot, field, "harbour")  # a word only one body holds
        await wait_for(lambda: log.total == 1)
        assert ids(log) == ["msg_000007"]
        assert "matching harbour" in str(log.border_title)

        await type_into(pilot, field, "pass_003")  # a prefix of a pass id
        await wait_for(lambda: log.total == 10)
        assert ids(log)[0] == "msg_000039"

        await type_into(pilot, field, "topic:deactivated verdict:rejected")
        await wait_for(lambda: log.total == 4)
        assert ids(log) == ["msg_000040", "msg_000030", "msg_000020", "msg_000010"]
        await pilot.press("enter")
        assert log.view.has_focus

        await pilot.press("escape")
        await wait_for(lambda: log.total == 40)
        assert not field.display and log.filter.empty


async def test_live_rows_are_matched_against_the_filter(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history())
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app, 40)
        await pilot.press("slash")
        await type_into(pilot, log.query_one("#log-filter", Input), "topic:activated ferry")
        await wait_for(lambda: log.total == 1)
        ferry = body_for("pass.activated", "pass_0100", note="ferry to the island")
        await record_all(
            store,
            [
                attempt(100, body=ferry),
                attempt(101, topic="pass.deactivated", body=ferry),  # wrong topic
                attempt(102),  # no ferry
            ],
        )
        await wait_for(lambda: log.total == 2)
        await pilot.pause(0.1)
        assert ids(log) == ["msg_000100", "msg_000007"]


async def test_keys_cycle_the_verdict_and_topic_and_bad_terms_are_explained(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history())
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app, 40)
        await pilot.press("v")  # verified only
        await wait_for(lambda: log.total == 36)
        await pilot.press("v")  # rejected only
        await wait_for(lambda: log.total == 4)
        await pilot.press("t")  # and pass.activated: none of the rejected ones
        await wait_for(lambda: log.total == 0)
        assert "No delivery matches the filter" in str(log.query_one("#log-notice").render())
        await pilot.press("escape")
        await wait_for(lambda: log.total == 40)

        await pilot.press("slash")
        await type_into(pilot, log.query_one("#log-filter", Input), "topic:nope")
        await wait_for(lambda: log.filter_problem is not None)
        assert "unknown topic 'nope'" in str(log.border_subtitle).lower()
