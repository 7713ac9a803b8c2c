"""Field queries in the dashboard's filter: the box offers the known paths (with their type and
presence) and a few-valued field's values as the user types; Tab takes one; a path no delivery
has shown is said under the log, with the nearest known ones, and the rest still filters."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Input
from ui_helpers import SIZE, attempt, body_for, record_all, type_into, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.widgets.filter_completions import FilterCompletions
from walletpass_tui.webhooks.store import Store


def history() -> list:
    rows = []
    for n in range(1, 21):
        platform = ("apple", "google")[n % 2]
        extra = {"platform": platform, "balance": n}
        if n % 4 == 0:
            extra["loyaltyTier"] = "gold"
        rows.append(attempt(n, body=body_for("pass.activated", f"pass_{n:04d}", **extra)))
    return rows


async def ready(app: WalletPassApp) -> EventLogPane:
    await wait_for(lambda: app.screen.query(EventLogPane))
    log = app.screen.query_one(EventLogPane)
    await wait_for(lambda: log.total == 20)
    runtime = app.context.runtime  # type: ignore[attr-defined]
    # What the runtime learns and indexes right after the commits: the completions' source.
    assert await runtime.field_indexer.settled(30)
    await runtime.learner.asettled()
    return log


async def test_the_filter_completes_paths_and_values_and_tab_takes_one(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history())
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app)
        await pilot.press("slash")
        field = log.query_one("#log-filter", Input)
        completions = log.query_one(FilterCompletions)
        await type_into(pilot, field, "data.p")
        await wait_for(lambda: completions.display)
        assert completions.completion is not None
        offered = {c.label: c.detail for c in completions.completion.choices}
        assert list(offered) == ["data.passId", "data.platform"]
        assert offered["data.platform"] == "string · 100% · apple | google"
        await pilot.press("down", "tab")
        assert field.value == "data.platform"
        await pilot.press(":")
        await wait_for(lambda: completions.display)
        assert completions.completion is not None
        assert [c.label for c in completions.completion.choices] == ["apple", "google"]
        await pilot.press("down")
        await pilot.press("tab")
        assert field.value == "data.platform:google"
        await wait_for(lambda: log.total == 10)
        assert not completions.display  # the value is whole: nothing more to offer
        await type_into(pilot, field, "data.platform:")
        await wait_for(lambda: completions.display)
        await pilot.press("escape")  # closes the completions first, keeps the filter
        assert not completions.display and field.value == "data.platform:"
        await type_into(pilot, field, "data.platform:google has:data.loy")
        await pilot.press("tab")
        assert field.value == "data.platform:google has:data.loyaltyTier"
        await pilot.press("enter")
        await wait_for(lambda: log.total == 0)  # tiers are on even rows, google on odd ones
        assert not completions.display


async def test_an_unknown_path_is_said_with_the_nearest_and_the_rest_filters(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history())
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app)
        await pilot.press("slash")
        field = log.query_one("#log-filter", Input)
        await type_into(pilot, field, "data.balance>15 data.platfrom:google")
        await wait_for(lambda: log.total == 5)  # the balance term still filters
        assert log.filter_problem == (
            "No delivery has shown a field data.platfrom; the nearest known: data.platform."
        )
        assert "nearest known: data.platform" in str(log.border_subtitle)
        await type_into(pilot, field, "data.balance>15 data.platform:google")
        await wait_for(lambda: log.total == 2)
        assert log.filter_problem is None


async def test_an_unknown_path_is_named_beside_a_term_that_does_not_parse(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, history())
    app = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        log = await ready(app)
        await pilot.press("slash")
        field = log.query_one("#log-filter", Input)
        await type_into(pilot, field, "data.balanc:5 [b]")
        await pilot.press("enter")
        await wait_for(lambda: log.filter_problem is not None and log.total == 20)
        # Neither the typo nor the term that does not parse filters: every delivery is listed.
        assert log.filter_problem == (
            "No delivery has shown a field data.balanc; the nearest known: data.balance."
            ' · [...: array items are written [] (any item), a key as ["name"]'
        )
        assert "nearest known: data.balance" in str(log.border_subtitle)
        await pilot.press("slash")
        await type_into(pilot, field, 'data["[red]zz[/red]"]:1 data.balance>15 [b]x[/b]')
        await pilot.press("enter")
        await wait_for(lambda: log.total == 5)  # the known term still filters
        assert str(log.filter_problem).startswith(
            'No delivery has shown a field data["[red]zz[/red]"]; '
        )
        assert "array items are written" in str(log.filter_problem)
        assert str(log.border_subtitle).startswith("⚠ No delivery has shown a field data[")


async def test_a_path_the_completion_writes_with_escapes_filters(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    """Keys whose paths are written with escapes (JSON's \\u001b, a raw line separator): Tab takes
    one and the filter reads it as that field, never "no delivery has shown" it."""
    rows = history()
    odd = {"pass\x1b[2Jid": "x", "ls\u2028sep": 5}
    rows[0] = attempt(1, body=body_for("pass.activated", "pass_0001", **odd))
    rows[1] = attempt(2, body=body_for("pass.activated", "pass_0002", **{"pass\x1b[2Jid": "y"}))
    await record_all(store, rows)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = await ready(app)
        await pilot.press("slash")
        field = log.query_one("#log-filter", Input)
        completions = log.query_one(FilterCompletions)
        for chosen, value, total in (
            ('data["pass\\u001b[2Jid"]', "x", 1),
            ('data["ls\u2028sep"]', "5", 1),  # the schema prints it data["ls\u2028sep"]
        ):
            await type_into(pilot, field, "data[")
            await wait_for(lambda: completions.display)
            assert completions.completion is not None
            labels = [c.label for c in completions.completion.choices]
            assert chosen in labels, labels
            for _ in range(labels.index(chosen)):  # the first is highlighted
                await pilot.press("down")
            await pilot.press("tab")
            assert field.value == chosen
            await pilot.press(":", *value)
            await pilot.press("enter")
            await wait_for(lambda t=total: log.total == t)  # type: ignore[misc]
            assert log.filter_problem is None
        # Typed as the schema prints it (escaped), it is the same field.
        await pilot.press("slash")
        await type_into(pilot, field, 'data["ls\\u2028sep"]:5 data["pass\\u001b[2Jid"]:x')
        await pilot.press("enter")
        await wait_for(lambda: log.total == 1)
        assert log.filter_problem is None
