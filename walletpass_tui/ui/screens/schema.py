"""The Schema screen (``S``): what was learned of each topic's payload, and the drift found in it.

Topics on the left (samples, drift findings), the selected one's field tree on the right (each
path under its parent, a presence bar, its types with counts, its first value), its drift
findings below; Enter on a finding opens the delivery that showed it first. Everything on it came
from the wire: it is shown as plain text, never as markup.

The schema file is read in a thread, again whenever the learner has learned more (at most once a
second, see ``drift_watch``). Loaded when first opened.
"""

from __future__ import annotations

import asyncio

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from walletpass_tui.runtime.protocol import Runtime
from walletpass_tui.schemas.drift import DRIFT_AFTER
from walletpass_tui.schemas.model import TEMPLATES, GroupKey
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.schemas.records import DriftRecord, FieldInfo, GroupSummary
from walletpass_tui.text import format_ms, one_line, printable
from walletpass_tui.ui.drift_watch import learns
from walletpass_tui.ui.messages import live_signals
from walletpass_tui.ui.view.drift_text import change_text
from walletpass_tui.ui.view.log_columns import DRIFT_MARK
from walletpass_tui.ui.view.schema_view import (
    SchemaData,
    presence_bar,
    presence_text,
    read_schema,
    types_text,
    values_text,
    worst_by_path,
)
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.ui.worker_errors import ReportsWorkerErrors, failure_text

LEARNING_OFF = (
    "Schema learning is off in this dashboard (--no-schemas): no payload fields are learned and "
    "no drift is looked for. Run it without --no-schemas to learn them."
)
TREE_STEP = "· "  # drawn, not blank: a child stays under its parent however it is shown
NOTHING_LEARNED = (
    "Nothing learned yet: each topic's payload fields are learned from verified deliveries as "
    "they arrive, and the pass templates' when the Templates pane lists them."
)
NOTHING_FOR_TEMPLATES = (
    "Nothing learned of the pass templates yet: they are learned when the Templates pane "
    "lists them (r refreshes it; the service's API key is needed)."
)


def group_of(name: str) -> GroupKey | None:
    """``templates``, a stored group key (``topic:pass.activated``), or "" for the default."""
    if not name:
        return None
    if name == "templates":
        return TEMPLATES
    try:
        return GroupKey.from_stored(name)
    except ValueError:  # not a stored group name: none
        return None


class SchemaScreen(ReportsWorkerErrors, Screen[None]):
    CSS_PATH = "schema.tcss"
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="schema.close"),
        Binding(
            "t",
            "templates",
            "Templates",
            id="schema.templates",
            tooltip="The pass templates' fields (learned from the Templates pane's list)",
        ),
        Binding(
            "D",
            "focus_drift",
            "Drift",
            id="schema.drift",
            tooltip="The drift findings: Enter opens the delivery that showed one first",
        ),
    ]
    COMPONENT_CLASSES = {
        "schema--label",
        "schema--info",
        "schema--warning",
        "schema--breaking",
        "schema--bar",
        "schema--value",
    }

    def __init__(self, runtime: Runtime, *, group: str = "") -> None:
        super().__init__(classes="schema-screen")
        self.runtime = runtime
        self.reader = SchemaReader(runtime.store.path)
        self.learning = learns(runtime)
        self.wanted: GroupKey | None = group_of(group)
        self.data: SchemaData | None = None  # what is on screen
        self.reads = 0  # readings shown (tests wait for them)
        self._stale = False

    def compose(self) -> ComposeResult:
        yield Static(id="schema-title")
        yield Static(id="schema-notice")
        with Horizontal(id="schema-columns"):
            groups: DataTable[Text] = DataTable(id="schema-groups", cursor_type="row")
            groups.border_title = "Topics"
            yield groups
            with Vertical(id="schema-right"):
                fields: DataTable[Text] = DataTable(id="schema-fields", cursor_type="row")
                fields.border_title = "Fields"
                yield fields
                drift: DataTable[Text] = DataTable(id="schema-drift", cursor_type="row")
                drift.border_title = "Drift"
                drift.border_subtitle = "⏎ the delivery that showed it"
                yield drift
        yield KeyLine(id="schema-keys")

    def on_mount(self) -> None:
        self.groups_table.add_columns("topic", "samples", "drift")
        self.fields_table.add_columns("path", "present", "types", "drift", "first value")
        self.drift_table.add_columns("severity", "path", "change", "count", "first seen", "id")
        if not self.learning:
            self._say(LEARNING_OFF)
            self._title()
            self.reads += 1
            return
        live_signals(self).schemas.subscribe(self, self._learned)
        self.read()

    # -- parts -------------------------------------------------------------------------------

    @property
    def groups_table(self) -> DataTable[Text]:
        return self.query_one("#schema-groups", DataTable)

    @property
    def fields_table(self) -> DataTable[Text]:
        return self.query_one("#schema-fields", DataTable)

    @property
    def drift_table(self) -> DataTable[Text]:
        return self.query_one("#schema-drift", DataTable)

    @property
    def notice(self) -> Static:
        return self.query_one("#schema-notice", Static)

    def _s(self, name: str) -> Style:
        return self.get_component_rich_style(f"schema--{name}", partial=True)

    # -- reading -----------------------------------------------------------------------------

    def _learned(self, _: None) -> None:
        if self.is_current:
            self.read()
        else:
            self._stale = True  # read when shown again

    def on_screen_resume(self) -> None:
        if self._stale:
            self._stale = False
            self.read()

    def select_group(self, name: str) -> None:
        self.wanted = group_of(name)
        self.read()

    def read(self) -> None:
        if self.learning:
            self._read(self.wanted)

    @work(exclusive=True, group="schema-read", exit_on_error=False)
    async def _read(self, wanted: GroupKey | None) -> None:
        data = await asyncio.to_thread(read_schema, self.reader, wanted)
        if wanted == self.wanted:
            self._show(data)

    def worker_failed(self, group: str, error: BaseException | None) -> None:
        self.reads += 1
        self._say(f"The learned schemas could not be read. {failure_text(error)}")

    # -- drawing -----------------------------------------------------------------------------

    def _say(self, sentence: str | None) -> None:
        notice = self.notice
        notice.update(Text(sentence or ""))
        notice.display = sentence is not None
        self.query_one("#schema-columns").display = sentence is None

    def _show(self, data: SchemaData) -> None:
        self.data = data
        self.reads += 1
        if data.problem is not None:
            self._say(data.problem)
        elif not data.groups and data.selected != TEMPLATES:
            self._say(NOTHING_LEARNED)
        else:
            self._say(None)
            self._groups(data.groups, data.selected)
            self._fields(data)
            self._drift(data.drift)
        self._title()

    def _title(self) -> None:
        data = self.data
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("Payload schemas ", Style(bold=True))
        label = self._s("label")
        if not self.learning:
            text.append("learning is off", label)
        elif data is not None and data.selected is not None:
            summary = self._summary(data)
            text.append(printable(data.selected.label, 60))
            if summary is not None:
                text.append("  ")
                text.append(
                    f"{summary.samples:,} samples · {summary.paths:,} paths · "
                    f"{summary.drift:,} drift",
                    label,
                )
                if summary.learning:
                    text.append(f" · {summary.learning}", self._s("warning"))
                if summary.not_json:
                    text.append(f" · {summary.not_json:,} not JSON", label)
                text.append(f" · last seen {format_ms(summary.last_seen_ms)}", label)
        text.append("  ")
        text.append("(esc: back)", label)
        self.query_one("#schema-title", Static).update(text)

    @staticmethod
    def _summary(data: SchemaData) -> GroupSummary | None:
        return next((g for g in data.groups if g.group == data.selected), None)

    def _groups(self, groups: list[GroupSummary], selected: GroupKey | None) -> None:
        table = self.groups_table
        table.clear()
        rows = list(groups)
        if selected == TEMPLATES and not any(g.group == TEMPLATES for g in rows):
            rows.append(GroupSummary(TEMPLATES, 0, 0, 0, 0))
        for summary in rows:
            drift = Text(f"{summary.drift:,}", justify="right")
            if summary.drift:
                drift.stylize(self._s("warning"))
                drift = Text.assemble(Text(f"{DRIFT_MARK} ", self._s("warning")), drift)
            table.add_row(
                Text(one_line(summary.label, 40)),
                Text(
                    f"{summary.samples:,}"
                    if summary.learning is None
                    else f"{summary.samples} of {DRIFT_AFTER}",
                    justify="right",
                ),
                drift,
                key=summary.group.stored,
            )
        index = next((i for i, g in enumerate(rows) if g.group == selected), 0)
        if rows:
            table.move_cursor(row=index, animate=False)

    def _fields(self, data: SchemaData) -> None:
        table = self.fields_table
        cursor = table.cursor_row
        table.clear()
        if data.selected == TEMPLATES and not data.fields:
            table.border_subtitle = NOTHING_FOR_TEMPLATES
            return
        table.border_subtitle = None
        drifted = worst_by_path(data.drift)
        for info in data.fields:
            table.add_row(*self._field_cells(info, drifted.get(info.path)), key=info.path)
        if data.fields:
            table.move_cursor(row=min(cursor, len(data.fields) - 1), animate=False)

    def _field_cells(self, info: FieldInfo, finding: DriftRecord | None) -> list[Text]:
        style = self._s(finding.severity) if finding is not None else Style()
        if info.parent is None:
            name = "(body)"
        else:
            tail = info.path[len(info.parent) :] if info.path.startswith(info.parent) else ""
            name = tail.lstrip(".") or info.path
            if info.parent == "$":
                name = info.path
        indent = TREE_STEP * max(0, info.depth - 1)  # under its parent, a step a level
        path = Text.assemble(
            (indent, self._s("label")),
            (printable(name, 60) + (" …" if info.open else ""), style),
        )
        presence = Text.assemble(
            (presence_bar(info.presence), self._s("bar")), f" {presence_text(info.presence):>5}"
        )
        shares = values_text(info)
        if shares:  # a value set: its values and their shares, in place of the first value
            value = Text(shares, self._s("value"))
        else:
            value = Text(
                "" if info.example is None else printable(info.example, 32), self._s("value")
            )
        mark = Text()
        if finding is not None:
            mark = Text(f"{DRIFT_MARK} {printable(change_text(finding), 40)}", style)
        return [path, presence, Text(types_text(info)), mark, value]

    def _drift(self, records: list[DriftRecord]) -> None:
        table = self.drift_table
        cursor = table.cursor_row
        table.clear()
        table.border_title = f"Drift {len(records):,}" if records else "Drift: none"
        for index, record in enumerate(records):
            table.add_row(
                Text(record.severity, self._s(record.severity)),
                Text(printable(record.path, 60)),
                Text(printable(change_text(record), 60)),
                Text(f"{record.count:,}", justify="right"),
                Text(format_ms(record.seen_at_ms) if record.seen_at_ms else "-"),
                Text(one_line(record.webhook_id, 40, missing="(the template list)")),
                key=str(index),
            )
        if records:
            table.move_cursor(row=min(cursor, len(records) - 1), animate=False)

    # -- actions -----------------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#schema-groups")
    def _group_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is None or self.data is None or event.cursor_row != self.groups_table.cursor_row:
            return  # the table being filled again: its cursor moves on
        group = GroupKey.from_stored(key)
        if group != self.data.selected:
            self.wanted = group
            self.read()

    @on(DataTable.RowSelected, "#schema-drift")
    def _finding_selected(self, event: DataTable.RowSelected) -> None:
        if self.data is None or event.row_key.value is None:
            return
        index = int(event.row_key.value)
        if 0 <= index < len(self.data.drift):
            self.open_delivery(self.data.drift[index])

    def open_delivery(self, record: DriftRecord) -> None:
        """The delivery that showed ``record`` first, on the detail screen."""
        if record.attempt_id is None:
            self.notify(
                "This drift came from the pass template list, not from a delivery.",
                markup=False,
            )
            return
        from walletpass_tui.ui.screens.detail import DetailScreen

        self.app.push_screen(DetailScreen(self.runtime.store, record.attempt_id))

    def action_templates(self) -> None:
        self.select_group("templates")

    def action_focus_drift(self) -> None:
        if self.query_one("#schema-columns").display:
            self.drift_table.focus()

    def action_close(self) -> None:
        self.dismiss(None)
