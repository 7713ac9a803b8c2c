"""The Templates pane: the service's pass templates, fetched in a worker, errors shown in place."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable

from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.models import TemplateList
from walletpass_tui.text import compact_value
from walletpass_tui.ui.messages import live_signals
from walletpass_tui.ui.view.context import DashboardContext
from walletpass_tui.ui.view.template_columns import template_cell, template_columns
from walletpass_tui.ui.widgets.notice import Notice, NoticeText, notice_for_error
from walletpass_tui.ui.worker_errors import ReportsWorkerErrors, failure_text


def answer_document(result: TemplateList) -> Any:
    """The list answer as JSON: parsed from its raw text, else rebuilt from what was kept."""
    if result.raw_text:
        try:
            return json.loads(result.raw_text)
        except (ValueError, RecursionError):  # not JSON: shown as the raw text
            pass
    if result.container is None:
        return result.templates
    return {result.container: result.templates, **result.extra}


class TemplatesPane(ReportsWorkerErrors, Vertical):
    """Lists pass templates; Enter shows one as JSON, ``a`` the service's whole answer (paging
    fields and every other key it holds); ``r`` (on the main screen) refreshes."""

    BINDINGS = [
        Binding(
            "a",
            "show_answer",
            "Whole answer",
            id="templates.answer",
            tooltip="The template list as the service answered it, every key, as JSON",
        ),
        Binding(
            "S",
            "app.schema('templates')",
            "Fields",
            id="templates.schema",
            tooltip="The template fields learned from the lists shown here, and their drift",
        ),
    ]

    class ShowTemplate(Message):
        def __init__(self, template: Any, title: str | None = None) -> None:
            super().__init__()
            self.template = template
            self.title = title

    def __init__(self, context: DashboardContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.context = context
        self.templates: list[dict[str, Any]] = []
        self.result: TemplateList | None = None
        self.asked = 0  # how many times the templates were asked for (0: not yet)
        self.border_title = "Templates"

    def compose(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(id="templates-table", cursor_type="row")
        table.display = False
        yield table
        yield Notice(id="templates-notice")

    # Loaded when the screen says (once the log shows its first page: the service's HTTP client
    # is not imported before the first rows are on screen), and on `r`.

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#templates-table", DataTable)

    @property
    def notice(self) -> Notice:
        return self.query_one("#templates-notice", Notice)

    def refresh_templates(self) -> None:
        self.asked += 1
        how_to = self.context.missing_service_setup()
        if how_to is not None:
            self._show_notice(
                NoticeText(
                    "No pass templates without the service's API key.",
                    hint=how_to,
                    keys=(("r", "try again"),),
                )
            )
            self.border_title = "Templates"
            return
        self.loading = True
        self.border_title = "Templates · loading…"
        self._load()

    @work(exclusive=True, group="templates", exit_on_error=False)
    async def _load(self) -> None:
        client = self.context.client
        assert client is not None
        try:
            result = await client.list_pass_templates()
        except ApiError as exc:  # shown in the pane's notice
            self._show_notice(notice_for_error(exc))
            self.border_title = "Templates · failed"
        else:
            self._show_templates(result)
            self._learn(list(result.templates))
        finally:
            self.loading = False

    @work(exclusive=True, group="templates-learn", exit_on_error=False)
    async def _learn(self, templates: list[Any]) -> None:
        """The templates listed teach the ``templates`` schema (the Schema screen, ``S``)."""
        from walletpass_tui.schemas.errors import SchemaError
        from walletpass_tui.ui.drift_watch import templates_learned

        try:
            found = await self.context.runtime.learn_templates(templates)
        except SchemaError as exc:  # shown as a notification
            self.notify(str(exc), title="Template fields not learned", markup=False)
            return
        templates_learned(live_signals(self), found)

    def worker_failed(self, group: str, error: BaseException | None) -> None:
        """Anything but an ApiError is a bug, but it must not take the dashboard down."""
        if group == "templates-learn":  # the list is on screen; only its fields were not learned
            super().worker_failed(group, error)
            return
        self.loading = False
        self.border_title = "Templates · failed"
        self._show_notice(
            NoticeText(
                "Listing templates failed unexpectedly.",
                hint=failure_text(error),
                keys=(("r", "retry"),),
                error=True,
            )
        )

    def _show_notice(self, notice: NoticeText) -> None:
        self.templates = []
        self.table.display = False
        self.notice.show(notice)

    def _show_templates(self, result: TemplateList) -> None:
        self.result = result
        self.templates = list(result.templates)
        table = self.table
        table.clear(columns=True)
        count = len(self.templates)
        self.border_title = f"Templates {count}"
        self.border_subtitle = "⏎ JSON · a whole answer"
        if not count:
            self._show_notice(NoticeText("The service has no pass templates yet."))
            self.border_title = "Templates 0"
            return
        for key in template_columns(self.templates):
            table.add_column(Text(compact_value(key, 24)), key=key)
        keys = [str(c.key.value) for c in table.columns.values()]
        for index, template in enumerate(self.templates):
            table.add_row(*(Text(template_cell(template, k)) for k in keys), key=str(index))
        self.notice.show(None)
        table.display = True

    def action_show_answer(self) -> None:
        """The answer as the service sent it (its other keys, paging fields say, included)."""
        result = self.result
        if result is None:
            self.notify("No template list has been received yet.", markup=False)
            return
        self.post_message(self.ShowTemplate(answer_document(result), "The template list answer"))

    @on(DataTable.RowSelected, "#templates-table")
    def _open(self, event: DataTable.RowSelected) -> None:
        index = int(str(event.row_key.value))
        if 0 <= index < len(self.templates):
            self.post_message(self.ShowTemplate(self.templates[index]))
