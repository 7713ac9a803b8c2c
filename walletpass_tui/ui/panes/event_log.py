"""The Events pane: the live log of deliveries, newest on top, over the whole stored history.

It owns the log's data: the first page and every further one come from the store (``log_page``),
new attempts come from ``LiveRows``, and a bounded ``LogWindow`` holds what is in memory. The
``LogLines`` below it only draws.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input

from walletpass_tui.query.known import KnownPaths, load_known
from walletpass_tui.text import clip, visible
from walletpass_tui.ui.messages import DeliveriesStored, live_signals
from walletpass_tui.ui.view.context import DashboardContext
from walletpass_tui.ui.view.filter_completion import complete
from walletpass_tui.ui.view.log_query import filter_text, matches, parse_filter
from walletpass_tui.ui.view.log_window import DEFAULT_CAPACITY, PAGE, LogWindow
from walletpass_tui.ui.widgets.border_titles import BorderTitles
from walletpass_tui.ui.widgets.filter_completions import FilterCompletions
from walletpass_tui.ui.widgets.filter_input import FilterInput
from walletpass_tui.ui.widgets.log_lines import LogHeader, LogLines
from walletpass_tui.ui.widgets.notice import Notice, NoticeText
from walletpass_tui.ui.worker_errors import ReportsWorkerErrors, failure_text
from walletpass_tui.webhooks.models import (
    REJECTED,
    VERIFIED,
    Attempt,
    LogFilter,
    LogRow,
    StoredVerdict,
)

FILTER_DEBOUNCE_S = 0.12
KNOWN_FRESH_S = 5.0  # the known paths are read again when older than this and the box is used


FILTER_HINT = (
    "words · topic:activated · verdict:rejected · data.platform:google · has:data.tier"
    "   (Enter: done · Esc: clear)"
)


class EventLogPane(ReportsWorkerErrors, Vertical):
    """The event log with its filter bar."""

    BINDINGS = [
        Binding(
            "slash",
            "filter",
            "Filter",
            id="log.filter",
            tooltip="Filter: words, topic:…, verdict:…, fields: data.x:…",
        ),
        Binding(
            "f",
            "follow",
            "Follow",
            id="log.follow",
            tooltip="Jump to the newest and follow new deliveries",
        ),
        Binding(
            "v",
            "cycle_verdict",
            "Verdict",
            show=False,
            id="log.cycle_verdict",
            tooltip="Filter: all, verified, rejected",
        ),
        Binding(
            "t",
            "cycle_topic",
            "Topic",
            show=False,
            id="log.cycle_topic",
            tooltip="Filter: every topic, then each one",
        ),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="log.clear_filter"),
    ]

    class Ready(Message):
        """The log shows its first page (or knows it is empty)."""

    def __init__(
        self,
        context: DashboardContext,
        *,
        capacity: int = DEFAULT_CAPACITY,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.context = context
        self.window = LogWindow(capacity)
        self.filter = LogFilter()
        self.filter_problem: str | None = None
        self.total: int | None = None  # rows matching the filter in the store
        # The newest row id ``total`` counts: a row told again after a read that saw it (a
        # delivery stored just before the log was read again, told just after) is not added.
        self._counted_upto = 0
        self.problem: str | None = None  # why the history could not be read (shown in the pane)
        self._generation = 0
        self._resetting = False
        self._paging = False
        self._recent: deque[LogRow] = deque(maxlen=capacity)
        self._debounce: Timer | None = None
        self.known: KnownPaths | None = None  # the paths a query may name (None: not read yet)
        self._known_at = 0.0
        self.border_title = "Events"
        # The title's count changes with every frame of new rows: its line alone is redrawn.
        self._titles = BorderTitles(self)

    def compose(self) -> ComposeResult:
        completions = FilterCompletions(id="log-completions")
        filter_input = FilterInput(
            completions,
            placeholder=FILTER_HINT,
            id="log-filter",
            classes="log-filter",
            compact=True,
        )
        filter_input.display = False
        yield filter_input
        yield completions
        view = LogLines(self.window, id="log-lines")
        header = LogHeader(view, id="log-header")
        view.header = header
        yield header
        yield Notice(id="log-notice")
        yield view

    @property
    def view(self) -> LogLines:
        return self.query_one("#log-lines", LogLines)

    @property
    def filter_input(self) -> FilterInput:
        return self.query_one("#log-filter", FilterInput)

    @property
    def completions(self) -> FilterCompletions:
        return self.query_one("#log-completions", FilterCompletions)

    @property
    def paging(self) -> bool:
        """A page of older or newer rows is being fetched (tests wait for it to arrive)."""
        return self._paging

    @property
    def reloading(self) -> bool:
        """The first page for the current filter is being fetched (after a filter or reload)."""
        return self._resetting

    def on_mount(self) -> None:
        signals = live_signals(self)
        signals.deliveries.subscribe(self, self._deliveries_stored, immediate=True)
        signals.drift.subscribe(self, self._drift_marked, immediate=True)
        signals.log_shows = lambda a: matches(self.filter, a)  # its rows go out without a wait
        first = self.context.take_first_page()
        if first is not None and first.done():
            if not first.cancelled() and first.exception() is None:
                # Read while the screen was built: shown in its very first frame.
                self._generation += 1
                self._show_first_page(first.result(), self.filter, self._generation)
                return
            first = None  # that read failed: the log reads again (and says why if it fails)
        self.reload(first)

    def _deliveries_stored(self, message: DeliveriesStored) -> None:
        self.ingest(message.attempts, message.dropped)

    def _drift_marked(self, changed: frozenset[int] | None) -> None:
        """Deliveries found to have drifted: their rows get the mark (drawn if on screen)."""
        marks = live_signals(self).drift_marks
        if marks is not None:
            view = self.view
            view.drift_marks = marks
            if changed is None or any(row.id in changed for row in view.visible_rows()):
                view.refresh()

    def focus_log(self) -> None:
        self.view.focus()

    # -- loading ------------------------------------------------------------------------------

    def reload(self, reading: asyncio.Future[list[LogRow]] | None = None) -> None:
        """Start over from the newest row matching the filter (``reading``: that page, being
        read already)."""
        self._generation += 1
        self._resetting = True
        self._recent.clear()
        self.problem = None
        self._reset(self.filter, self._generation, reading)

    @work(exclusive=True, group="log-reset", exit_on_error=False)
    async def _reset(
        self, flt: LogFilter, generation: int, reading: asyncio.Future[list[LogRow]] | None
    ) -> None:
        rows = await (reading or self.context.store.log_page(flt, limit=PAGE))
        if generation != self._generation:
            return
        self._show_first_page(rows, flt, generation)

    def _show_first_page(self, rows: list[LogRow], flt: LogFilter, generation: int) -> None:
        self.window.reset(rows, has_older=len(rows) == PAGE)
        self._resetting = False
        self._paging = False
        late = [r for r in self._recent if not rows or r.id > rows[0].id]
        if late:
            self.window.add_live(late[::-1], following=True)
        self.view.rows_changed(reset=True)
        # A short first page is the whole story; otherwise counting may take a moment (a text
        # filter over a long history), so it comes after the rows are on screen.
        self.total = len(self.window) if len(rows) < PAGE else None
        self._counted_upto = max((r.id for r in (*rows, *late)), default=0)
        self._update_title()
        self._update_notice()
        # Ready once the page is on screen: what waits for it (the templates, the tunnel lookup)
        # comes after the first rows, never before them.
        self.call_after_refresh(self.post_message, self.Ready())
        if self.total is None:
            self._count(flt, generation)

    @work(exclusive=True, group="log-count", exit_on_error=False)
    async def _count(self, flt: LogFilter, generation: int) -> None:
        total = await self.context.store.count(flt)
        if generation == self._generation:
            self.total = total
            self._update_title()

    @on(LogLines.EdgeReached)
    def _edge(self, event: LogLines.EdgeReached) -> None:
        event.stop()
        if self._resetting or self._paging:
            return
        self._paging = True
        self._page(event.older, self._generation)

    @work(group="log-page", exit_on_error=False)
    async def _page(self, older: bool, generation: int) -> None:
        store = self.context.store
        try:
            if older:
                bottom = self.window.oldest_id
                rows = await store.log_page(self.filter, limit=PAGE, before_id=bottom)
                if generation != self._generation:
                    return
                shift = self.window.add_older(rows, exhausted=len(rows) < PAGE)
            else:
                top = self.window.newest_id
                rows = await store.log_page(
                    self.filter, limit=PAGE, after_id=top, oldest_first=True
                )
                if generation != self._generation:
                    return
                reached = len(rows) < PAGE
                shift = self.window.add_newer(rows, reached_top=reached)
                if reached:
                    newest = self.window.newest_id or 0
                    late = [r for r in self._recent if r.id > newest]
                    if late:
                        shift += self.window.add_live(late[::-1], following=False)
        finally:
            if generation == self._generation:
                self._paging = False
        self.view.rows_changed(shift)
        self._update_title()

    # -- live rows ------------------------------------------------------------------------------

    def ingest(self, attempts: Sequence[Attempt], dropped: int = 0) -> None:
        """Attempts just stored (oldest first), from ``LiveRows``."""
        if dropped:
            self.reload()
            return
        matched = [LogRow.of(a) for a in attempts if matches(self.filter, a)]
        if not matched:
            return
        self._recent.extend(matched)
        if self.total is not None:
            self.total += sum(r.id > self._counted_upto for r in matched)
        self._counted_upto = max(self._counted_upto, max(r.id for r in matched))
        if self._resetting:
            return
        shift = self.window.add_live(matched[::-1], following=self.view.following)
        self.view.rows_changed(shift)
        self._update_title()
        self._update_notice()

    # -- filter -----------------------------------------------------------------------------

    def set_filter(self, flt: LogFilter, problem: str | None = None) -> None:
        if flt == self.filter and problem == self.filter_problem:
            return
        self.filter = flt
        self.filter_problem = problem
        self.total = None
        self.reload()
        self._update_title()

    def action_filter(self) -> None:
        field = self.filter_input
        field.display = True
        if not field.value and not self.filter.empty:
            field.value = filter_text(self.filter)
        field.focus()
        self._read_known()

    # -- the paths a query may name ------------------------------------------------------------

    def _read_known(self) -> None:
        """Read the known paths again (in a thread) when they are missing or old."""
        if self.known is not None and time.monotonic() - self._known_at < KNOWN_FRESH_S:
            return
        self._known_at = time.monotonic()
        self._load_known(self.context.settings.database_path)

    @work(thread=True, exclusive=True, group="log-known", exit_on_error=False)
    def _load_known(self, history: Path) -> None:
        known = load_known(history)
        self.app.call_from_thread(self._known_read, known)

    def _known_read(self, known: KnownPaths) -> None:
        self.known = known
        field = self.filter_input
        if field.display and field.has_focus:
            self._offer(field)
            if field.value:
                self._apply_typed(field.value)

    def _offer(self, field: Input) -> None:
        """Show what the word at the cursor may become (nothing when it is no path)."""
        known = self.known
        found = complete(field.value, field.cursor_position, known) if known else None
        self.completions.show(found)

    # -- typing --------------------------------------------------------------------------------

    @on(Input.Changed, "#log-filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        event.stop()
        if self._debounce is not None:
            self._debounce.stop()
        value = event.value
        self._read_known()
        self._offer(event.input)
        self._debounce = self.set_timer(FILTER_DEBOUNCE_S, lambda: self._apply_typed(value))

    def _apply_typed(self, value: str, *, whole: bool = False) -> None:
        """Filter by what is typed; the word the completions are open for is still being
        typed and filters once it is taken, followed by a space, or ``whole`` (Enter)."""
        found = self.completions.completion if self.completions.display else None
        if not whole and found is not None and found.end == len(value):
            value = value[: found.start].rstrip("-").removesuffix("has:").rstrip("-")
        parsed = parse_filter(value, self.known)
        self.set_filter(parsed.filter, parsed.problem)

    @on(Input.Submitted, "#log-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        if self._debounce is not None:
            self._debounce.stop()
        self.completions.show(None)
        self._apply_typed(event.value, whole=True)
        if not event.value.strip():
            self.filter_input.display = False
        self.focus_log()

    def action_clear_filter(self) -> None:
        if self.completions.display:  # Esc closes the completions first
            self.completions.show(None)
            return
        field = self.filter_input
        if not field.display and self.filter.empty:
            return
        if self._debounce is not None:
            self._debounce.stop()
        field.value = ""
        field.display = False
        self.completions.show(None)
        self.set_filter(LogFilter())
        self.focus_log()

    def action_cycle_verdict(self) -> None:
        order: list[StoredVerdict | None] = [None, VERIFIED, REJECTED]
        following = order[(order.index(self.filter.verdict) + 1) % len(order)]
        self.set_terms(replace(self.filter, verdict=following))

    def action_cycle_topic(self) -> None:
        from walletpass_tui.api.topics import TOPICS

        order: list[str | None] = [None, *TOPICS]
        current = self.filter.topic if self.filter.topic in order else None
        following = order[(order.index(current) + 1) % len(order)]
        self.set_terms(replace(self.filter, topic=following))

    def set_terms(self, flt: LogFilter) -> None:
        self.set_filter(flt)
        text = filter_text(flt)
        with self.prevent(Input.Changed):
            self.filter_input.value = text
        self.filter_input.display = bool(text)

    def action_follow(self) -> None:
        if self.window.has_newer or self.problem is not None:
            self.reload()
        else:
            self.view.follow()
        self._update_title()
        self.focus_log()

    @on(LogLines.FollowingChanged)
    def _following_changed(self, event: LogLines.FollowingChanged) -> None:
        self._update_title()

    def worker_failed(self, group: str, error: BaseException | None) -> None:
        """The history could not be read (a locked or damaged database): say so in the pane."""
        self._resetting = False
        self._paging = False
        self.problem = failure_text(error)
        self._update_title()
        self._update_notice()

    # -- presentation ------------------------------------------------------------------------------

    def _update_title(self) -> None:
        if self.problem is not None:
            self._titles.show(Text("Events · history unreadable"))
            return
        total = "…" if self.total is None else f"{self.total:,}"
        title = Text("Events ")
        title.append(total)
        if not self.filter.empty:
            title.append(" matching ")
            title.append(clip(visible(filter_text(self.filter)), 40))
        if self.view.following and not self.window.has_newer:
            title.append(" · following")
        else:
            title.append(" · paused")
            if self.window.unseen:
                title.append(f" · {self.window.unseen:,} newer ↑")
            title.append(" (f: follow)")
        problem = Text(f"⚠ {visible(self.filter_problem)}") if self.filter_problem else None
        self._titles.show(title, problem)

    def _update_notice(self) -> None:
        notice = self.query_one("#log-notice", Notice)
        if self.problem is not None:
            notice.show(
                NoticeText(
                    "The history cannot be read.",
                    hint=self.problem,
                    keys=(("f", "try again"),),
                    error=True,
                )
            )
            return
        if len(self.window):
            if notice.display:
                notice.show(None)
            return
        if self.filter.empty:
            address = self.context.receiver_address()
            where = f"http://{address}" if address else "the receiver (not listening)"
            notice.show(
                NoticeText(
                    "No deliveries yet.",
                    hint=f"Point your endpoint's sender at {where}; every attempt, verified or "
                    "rejected, shows up here the moment it is stored.",
                )
            )
        else:
            notice.show(
                NoticeText(
                    "No delivery matches the filter.",
                    hint=filter_text(self.filter),
                    keys=(("esc", "clear the filter"), ("/", "edit it")),
                )
            )
