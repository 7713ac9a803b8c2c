"""The event log's lines: a Line API view drawing only the rows on screen from a ``LogWindow``.

It neither queries the store nor knows about filters: the event log pane feeds it rows and listens
to its messages (cursor moved, a detail asked for, an edge of the window reached).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from walletpass_tui.text import ELLIPSIS
from walletpass_tui.ui.view.log_columns import (
    DRIFT_MARK,
    GAP,
    Column,
    acknowledged,
    cell_text,
    is_check,
    layout,
)
from walletpass_tui.ui.view.log_window import LogWindow
from walletpass_tui.webhooks.models import VERIFIED, LogRow

PaintObserver = Callable[[LogRow], None]


class LogLines(ScrollView, can_focus=True):
    """Rows of the event log, newest on top, with a cursor."""

    BINDINGS = [
        Binding("j,down", "cursor_down", "Down", show=False, id="log.down"),
        Binding("k,up", "cursor_up", "Up", show=False, id="log.up"),
        Binding("pagedown,ctrl+d", "page_down", "Page down", show=False, id="log.page_down"),
        Binding("pageup,ctrl+u", "page_up", "Page up", show=False, id="log.page_up"),
        Binding("g,home", "first", "Newest", show=False, id="log.newest"),
        Binding("G,end", "last", "Oldest loaded", show=False, id="log.oldest"),
        Binding("enter", "open", "Detail", id="log.open"),
    ]

    COMPONENT_CLASSES = {
        "log-lines--cursor",
        "log-lines--cursor-blurred",
        "log-lines--time",
        "log-lines--verified",
        "log-lines--rejected",
        "log-lines--ack-ok",
        "log-lines--ack-failed",
        "log-lines--dim",
        "log-lines--redelivery",
        "log-lines--check",
        "log-lines--drift",
    }

    # Benchmarks set this to learn when a row first reaches the screen; None costs nothing.
    paint_observer: PaintObserver | None = None

    class CursorMoved(Message):
        """The selected row changed: by a person (``live`` False) or by new rows arriving
        while the view follows them (``live`` True)."""

        def __init__(self, row: LogRow | None, *, live: bool = False) -> None:
            super().__init__()
            self.row = row
            self.live = live

    class Opened(Message):
        def __init__(self, row: LogRow) -> None:
            super().__init__()
            self.row = row

    class EdgeReached(Message):
        """The cursor or the scroll position came near an end of the window with more beyond."""

        def __init__(self, older: bool) -> None:
            super().__init__()
            self.older = older

    class FollowingChanged(Message):
        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following

    def __init__(
        self, window: LogWindow, *, name: str | None = None, id: str | None = None
    ) -> None:
        super().__init__(name=name, id=id)
        self.window = window
        self.following = True
        self._lines: LRUCache[tuple[int, bool, bool, int, bool], Strip] = LRUCache(512)
        self._styles: dict[str, Style] = {}
        # The rows whose delivery brought payload drift (set once the app has read them).
        self.drift_marks: Container[int] = ()
        self._columns: list[tuple[Column, int]] = []
        self._columns_width = -1
        self._columns_measured = -1  # the window's widths_seen the columns were laid out for
        self._last_reported: int | None = None
        self.header: LogHeader | None = None

    # -- feeding ------------------------------------------------------------------------------

    def rows_changed(self, shift: int = 0, *, reset: bool = False) -> None:
        """The window changed; ``shift`` rows were added (or removed, negative) above the view."""
        self._update_virtual_size()
        if reset:
            self.following = True
            self.scroll_to(y=0, animate=False)
        elif self.following and self.window.cursor == 0:
            self.scroll_to(y=0, animate=False)
        elif shift:
            self.scroll_to(y=self.scroll_y + shift, animate=False)
        self._keep_cursor_visible()
        self.refresh()
        self._report_cursor(live=True)
        self._check_edges()

    def _update_virtual_size(self) -> None:
        region = self.scrollable_content_region
        size = Size(region.width, len(self.window))
        before = self.virtual_size
        if size == before:
            return
        if (before.height > region.height) != (size.height > region.height):
            self.virtual_size = size  # the scrollbar comes or goes: a layout
            return
        # More or fewer rows, the scrollbar staying (its gutter is reserved): no layout of the
        # screen, only this view and its scrollbar are drawn again.
        self.set_reactive(LogLines.virtual_size, size)
        bar = self.vertical_scrollbar
        bar.window_virtual_size = size.height
        bar.window_size = region.height
        self.refresh()

    # -- rendering ----------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self._forget()
        self._update_virtual_size()
        self._keep_cursor_visible()
        if self.header is not None:
            self.header.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget()

    def on_focus(self) -> None:
        self._forget()
        self.refresh()

    def on_blur(self) -> None:
        self._forget()
        self.refresh()

    @property
    def columns(self) -> list[tuple[Column, int]]:
        """The columns for the width the rows are drawn at (recomputed when it changes)."""
        width = self.scrollable_content_region.width
        measured = self.window.widths_seen
        if width != self._columns_width or measured != self._columns_measured:
            self._columns_width = width
            self._columns_measured = measured
            columns = layout(width, self.window.widest if len(self.window) else None)
            if columns != self._columns:
                self._columns = columns
                self._forget()
                if self.header is not None:
                    self.header.refresh()
        return self._columns

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_y) + y
        width = self.scrollable_content_region.width
        rows = self.window.rows
        if not 0 <= index < len(rows):
            return Strip.blank(width, self._base_style())
        row = rows[index]
        selected = index == self.window.cursor
        self.columns  # noqa: B018 - laid out again (and the cache dropped) when the widths change
        drifted = row.id in self.drift_marks
        key = (row.id, selected, self.has_focus, width, drifted)
        strip = self._lines.get(key)
        if strip is None:
            strip = self._render_row(row, selected, width, drifted)
            self._lines[key] = strip
        observer = LogLines.paint_observer
        if observer is not None:
            observer(row)
        return strip

    def _forget(self) -> None:
        """Drop the rows drawn and the styles looked up (the columns, the theme or the focus
        changed)."""
        self._lines.clear()
        self._styles.clear()

    def _style(self, name: str) -> Style:
        """A component's style, looked up once until the styles change (each row uses several)."""
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(name, partial=True)
        return style

    def _base_style(self) -> Style:
        """The view's own style (``rich_style`` walks the ancestors: once, not once a row)."""
        style = self._styles.get("")
        if style is None:
            style = self._styles[""] = self.rich_style
        return style

    def _render_row(self, row: LogRow, selected: bool, width: int, drifted: bool = False) -> Strip:
        """One row as segments, a cell at a time, each in its final style (a stream of rows
        draws each new one once, so this runs for every row that reaches the screen)."""
        base = self._base_style()
        cursor: Style | None = None
        if selected:
            cursor = self._style(
                "log-lines--cursor" if self.has_focus else "log-lines--cursor-blurred"
            )
        line = base + cursor if cursor is not None else base
        drift = self._style("log-lines--drift") if drifted else None
        segments: list[Segment] = []
        gap = Segment(" " * GAP, line)
        used = 0
        for index, (column, col_width) in enumerate(self.columns):
            if index:
                segments.append(gap)
                used += GAP
            key = column.key
            style = base + self._cell_style(row, key)
            marked: Style | None = None
            if drift is not None and key == "verdict":  # its payload drifted from the schema
                marked = style + drift
            if cursor is not None:  # the selection over every cell
                style = style + cursor
                marked = marked + cursor if marked is not None else None
            text = cell_text(row, key)
            used += _cell(segments, text, col_width, column.right, style, marked)
        if used < width:
            segments.append(Segment(" " * (width - used), line))
        strip = Strip(_merged(segments), max(used, width))
        return strip.crop(0, width) if used > width else strip

    def _cell_style(self, row: LogRow, key: str) -> Style:
        if key == "verdict":
            if is_check(row):
                return self._style("log-lines--check")
            return self._style(
                "log-lines--verified" if row.verdict == VERIFIED else "log-lines--rejected"
            )
        if key == "status":
            return self._style(
                "log-lines--ack-ok" if acknowledged(row) else "log-lines--ack-failed"
            )
        if key == "attempt" and row.attempt_no > 1:
            return self._style("log-lines--redelivery")
        if key == "time":
            return self._style("log-lines--time")
        if key in ("reason", "endpoint"):
            return self._style("log-lines--dim")
        return Style()

    # -- cursor -------------------------------------------------------------------------------

    def move_cursor(self, index: int) -> None:
        if not len(self.window):
            return
        before = self.window.cursor
        self.window.move_to(index)
        if self.window.cursor != before:
            self._forget()
        self._keep_cursor_visible()
        self.refresh()
        self._set_following(self.window.cursor == 0 and self.window.at_top)
        self._report_cursor()
        self._check_edges()

    def _keep_cursor_visible(self) -> None:
        height = self.scrollable_content_region.height
        if not height or not len(self.window):
            return
        cursor = self.window.cursor
        top = round(self.scroll_y)
        if cursor < top:
            self.scroll_to(y=cursor, animate=False)
        elif cursor >= top + height:
            self.scroll_to(y=cursor - height + 1, animate=False)

    def _set_following(self, following: bool) -> None:
        if following != self.following:
            self.following = following
            self.post_message(self.FollowingChanged(following))

    def _report_cursor(self, *, live: bool = False) -> None:
        row = self.window.current
        row_id = row.id if row else None
        if row_id != self._last_reported:
            self._last_reported = row_id
            self.post_message(self.CursorMoved(row, live=live))

    def _check_edges(self) -> None:
        if self.window.wants_older():
            self.post_message(self.EdgeReached(older=True))
        elif self.window.wants_newer():
            self.post_message(self.EdgeReached(older=False))

    def follow(self) -> None:
        """Back to the newest row, following new ones (the pane reloads if the window left)."""
        self.move_cursor(0)
        self.scroll_to(y=0, animate=False)
        self._set_following(self.window.at_top)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.window.cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.window.cursor - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self.window.cursor + max(1, self.scrollable_content_region.height - 1))

    def action_page_up(self) -> None:
        self.move_cursor(self.window.cursor - max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        self.follow()

    def action_last(self) -> None:
        self.move_cursor(len(self.window) - 1)

    def action_open(self) -> None:
        row = self.window.current
        if row is not None:
            self.post_message(self.Opened(row))

    def on_click(self, event: events.Click) -> None:
        index = round(self.scroll_y) + event.y
        if not 0 <= index < len(self.window):
            return
        if index == self.window.cursor and event.chain >= 2:
            self.action_open()
        else:
            self.move_cursor(index)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(new_value) > 0 and self.following:
            self._set_following(False)
        self._check_edges()

    def visible_rows(self) -> Sequence[LogRow]:
        """The rows currently on screen (tests and benchmarks read them)."""
        top = round(self.scroll_y)
        return self.window.rows[top : top + self.scrollable_content_region.height]


class LogHeader(Widget):
    """The column titles above a ``LogLines``, laid out exactly as its rows."""

    COMPONENT_CLASSES = {"log-header--title"}

    def __init__(self, view: LogLines, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view = view

    def render(self) -> Text:
        style = self.get_component_rich_style("log-header--title", partial=True)
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        for index, (column, width) in enumerate(self.view.columns):
            if index:
                line.append(" " * GAP)
            title = column.title.rjust(width) if column.right else column.title.ljust(width)
            line.append(title[:width], style)
        return line


def _cell(
    segments: list[Segment],
    text: str,
    width: int,
    right: bool,
    style: Style,
    marked: Style | None,
) -> int:
    """Append one cell of ``width`` cells in ``style``: ``text``, then the drift mark in
    ``marked`` when given, cut with an ellipsis when too long, padded (on the left for a
    ``right`` column) when too short. Returns the cells used."""
    plain = text if marked is None else f"{text} {DRIFT_MARK}"
    size = cell_len(plain)
    if size > width:
        plain = set_cell_size(plain, width - 1) + ELLIPSIS if width > 0 else ""
        size = cell_len(plain)
    pad = Segment(" " * (width - size), style) if size < width else None
    if pad is not None and right:
        segments.append(pad)
    cut = len(text)  # where the mark starts
    if marked is not None and cut < len(plain):
        if cut:
            segments.append(Segment(plain[:cut], style))
        segments.append(Segment(plain[cut:], marked))
    elif plain:
        segments.append(Segment(plain, style))
    if pad is not None and not right:
        segments.append(pad)
    return max(size, width)


def _merged(segments: list[Segment]) -> list[Segment]:
    """Neighbours in the same style made one segment."""
    merged: list[Segment] = []
    for segment in segments:
        # Styles are combined through rich's cache: equal styles are one object.
        if merged and merged[-1].style is segment.style:
            last = merged[-1]
            merged[-1] = Segment(last.text + segment.text, last.style)
        else:
            merged.append(segment)
    return merged
