"""The payload schemas in the dashboard: the Schema screen (S), the log's drift mark, the header's
drift count, the findings on top of a delivery's detail. The real app over a real SQLite history
in tmp_path; the real schema learner learns what is stored and finds drift in it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static
from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.schemas.model import TEMPLATES
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.panes.delivery_detail import DeliveryDetail
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.screens.schema import (
    LEARNING_OFF,
    NOTHING_FOR_TEMPLATES,
    NOTHING_LEARNED,
    SchemaScreen,
)
from walletpass_tui.ui.view.schema_view import DriftMarks, presence_bar, presence_text
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.store import Store

DEADLINE_S = 30.0  # "did not hang" only
HOSTILE_KEY = "[red]boom[/red]"
HOSTILE_VALUE = "\x1b[31m[bold]x"


def body(n: int, serial: Any = None, **extra: Any) -> bytes:
    data = {
        "passId": f"pass_{n:04d}",
        "serialNumber": serial if serial is not None else f"{n:09d}",
        HOSTILE_KEY: HOSTILE_VALUE,
        **extra,
    }
    return json.dumps({"type": "pass.activated", "data": data}).encode()


def steady(count: int = 20) -> list[Attempt]:
    return [attempt(n, body=body(n)) for n in range(1, count + 1)]


def odd(n: int = 99) -> Attempt:
    """A delivery whose serialNumber became an integer: type_changed, breaking."""
    return attempt(n, body=body(n, serial=7))


def plain_cells(table: DataTable[Any]) -> list[list[str]]:
    rows = []
    for index in range(table.row_count):
        cells = table.get_row_at(index)
        assert all(isinstance(c, Text) for c in cells), "cells are Text, never markup strings"
        rows.append([c.plain for c in cells])
    return rows


async def open_schema(app: WalletPassApp, pilot: Any, key: str = "S") -> SchemaScreen:
    await pilot.press(key)
    await wait_for(lambda: isinstance(app.screen, SchemaScreen), timeout=DEADLINE_S)
    screen = app.screen
    assert isinstance(screen, SchemaScreen)
    await wait_for(lambda: screen.reads > 0, timeout=DEADLINE_S)
    return screen


async def main_screen(app: WalletPassApp) -> MainScreen:
    await wait_for(lambda: isinstance(app.screen, MainScreen), timeout=DEADLINE_S)
    await wait_for(lambda: app.live.drift_marks is not None, timeout=DEADLINE_S)
    assert isinstance(app.screen, MainScreen)
    return app.screen


def marks(app: WalletPassApp) -> DriftMarks:
    found = app.live.drift_marks
    assert found is not None
    return found


async def test_live_drift_marks_the_row_counts_in_the_header_and_tops_the_detail(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)):
        main = await main_screen(app)
        log = main.query_one(EventLogPane)
        await record_all(store, steady())
        stored = await record_all(store, [odd()])
        drifted = stored[0].id
        assert drifted is not None
        # The learner looks at the delivery after its commit and the runtime says it drifted.
        await wait_for(lambda: drifted in marks(app), timeout=DEADLINE_S)
        await wait_for(lambda: log.total == 21, timeout=DEADLINE_S)

        header = main.query_one(StatusBar)
        await wait_for(lambda: "Δ 1 (S)" in str(header.render()), timeout=DEADLINE_S)

        view = log.view
        lines = {
            row.id: view._render_row(row, False, 130, row.id in view.drift_marks).text
            for row in view.visible_rows()
        }
        assert "✓ verified Δ" in lines[drifted]
        assert sum("Δ" in line for line in lines.values()) == 1  # the steady ones are not marked

        # The detail of the drifted delivery starts with its finding.
        view.move_cursor(0)
        detail = main.query_one("#detail-pane", DeliveryDetail)
        await wait_for(
            lambda: detail.data is not None and detail.data.attempt.id == drifted,
            timeout=DEADLINE_S,
        )
        await wait_for(lambda: bool(detail.data and detail.data.drift), timeout=DEADLINE_S)
        shown = detail.query_one("#detail-drift", Static)
        assert shown.display
        text = str(shown.render())
        assert "breaking" in text and "serialNumber" in text and "string -> integer" in text
        assert "type_changed" in text
        # ... and a steady delivery's detail has none.
        view.move_cursor(1)
        await wait_for(
            lambda: detail.data is not None and detail.data.attempt.id != drifted,
            timeout=DEADLINE_S,
        )
        assert not detail.query_one("#detail-drift", Static).display


async def test_schema_screen_lists_topics_and_fields_and_opens_the_drifting_delivery(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    stored = await record_all(store, [*steady(), odd()], one_by_one=True)
    drifted = stored[-1].id
    app = make_app()
    async with app.run_test(size=(150, 44)) as pilot:
        await main_screen(app)
        # Stored before the dashboard started: learned quietly, then counted from the file.
        await wait_for(lambda: drifted in marks(app), timeout=DEADLINE_S)
        screen = await open_schema(app, pilot)
        await wait_for(lambda: screen.drift_table.row_count == 1, timeout=DEADLINE_S)

        groups = plain_cells(screen.groups_table)
        assert groups[0][0] == "pass.activated" and groups[0][1] == "21"
        assert "1" in groups[0][2] and "Δ" in groups[0][2]

        fields = {row[0].lstrip("· "): row for row in plain_cells(screen.fields_table)}
        serial = fields["serialNumber"]
        assert serial[1] == "▇▇▇▇▇  100%"
        assert serial[2] == "string(20) integer(1)"
        assert serial[3] == "Δ string -> integer"
        assert serial[4] == "000000001"
        assert fields["data"][0] == "data"  # the parent ...
        assert fields["passId"][0] == "· passId"  # ... its children under it

        # Hostile keys and values are shown literally: escaped, never read as markup.
        hostile = next(row for key, row in fields.items() if "[red]boom[/red]" in key)
        assert "\\x1b[31m[bold]x" in hostile[4]
        title = str(screen.query_one("#schema-title", Static).render())
        assert "pass.activated" in title and "21 samples" in title

        finding = plain_cells(screen.drift_table)[0]
        assert finding[0] == "breaking" and finding[1] == "data.serialNumber"
        assert finding[5] == stored[-1].webhook_id

        # Enter on the finding opens the delivery that showed it.
        screen.drift_table.focus()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen), timeout=DEADLINE_S)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        assert detail.attempt_id == drifted
        await wait_for(lambda: detail.detail.data is not None, timeout=DEADLINE_S)
        await pilot.press("escape")
        await wait_for(lambda: app.screen is screen, timeout=DEADLINE_S)


async def test_schema_screen_follows_learning_and_says_when_nothing_is_learned(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await main_screen(app)
        screen = await open_schema(app, pilot)
        notice = screen.query_one("#schema-notice", Static)
        assert notice.display and str(notice.render()) == NOTHING_LEARNED
        # Deliveries arriving while it is open are learned, and it reads again.
        await record_all(store, steady(3))
        await wait_for(lambda: screen.groups_table.row_count == 1, timeout=DEADLINE_S)
        assert not notice.display
        # Drift is looked for from the 20th on: until then it says how far learning got.
        await wait_for(
            lambda: plain_cells(screen.groups_table)[0][1] == "3 of 20", timeout=DEADLINE_S
        )
        title = str(screen.query_one("#schema-title", Static).render())
        assert "3 samples" in title and "learning, 3 of 20" in title


async def test_with_no_schemas_the_screen_says_learning_is_off(
    settings: Settings, store: Store, registry: EndpointRegistry
) -> None:
    await record_all(store, steady(3))

    async def open_runtime() -> DeliveryRuntime:
        runtime = DeliveryRuntime(
            settings, DeliverySetup(learn_schemas=False), store=store, registry=registry
        )
        await runtime.open()
        return runtime

    app = build_app(open_runtime, receiver_display="127.0.0.1:8787/webhooks")
    async with app.run_test(size=(140, 40)) as pilot:
        await main_screen(app)
        assert not marks(app).enabled
        screen = await open_schema(app, pilot)
        notice = screen.query_one("#schema-notice", Static)
        assert notice.display and str(notice.render()) == LEARNING_OFF
        assert "learning is off" in str(screen.query_one("#schema-title", Static).render())


async def test_templates_pane_key_opens_the_templates_fields(
    make_app: Callable[..., WalletPassApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        main = await main_screen(app)
        await wait_for(lambda: main.assembled, timeout=DEADLINE_S)
        main.action_show_pane("templates")
        await wait_for(lambda: main.templates.query_one("#templates-table").has_focus)
        screen = await open_schema(app, pilot)
        assert screen.wanted == TEMPLATES
        assert screen.fields_table.border_subtitle == NOTHING_FOR_TEMPLATES
        # Templates learned (as the pane does after listing them) show up on the screen.
        found = await app.runtime.learn_templates(
            [{"id": "tpl_1", "name": "[blink]Gold[/blink]", "passType": "storeCard"}]
        )
        assert found == []
        screen.read()
        await wait_for(lambda: screen.fields_table.row_count > 1, timeout=DEADLINE_S)
        paths = [row[0].lstrip("· ") for row in plain_cells(screen.fields_table)]
        assert "name" in paths and "passType" in paths
        names = next(row for row in plain_cells(screen.fields_table) if row[0] == "name")
        assert names[4] == "[blink]Gold[/blink]"


@pytest.mark.parametrize(
    ("share", "bar", "text"),
    [
        (1.0, "▇▇▇▇▇", "100%"),
        (0.8, "▇▇▇▇░", "80.0%"),
        (0.999, "▇▇▇▇▇", "100%"),
        (0.97, "▇▇▇▇░", "97.0%"),
        (0.0, "░░░░░", "0%"),
        (0.19, "░░░░░", "19.0%"),
    ],
)
def test_presence_bar(share: float, bar: str, text: str) -> None:
    assert presence_bar(share) == bar
    assert presence_text(share) == text


def test_drift_marks_count_events_and_what_the_file_says() -> None:
    marks = DriftMarks()
    assert 5 not in marks and marks.findings is None
    assert not marks.add(5, [])
    assert marks.reset([1, 2], 3) == {1, 2}
    assert marks.reset([2, 3], 3) == {1, 3}
    assert 2 in marks and 1 not in marks and marks.findings == 3


async def test_a_value_set_is_shown_with_each_values_share_escaped(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, steady(50))
    app = make_app()
    async with app.run_test(size=(170, 44)) as pilot:
        await main_screen(app)
        screen = await open_schema(app, pilot)
        await wait_for(lambda: screen.fields_table.row_count > 4, timeout=DEADLINE_S)
        fields = {row[0].lstrip("· "): row for row in plain_cells(screen.fields_table)}
        assert fields["type"][4] == '"pass.activated" 100%'
        hostile = next(row for key, row in fields.items() if "[red]boom[/red]" in key)
        assert hostile[4] == '"\\u001b[31m[bold]x" 100%'  # escaped, never markup
        assert fields["passId"][4] == "pass_0001"  # no set: the first value
