"""The dashboard's main screen: header line, Templates and Endpoints on the left, the live event log
and the selected delivery's detail on the right, footer with the keys.

Below 110 columns the left column folds into tabs (Templates / Endpoints / Events) and the detail
opens as a screen of its own; on short terminals the detail pane gives its room to the log.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Tab, Tabs

from walletpass_tui.api.models import WebhookEndpoint
from walletpass_tui.text import visible
from walletpass_tui.ui.lazily import Lazily
from walletpass_tui.ui.messages import (
    DeliveriesStored,
    DiffRequested,
    ReplayRequested,
    live_signals,
)
from walletpass_tui.ui.panes.delivery_detail import DeliveryDetail, copy_bindings
from walletpass_tui.ui.panes.endpoints import EndpointsPane
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.panes.templates import TemplatesPane
from walletpass_tui.ui.view.context import DashboardContext
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.ui.widgets.mount_later import MountLater
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.models import CHECK, RECEIVED, REJECTED, VERIFIED

if TYPE_CHECKING:  # the other screens are imported when opened, after the first paint
    from walletpass_tui.ui.screens.create_endpoint import Created

DETAIL_DEBOUNCE_S = 0.06  # a person moving the cursor: the detail follows once they pause
TEMPLATES_AFTER_S = 1.0  # the templates load once the log is on screen, or after this at most
FOLLOW_DETAIL_S = 1.0  # new rows arriving while following: the detail catches up this often
FLOOD_FOLLOW_S = 2.0  # ... and this often in a flood (more rows a frame than anyone reads)
DETAIL_SCREEN = "delivery-detail"
PANES = ("templates", "endpoints", "events")


class MainScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]

    BINDINGS = [
        Binding(
            "n",
            "new_endpoint",
            "New",
            id="main.new_endpoint",
            tooltip="New webhook endpoint (at the service)",
        ),
        Binding(
            "i",
            "import_endpoint",
            "Import",
            show=False,  # the Endpoints pane says n new · i import
            id="main.import_endpoint",
            tooltip="Import an endpoint created elsewhere",
        ),
        Binding(
            "R",
            "replay",
            "Replay",
            id="replay",
            tooltip="Send the selected delivery to your app again",
        ),
        Binding(
            "m",
            "mark",
            "Mark",
            show=False,
            id="main.mark",
            tooltip="Mark the selected delivery: D on another compares them",
        ),
        Binding(
            "D",
            "diff",
            "Compare",
            show=False,
            id="diff",
            tooltip="Compare the selected delivery with the marked one (else its first attempt, "
            "or the one before it)",
        ),
        Binding(
            "c",
            "check_app",
            "Check",
            id="main.check_app",
            tooltip="Check my app: test your own receiver",
        ),
        Binding(
            "s",
            "app.stats",
            "Stats",
            id="main.stats",
            tooltip="The last hour as charts: traffic, rejections, redeliveries, answer times",
        ),
        Binding(
            "S",
            "app.schema",
            "Schema",
            show=False,  # the header's drift count says "S"
            id="main.schema",
            tooltip="Each topic's learned payload fields, and the drift found in them",
        ),
        Binding(
            "r", "refresh_templates", "Refresh templates", show=False, id="main.refresh_templates"
        ),
        Binding("1", "show_pane('templates')", "Templates", show=False, id="main.templates"),
        Binding("2", "show_pane('endpoints')", "Endpoints", show=False, id="main.endpoints"),
        Binding("3", "show_pane('events')", "Events", show=False, id="main.events"),
        Binding(
            "ctrl+b",
            "toggle_left",
            "Full width",
            show=False,
            id="main.toggle_left",
            tooltip="Hide or show the Templates and Endpoints column: the log takes the width",
        ),
        *copy_bindings(show=False),
    ]

    def __init__(self, context: DashboardContext, *, log_capacity: int) -> None:
        super().__init__(id="main")
        self.context = context
        self._log_capacity = log_capacity
        self._detail_timer: Timer | None = None
        self._follow_timer: Timer | None = None
        self._follow_row: int | None = None
        self._flood = False  # the last frame of new rows was a flood
        self.pane = "events"
        self._templates_loading_started = False
        self._resumed = False
        self.marked: int | None = None  # the delivery "m" marked, compared by "D"
        self.add_class("-show-events", *self._breakpoint_classes())

    def _breakpoint_classes(self) -> list[str]:
        """The breakpoint classes for the terminal's size, set before the first styling: Textual
        sets them on the first resize, and a class that changes then restyles every widget."""
        try:
            width, height = self.app.size
        except Exception:  # no running app (a screen built in a unit test)
            return []
        classes = []
        for dimension, breakpoints in (
            (width, self.HORIZONTAL_BREAKPOINTS),
            (height, self.VERTICAL_BREAKPOINTS),
        ):
            for threshold, name in sorted(breakpoints or (), reverse=True):
                if dimension >= threshold:
                    classes.append(name)
                    break
        return classes

    def compose(self) -> ComposeResult:
        # The first frame has the header, the log and the detail's summary; the templates and
        # endpoints panes and the detail's tabs are mounted right after it (MountLater), so the newest
        # deliveries are on screen without waiting for them.
        yield StatusBar(id="status-bar")
        yield Tabs(
            Tab("1 Templates", id="tab-templates"),
            Tab("2 Endpoints", id="tab-endpoints"),
            Tab("3 Events", id="tab-events"),
            active="tab-events",
            id="pane-tabs",
        )
        with Horizontal(id="columns"):
            with Vertical(id="left"):
                yield MountLater(TemplatesPane(self.context, id="templates"))
                yield MountLater(EndpointsPane(self.context, id="endpoints"))
            with Vertical(id="right"):
                yield EventLogPane(self.context, capacity=self._log_capacity, id="events")
                yield DeliveryDetail(
                    self.context.store, tabs_after_first_frame=True, id="detail-pane"
                )
        yield KeyLine(id="main-keys")

    def on_mount(self) -> None:
        self.event_log.focus_log()
        live_signals(self).deliveries.subscribe(self, self._deliveries_stored, immediate=True)
        # The templates are fetched once the log shows its first page (or after a second, should
        # the log not load): the first rows on screen do not wait for the service's client.
        self._templates_timer = self.set_timer(TEMPLATES_AFTER_S, self._load_templates)

    @on(EventLogPane.Ready)
    def _log_ready(self) -> None:
        self._load_templates()  # not stopped: the app looks for a tunnel on the same message

    def _load_templates(self) -> None:
        if self._templates_loading_started:
            return
        if not self.assembled:
            self.call_after_refresh(self._load_templates)
            return
        self._templates_loading_started = True
        self._templates_timer.stop()
        self.templates.refresh_templates()

    @property
    def assembled(self) -> bool:
        """The parts mounted after the first frame are there too (see compose)."""
        return bool(self.query("#templates")) and bool(self.query("#endpoints"))

    # -- parts -------------------------------------------------------------------------------------

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def templates(self) -> TemplatesPane:
        return self.query_one(TemplatesPane)

    @property
    def endpoints(self) -> EndpointsPane:
        return self.query_one(EndpointsPane)

    @property
    def event_log(self) -> EventLogPane:
        return self.query_one(EventLogPane)

    @property
    def detail(self) -> DeliveryDetail:
        return self.query_one("#detail-pane", DeliveryDetail)

    @property
    def narrow(self) -> bool:
        return self.has_class("-narrow")

    # -- panes -------------------------------------------------------------------------------------

    def action_show_pane(self, pane: str) -> None:
        if pane not in PANES:
            return
        if not self.assembled:
            self.call_after_refresh(self.action_show_pane, pane)
            return
        self.pane = pane
        for name in PANES:
            self.set_class(name == pane, f"-show-{name}")
        tabs = self.query_one("#pane-tabs", Tabs)
        if tabs.active != f"tab-{pane}":
            tabs.active = f"tab-{pane}"
        if pane == "templates":
            self.templates.query_one("#templates-table").focus()
        elif pane == "endpoints":
            self.endpoints.query_one("#endpoints-table").focus()
        else:
            self.event_log.focus_log()

    def action_toggle_left(self) -> None:
        """Hide the left column (templates, endpoints) so the log has the whole width, or bring
        it back. Below 110 columns the panes are tabs already: nothing to hide."""
        if self.narrow:
            self.notify("At this width the panes are tabs already (1 2 3).", markup=False)
            return
        hidden = not self.has_class("-no-left")
        self.set_class(hidden, "-no-left")
        focused = self.focused
        if hidden and focused is not None and self.query_one("#left") in focused.ancestors:
            self.event_log.focus_log()

    @on(Tabs.TabActivated, "#pane-tabs")
    def _tab(self, event: Tabs.TabActivated) -> None:
        if event.tab.id:
            pane = event.tab.id.removeprefix("tab-")
            if pane != self.pane:
                self.action_show_pane(pane)

    # -- the log and its detail -------------------------------------------------------------------

    def _deliveries_stored(self, message: DeliveriesStored) -> None:
        self._flood = message.flood

    def _follow_interval(self) -> float:
        """How long the detail follows the newest row before catching up again: longer in a
        flood, whose rows pass by faster than anyone reads them (a key press ends it: frames
        are short again while a person uses the dashboard)."""
        return FLOOD_FOLLOW_S if self._flood else FOLLOW_DETAIL_S

    @on(LogLines.CursorMoved)
    def _cursor_moved(self, event: LogLines.CursorMoved) -> None:
        if self._detail_timer is not None:
            self._detail_timer.stop()
        row_id = event.row.id if event.row else None
        if row_id is None:
            self.detail.show(None)
            return
        if event.live:
            # Following a stream of new rows: the newest is shown at once, then at most once
            # per FOLLOW_DETAIL_S (FLOOD_FOLLOW_S in a flood; the last one of each interval), not
            # reloaded on every frame.
            if self._follow_timer is None:
                self._show_detail(row_id)
                self._follow_timer = self.set_timer(self._follow_interval(), self._follow_caught_up)
            else:
                self._follow_row = row_id
            return
        self._follow_row = None
        self._detail_timer = self.set_timer(DETAIL_DEBOUNCE_S, lambda: self._show_detail(row_id))

    def _follow_caught_up(self) -> None:
        self._follow_timer = None
        if self._follow_row is not None:
            row_id, self._follow_row = self._follow_row, None
            # Drawn with the log's next frame of rows: one composition of the screen for both.
            self._show_detail(row_id, with_rows=True)
            self._follow_timer = self.set_timer(self._follow_interval(), self._follow_caught_up)

    def _show_detail(self, row_id: int, *, with_rows: bool = False) -> None:
        """Load the row's detail into the pane, if the pane is on screen (else when it is)."""
        detail = self.detail
        if detail.display and self.is_current and detail.requested_id != row_id:
            detail.show(row_id, with_rows=with_rows)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Runs before Textual's own handler: the first time, every widget was styled as it was
        # mounted a moment ago, so the screen-wide restyle that resuming brings is skipped.
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False
        detail = self.detail
        if not detail.display:
            return
        row = self.event_log.window.current
        if row is not None and detail.requested_id != row.id:
            detail.show(row.id)
        else:
            detail.catch_up()

    @on(LogLines.Opened)
    def _opened(self, event: LogLines.Opened) -> None:
        self.open_detail(event.row.id)

    def action_open_detail(self) -> None:
        row = self.event_log.window.current
        if row is not None:
            self.open_detail(row.id)

    def action_replay(self) -> None:
        """Replay the delivery selected in the log (the app opens the form)."""
        row = self.event_log.window.current
        if row is None:
            self.notify("Select a delivery in the event log to replay it.", markup=False)
            return
        self.post_message(ReplayRequested(row.id))

    def action_mark(self) -> None:
        row = self.event_log.window.current
        if row is None:
            self.notify("Select a delivery in the event log to mark it.", markup=False)
            return
        if self.marked == row.id:
            self.marked = None
            self.notify("The mark is taken away.", markup=False)
            return
        self.marked = row.id
        self.notify(
            f"Marked {visible(row.webhook_id or '-')} #{row.attempt_no}; press D on another "
            "delivery to compare them.",
            markup=False,
        )

    def action_diff(self) -> None:
        row = self.event_log.window.current
        if row is None:
            self.notify("Select a delivery in the event log to compare it.", markup=False)
            return
        against = self.marked if self.marked != row.id else None
        self.post_message(DiffRequested(row.id, against))

    def action_copy(self, what: str) -> None:
        """The delivery selected in the log as curl, its body or its headers, on the clipboard
        (read from the history: the log holds no bodies)."""
        row = self.event_log.window.current
        if row is None:
            self.notify("Select a delivery in the event log to copy it.", markup=False)
            return
        self.run_worker(Lazily(lambda: self._copy(row.id, what)), group="copy", exclusive=True)

    async def _copy(self, attempt_id: int, what: str) -> None:
        from walletpass_tui.ui.copying import copy_attempt

        attempt = await self.context.store.attempt(attempt_id)
        if attempt is None:
            self.notify("That delivery is no longer in the history.", markup=False)
            return
        copy_attempt(self.app, attempt, what)

    def action_filter_log(self) -> None:
        self.action_show_pane("events")
        self.event_log.action_filter()

    def action_clear_filter(self) -> None:
        self.event_log.action_clear_filter()

    def action_only(self, verdict: str) -> None:
        self.action_show_pane("events")
        log = self.event_log
        log.set_terms(replace(log.filter, verdict=REJECTED if verdict == REJECTED else VERIFIED))

    def action_only_source(self, source: str) -> None:
        """Only what senders posted (``received``: the check's requests hidden), or only the
        check's requests (``check``)."""
        self.action_show_pane("events")
        log = self.event_log
        log.set_terms(replace(log.filter, source=CHECK if source == CHECK else RECEIVED))

    def action_follow(self) -> None:
        self.action_show_pane("events")
        self.event_log.action_follow()

    def open_detail(self, attempt_id: int) -> None:
        """The delivery on a screen of its own; one screen, kept and reused."""
        from walletpass_tui.ui.screens.detail import DetailScreen

        app = self.app
        if not app.is_screen_installed(DETAIL_SCREEN):
            app.install_screen(DetailScreen(self.context.store, step=self._step_log), DETAIL_SCREEN)
        screen = app.get_screen(DETAIL_SCREEN)
        assert isinstance(screen, DetailScreen)
        screen.open(attempt_id)
        if app.screen is not screen:
            app.push_screen(screen)

    def _step_log(self, rows: int) -> int | None:
        """Move the log's cursor (the detail screen's j/k); the attempt it lands on."""
        view = self.event_log.view
        view.move_cursor(self.event_log.window.cursor + rows)
        row = self.event_log.window.current
        return row.id if row is not None else None

    # -- templates -------------------------------------------------------------------------------

    def action_refresh_templates(self) -> None:
        self.templates.refresh_templates()

    @on(TemplatesPane.ShowTemplate)
    def _show_template(self, event: TemplatesPane.ShowTemplate) -> None:
        from walletpass_tui.ui.screens.template_json import TemplateScreen

        self.app.push_screen(TemplateScreen(event.template, title=event.title))

    # -- endpoints -------------------------------------------------------------------------------

    def action_new_endpoint(self) -> None:
        from walletpass_tui.ui.screens.create_endpoint import CreateEndpointScreen

        self.app.push_screen(CreateEndpointScreen(self.context), self._created)

    def _created(self, created: Created | None) -> None:
        if created is None:
            return
        from walletpass_tui.ui.screens.endpoint_secret import EndpointSecretScreen

        self.endpoints.reload(select=created.endpoint.id)
        self.app.push_screen(
            EndpointSecretScreen(
                created.endpoint, self.context.registry.path, saved_error=created.saved_error
            )
        )

    def action_check_app(self) -> None:
        # Imported when asked for: the battery is not needed for the first paint.
        from walletpass_tui.ui.screens.check import CheckScreen

        self.app.push_screen(CheckScreen.for_context(self.context))

    def action_import_endpoint(self) -> None:
        from walletpass_tui.ui.screens.import_endpoint import ImportEndpointScreen

        self.app.push_screen(ImportEndpointScreen(self.context.registry), self._imported)

    def _imported(self, endpoint_id: str | None) -> None:
        if endpoint_id is None:
            return
        self.endpoints.reload(select=endpoint_id)
        self.notify(
            f"Endpoint {endpoint_id} imported; deliveries to it are verified with its secret.",
            markup=False,
        )

    def endpoint_created(self, endpoint: WebhookEndpoint) -> None:
        """For callers that created an endpoint elsewhere (the demo): show it in the list."""
        self.endpoints.reload(select=endpoint.id)
