"""The Endpoints pane: webhook endpoints known locally, their secrets masked."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable

from walletpass_tui.config.errors import ConfigError
from walletpass_tui.text import one_line, visible
from walletpass_tui.ui.view.context import DashboardContext
from walletpass_tui.ui.view.endpoints_text import created_text, topics_text
from walletpass_tui.ui.widgets.notice import Notice, NoticeText
from walletpass_tui.webhooks.endpoint_registry import LocalEndpoint

URL_WIDTH = 48


def endpoint_cells(endpoint: LocalEndpoint) -> tuple[Text, Text]:
    """Two cells of two lines each: who and whether (id, on/off), where and what (url, topics,
    secret masked, created)."""
    state = "● on" if endpoint.enabled else "○ off"
    who = Text(f"{one_line(endpoint.id, 20)}\n{state}")
    details = f"{topics_text(endpoint.topics)} · {endpoint.secret.masked}"
    if endpoint.origin == "imported":
        details += " · imported"
    else:
        details += f" · {created_text(endpoint.created_at)}"
    # The file is the user's to edit: anything in it is shown escaped.
    where = Text(f"{one_line(endpoint.url, URL_WIDTH)}\n{visible(details)}")
    return who, where


class EndpointsPane(Vertical):
    """Endpoints from the local registry; ``n`` creates one, ``i`` imports one."""

    def __init__(self, context: DashboardContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.context = context
        self.endpoints: list[LocalEndpoint] = []
        self.border_title = "Endpoints"

    def compose(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(id="endpoints-table", cursor_type="row")
        table.add_column("endpoint", key="endpoint")
        table.add_column("url · topics · secret · created (UTC)", key="url")
        yield table
        yield Notice(id="endpoints-notice")

    def on_mount(self) -> None:
        self.reload()

    def reload(self, select: str | None = None) -> None:
        """Read the registry again; ``select`` puts the cursor on that endpoint id."""
        table = self.query_one("#endpoints-table", DataTable)
        notice = self.query_one("#endpoints-notice", Notice)
        try:
            self.endpoints = self.context.registry.load()
        except ConfigError as exc:  # shown in the pane's notice
            self.endpoints = []
            table.display = False
            notice.show(NoticeText(str(exc), error=True))
            self.border_title = "Endpoints · unreadable"
            return
        table.clear()
        for endpoint in self.endpoints:
            table.add_row(*endpoint_cells(endpoint), key=endpoint.id, height=2)
        self.border_title = f"Endpoints {len(self.endpoints)}"
        self.border_subtitle = "n new · i import"
        if not self.endpoints:
            table.display = False
            notice.show(
                NoticeText(
                    "No endpoints known locally yet.",
                    hint="Create one at the service (its secret is kept here), or import one "
                    "created elsewhere with its secret, so deliveries to it can be verified.",
                    keys=(("n", "new endpoint"), ("i", "import")),
                )
            )
            return
        notice.show(None)
        table.display = True
        if select is not None:
            ids = [e.id for e in self.endpoints]
            if select in ids:
                table.move_cursor(row=ids.index(select))
