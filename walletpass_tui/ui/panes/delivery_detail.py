"""The detail of one delivery attempt: verdict and reason, every attempt of its message with the gaps
between them, headers, the body (raw, and pretty when JSON), and forwards/replays of it.

Used as a pane below the event log on wide terminals and inside ``DetailScreen`` everywhere.

The body is shown a page at a time (``body_pages``), prepared in a worker thread, so a megabyte
body never holds the event loop the receiver shares. Live updates (another attempt of the message,
a forward answered) reload it at most every ``LIVE_RELOAD_S`` and only while it is on screen; a
detail hidden meanwhile catches up when it is shown again (``catch_up``). A detail that follows
the newest row (``show(..., with_rows=True)``) is drawn with the log's next frame of new rows,
so the screen is composed once for both (or after ``WITH_ROWS_S``, should no rows come).

Loading lives in ``delivery_data``, the text of each part in ``delivery_parts``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static, TabbedContent, TabPane

from walletpass_tui.ui.body_pages import body_page
from walletpass_tui.ui.messages import DeliveriesStored, live_signals
from walletpass_tui.ui.panes.delivery_data import (
    AHEAD_BYTES,
    Ahead,
    BodyView,
    DeliveryData,
    load_delivery,
    load_drift,
    load_pages,
)
from walletpass_tui.ui.panes.delivery_parts import (
    attempts_text,
    drift_text,
    forwards_text,
    headers_text,
    summary_text,
)
from walletpass_tui.ui.widgets.body_text import BodyText
from walletpass_tui.ui.widgets.mount_later import MountLater
from walletpass_tui.ui.worker_errors import ReportsWorkerErrors, failure_text
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.store import Store

BODY_TABS = ("body", "raw")  # drawn by BodyText: only the lines in view
LIVE_RELOAD_S = 0.3  # a live update reloads the detail at most this often
WITH_ROWS_S = (
    0.6  # a detail waiting for the log's next frame (2 a second in a flood) waits no longer
)
TABS = (
    ("body", "Body"),
    ("headers", "Headers"),
    ("raw", "Raw"),
    ("forwards", "Forwards & replays"),
)


def copy_bindings(*, show: bool) -> list[Binding]:
    """The keys that copy a delivery (``ui.copying`` does it, loaded when first pressed); ``show``: curl and body in the key line (the headers only in ``?``)."""
    return [
        Binding(
            "x",
            "copy('curl')",
            "Copy curl",
            show=show,
            id="copy.curl",
            tooltip="Copy the delivery as a curl command (the bytes and headers it came with)",
        ),
        Binding(
            "y",
            "copy('body')",
            "Copy body",
            show=show,
            id="copy.body",
            tooltip="Copy the body as received",
        ),
        Binding(
            "Y",
            "copy('headers')",
            "Copy headers",
            show=False,
            id="copy.headers",
            tooltip="Copy the headers",
        ),
    ]


class DeliveryDetail(ReportsWorkerErrors, Vertical):
    """Shows one attempt; ``show(attempt_id)`` loads it from the store in a worker."""

    COMPONENT_CLASSES = {
        "delivery-detail--verified",
        "delivery-detail--rejected",
        "delivery-detail--label",
        "delivery-detail--id",
        "delivery-detail--dim",
        "delivery-detail--current",
        "delivery-detail--ack-ok",
        "delivery-detail--ack-failed",
        "delivery-detail--header-name",
        "delivery-detail--note",
        "delivery-detail--info",
        "delivery-detail--warning",
        "delivery-detail--breaking",
    }

    class Loaded(Message):
        def __init__(self, data: DeliveryData | None) -> None:
            super().__init__()
            self.data = data

    BINDINGS = [
        Binding("right_square_bracket", "page(1)", "Next part", show=False, id="body.next_part"),
        Binding(
            "left_square_bracket", "page(-1)", "Previous part", show=False, id="body.previous_part"
        ),
    ]

    def __init__(
        self,
        store: Store,
        *,
        tabs_after_first_frame: bool = False,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.store = store
        self._tabs_later = tabs_after_first_frame
        self.data: DeliveryData | None = None
        self.pages: BodyView | None = None  # the body's pages on screen
        self.requested_id: int | None = None
        self._stale = False  # a live update arrived while hidden
        self._live_timer: Timer | None = None
        self._live_wanted = False
        self._heights: dict[str, int | None] = {}  # each part's lines on screen
        self._painted_tabs: set[str] = set()  # tabs showing the current data
        self._ahead = Ahead()  # a large body's pages, prepared as it arrives
        self._arrived: Attempt | None = None  # the newest attempt the log shows, as it arrived
        self._with_rows = False  # the delivery asked for is drawn with the next frame of rows
        self._waiting: tuple[DeliveryData, BodyView] | None = None  # loaded, for that frame
        self._waiting_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        drift = Static(id="detail-drift", classes="detail-drift")
        drift.display = False  # only for a delivery whose payload drifted
        yield drift
        yield Static(id="detail-summary", classes="detail-summary")
        yield Static(id="detail-attempts", classes="detail-attempts")
        # With tabs_after_first_frame (the main screen's pane) the tabs, two dozen widgets, are
        # mounted after the screen's first frame, so the log's first rows do not wait for them;
        # until then _ready() is False and nothing is painted.
        tabs = TabbedContent(id="detail-tabs")
        with MountLater(tabs) if self._tabs_later else tabs:
            for key, title in TABS:
                with TabPane(title, id=f"tab-{key}"), VerticalScroll(classes="detail-scroll"):
                    if key in BODY_TABS:
                        yield BodyText(id=f"detail-{key}", classes="detail-text")
                    else:
                        yield Static(id=f"detail-{key}", classes="detail-text")

    def on_mount(self) -> None:
        signals = live_signals(self)
        signals.deliveries.subscribe(self, self._deliveries_stored, immediate=True)
        signals.history.subscribe(self, self._history_changed, immediate=True)
        signals.drift.subscribe(self, self._drift_marked, immediate=True)
        self.call_after_refresh(self._render_empty)

    @property
    def webhook_id(self) -> str | None:
        """The webhook-id of the message on screen."""
        return self.data.attempt.webhook_id if self.data is not None else None

    def _deliveries_stored(self, message: DeliveriesStored) -> None:
        """Another attempt of the message on screen arrived: show it in the attempt list. A
        large body the log shows is prepared at once, while the log draws its row."""
        in_log = live_signals(self).shown
        newest = next((a for a in reversed(message.attempts) if in_log(a)), None)
        if newest is not None:
            # The row a following log selects: its detail is read without its body again.
            self._arrived = newest
            if len(newest.body) >= AHEAD_BYTES and self.on_screen:
                self._ahead.start(newest, self._body_width())
        self._draw_waiting()  # in the frame that draws the log's new rows
        shown = self.webhook_id
        if shown and any(a.webhook_id == shown for a in message.attempts):
            self._live_reload()

    def _history_changed(self, webhook_id: str | None) -> None:
        """A forward or replay was recorded (of ``webhook_id``; None: of any message)."""
        if self.data is not None and webhook_id in (None, self.webhook_id):
            self._live_reload()

    def _drift_marked(self, changed: frozenset[int] | None) -> None:
        """The delivery on screen was found to have drifted (the learner looks after commit)."""
        shown = self.requested_id
        if shown is not None and changed is not None and shown in changed:
            self._live_reload()

    @property
    def on_screen(self) -> bool:
        """Displayed, on the screen in front."""
        return self.display and self.is_on_screen and self.screen.is_current

    def _live_reload(self) -> None:
        if not self.on_screen:
            self._stale = True
            return
        if self._live_timer is not None:
            self._live_wanted = True  # once more when the interval ends
            return
        self.reload()
        self._live_timer = self.set_timer(LIVE_RELOAD_S, self._live_interval_over)

    def _live_interval_over(self) -> None:
        self._live_timer = None
        if self._live_wanted:
            self._live_wanted = False
            self._live_reload()

    def catch_up(self) -> None:
        """Shown again: reload if live updates were skipped while hidden."""
        if self._stale:
            self._stale = False
            self.reload()

    def worker_failed(self, group: str, error: BaseException | None) -> None:
        self.data = None
        self.pages = None
        self._render_empty(f"This delivery could not be read. {failure_text(error)}")

    # -- loading ------------------------------------------------------------------------------

    def show(self, attempt_id: int | None, *, with_rows: bool = False) -> None:
        """Load and draw ``attempt_id`` (None: the placeholder). ``with_rows``: the log follows
        new rows and this is the newest; it is drawn with the log's next frame of them."""
        self.requested_id = attempt_id
        self._stale = False
        self._with_rows = with_rows
        self._drop_waiting()
        if attempt_id is None:
            self.data = None
            self.pages = None
            self._render_empty()
            return
        self._load(attempt_id)

    def reload(self) -> None:
        if self.requested_id is not None:
            self._load(self.requested_id)

    @work(exclusive=True, group="detail", exit_on_error=False)
    async def _load(self, attempt_id: int) -> None:
        ahead = self._ahead.take(attempt_id)
        arrived = ahead[0] if ahead is not None else self._arrived
        data = await load_delivery(self.store, attempt_id, arrived=arrived)
        if attempt_id != self.requested_id:
            return
        marks = live_signals(self).drift_marks
        if data is not None and marks is not None and attempt_id in marks:
            data = replace(data, drift=await load_drift(self.store, attempt_id))
        if data is None:
            self.data = None
            self.pages = None
            self._render_empty("This delivery is no longer in the history (pruned).")
            self.post_message(self.Loaded(None))
            return
        same = (
            self.pages is not None and self.data is not None and self.data.attempt.id == attempt_id
        )
        if same and self.pages is not None:
            pages = self.pages
        elif ahead is not None and arrived is not None and data.attempt.body is arrived.body:
            pages = await ahead[1]  # prepared as it arrived
        else:
            pages = await load_pages(data.attempt.body, width=self._body_width())
        if attempt_id != self.requested_id:
            return
        self._show_data(data, pages)

    def _show_data(self, data: DeliveryData, pages: BodyView) -> None:
        """Paint ``data``; ``self.data`` is what is on screen."""
        if data.attempt.id != self.requested_id:
            return  # another delivery was asked for meanwhile
        if not self._ready():
            self.call_after_refresh(self._show_data, data, pages)
            return
        if self._with_rows:
            self._with_rows = False
            self._drop_waiting()
            self._waiting = (data, pages)
            self._waiting_timer = self.set_timer(WITH_ROWS_S, self._draw_waiting)
            return
        self.data = data
        self.pages = pages
        self._paint()
        self.post_message(self.Loaded(data))

    def _draw_waiting(self) -> None:
        """Draw the delivery loaded for the log's next frame of rows: that frame has come (or
        none came in time)."""
        waiting = self._waiting
        self._drop_waiting()
        if waiting is not None:
            self._show_data(*waiting)

    def _drop_waiting(self) -> None:
        self._waiting = None
        if self._waiting_timer is not None:
            self._waiting_timer.stop()
            self._waiting_timer = None

    def action_page(self, step: int) -> None:
        """The next (or previous) part of a long body, in the Body or Raw tab."""
        pages = self.pages
        if pages is None or self.data is None:
            return
        raw = self.active_tab == "raw"
        page = pages.raw if raw else pages.body
        index = page.index + step
        if index < 0 or (step > 0 and not page.more):
            return
        self._turn_page(self.data.attempt.id, index, raw)

    @work(exclusive=True, group="detail-page", exit_on_error=False)
    async def _turn_page(self, attempt_id: int, index: int, raw: bool) -> None:
        data, pages = self.data, self.pages
        if data is None or pages is None:
            return
        body = data.attempt.body
        page = await asyncio.to_thread(body_page, body, index, raw=raw)
        if self.data is not data or self.requested_id != attempt_id:
            return
        if raw:
            self.pages = BodyView(pages.body, page)
            self._set("raw", self._raw(data.attempt))
        else:
            self.pages = BodyView(page, pages.raw)
            self._set("body", self._body(data.attempt))

    def show_tab(self, key: str) -> None:
        for tabs in self.query("#detail-tabs").results(TabbedContent):
            tabs.active = f"tab-{key}"
            return
        self.call_after_refresh(self.show_tab, key)  # the tabs are not mounted yet

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self.is_mounted and self.data is not None:
            self._paint()

    def on_resize(self) -> None:
        if self.data is not None:
            self._paint()

    # -- rendering ----------------------------------------------------------------------------

    def _s(self, name: str) -> Style:
        return self.get_component_rich_style(f"delivery-detail--{name}", partial=True)

    def _set(self, key: str, content: Text | Content | str) -> None:
        """Show ``content`` in one part; the screen's layout is redone only when the part's
        height changes (a new delivery's text usually takes as many lines as the last one's)."""
        shown = Text(content) if isinstance(content, str) else content
        for widget in self.query(f"#detail-{key}").results(Static):
            width = widget.content_region.width
            if isinstance(widget, BodyText):
                # A body page: its lines are wrapped once, here, and drawn when in view.
                widget.update(shown, layout=False)
                wrapped = self.pages.wrapped if self.pages is not None else None
                if wrapped is not None and wrapped.content is shown:
                    widget.seed(wrapped)  # wrapped in the worker thread
                lines = widget.lines_at(width)
                height = len(lines) if lines is not None else None
                if height is None or self._heights.get(key) != height:
                    widget.refresh(layout=True)
                self._heights[key] = height
                continue
            height = self._height(shown, width)
            layout = height is None or self._heights.get(key) != height
            self._heights[key] = height
            widget.update(shown, layout=layout)

    def _height(self, content: Text | Content, width: int) -> int | None:
        """Lines ``content`` takes at ``width``, or None when unsure (then a layout decides)."""
        if width <= 0:
            return None
        lines = content.plain.split("\n")
        if all(cell_len(line) <= width for line in lines):
            return len(lines)  # nothing to wrap: a line each
        if isinstance(content, Text) and len(content.plain) <= 4096:
            return len(content.wrap(self.app.console, width))
        return None  # long or wrapped Content: its height is Textual's to find

    def _body_width(self) -> int:
        """The width the body page is drawn at (0 when not known yet)."""
        found = self.query("#detail-body").results(BodyText)
        widget = next(iter(found), None)
        return widget.content_region.width if widget is not None else 0

    def _ready(self) -> bool:
        """Whether the tabs' contents are mounted (TabbedContent mounts them a little later)."""
        return bool(self.query("#detail-forwards"))

    def _render_empty(
        self, why: str = "Select a delivery in the event log to see it here."
    ) -> None:
        if self.data is not None:
            return  # a delivery arrived before the placeholder did
        self._set("summary", why)
        self.query_one("#detail-drift", Static).display = False
        self._set("attempts", "")
        for key, _title in TABS:
            self._set(key, "")

    def _paint(self) -> None:
        data = self.data
        if data is None:
            return
        self._set("summary", summary_text(data.attempt, self._s))
        drift = self.query_one("#detail-drift", Static)
        drift.display = bool(data.drift)
        if data.drift:
            self._set("drift", drift_text(data.drift, self._s))
        self._set(
            "attempts",
            attempts_text(
                data, self.query_one("#detail-attempts", Static).content_region.width, self._s
            ),
        )
        # Only the tab on screen is drawn now; the others when they are opened.
        self._painted_tabs.clear()
        self._paint_tab(self.active_tab)

    @property
    def active_tab(self) -> str:
        for tabs in self.query("#detail-tabs").results(TabbedContent):
            return tabs.active.removeprefix("tab-")
        return TABS[0][0]  # the tabs are not mounted yet: the first one will be active

    def _paint_tab(self, key: str) -> None:
        data = self.data
        if data is None or key in self._painted_tabs:
            return
        self._painted_tabs.add(key)
        if key == "headers":
            self._set("headers", headers_text(data.attempt, self._s))
        elif key == "raw":
            self._set("raw", self._raw(data.attempt))
        elif key == "body":
            self._set("body", self._body(data.attempt))
        elif key == "forwards":
            self._set("forwards", forwards_text(data.forwards, self._s))

    @on(TabbedContent.TabActivated, "#detail-tabs")
    def _tab_opened(self, event: TabbedContent.TabActivated) -> None:
        self._paint_tab(self.active_tab)

    def _raw(self, a: Attempt) -> Text | Content:
        if not a.body or self.pages is None:
            return Text("(empty body)")
        return self.pages.raw.content

    def _body(self, a: Attempt) -> Text | Content:
        if not a.body or self.pages is None:
            return Text("(empty body)")
        return self.pages.body.content
