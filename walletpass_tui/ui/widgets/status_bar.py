"""The header line: where the receiver listens (or which receiver in another process the dashboard
is attached to, or that it stopped), the public URL, deliveries per minute over the
last hour (a sparkline), live counts, paused acks.

It follows the app's ``LiveSignals`` by itself; ``ReceiverState`` is re-exported from here. The
sparkline is drawn again at most once a second (the live path stays cheap at 100 deliveries a
second), and only when the counts changed or a minute went by.

Only the cells that changed are sent to the screen: while deliveries stream in that is the
counts at the right end, so the frame that draws them does not compose the panes on the left
again (Textual composes every widget under the bounding box of what changed). A value set
again unchanged draws nothing.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region
from textual.reactive import reactive
from textual.widget import Widget

from walletpass_tui.text import one_line
from walletpass_tui.ui.messages import ReceiverState, live_signals
from walletpass_tui.webhooks.models import Stats

SPARK_S = 1.0  # the sparkline is drawn again at most this often
QUIET_CELL = "·"  # charts.QUIET: a minute with nothing in it (that module loads after paint)
SPARK_WIDTHS = (30, 12)  # cells for the hour: 2 minutes a cell, or 5 when room is short

__all__ = ["ReceiverState", "StatusBar"]


class StatusBar(Widget):
    """One line at the top of the dashboard."""

    COMPONENT_CLASSES = {
        "status-bar--title",
        "status-bar--mode",
        "status-bar--listening",
        "status-bar--stopped",
        "status-bar--label",
        "status-bar--value",
        "status-bar--verified",
        "status-bar--rejected",
        "status-bar--redelivered",
        "status-bar--paused",
        "status-bar--pending",
        "status-bar--spark",
        "status-bar--drift",
    }

    # Drawn by _changed(): only the cells a new value changes (never the whole line).
    stats: reactive[Stats | None] = reactive(None, repaint=False)  # None: still counting
    receiver: reactive[ReceiverState] = reactive(ReceiverState, repaint=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._styles: dict[str, Style] = {}
        self.sparks: dict[int, str] = {}  # the sparkline at each width (empty: not read yet)
        self.per_minute = 0  # deliveries in the last whole minute
        self._spark_state: tuple[int, int] | None = None  # (traffic version, minute) drawn
        self.drift = 0  # payload drift findings (learned schemas)
        # The parts that change seldom (the receiver's side, the sparkline), made once until
        # they change: the counts change on every frame while deliveries stream in.
        self._parts: dict[tuple[str, bool, bool], Text] = {}
        self._spark_at = float("-inf")  # when the sparkline was last read
        self._drawn: list[Cell] | None = None  # the line as last rendered, a cell at a time
        self._made: tuple[int, Text] | None = None  # the line made for a width, not drawn yet

    def on_mount(self) -> None:
        signals = live_signals(self)
        self.stats = signals.last_stats
        self.receiver = signals.last_receiver
        signals.stats.subscribe(self, self._set_stats, immediate=True)
        signals.receiver.subscribe(self, self._set_receiver, immediate=True)
        signals.drift.subscribe(self, self._drift_changed, immediate=True)
        self._drift_changed(None)
        self._update_spark()
        self.set_interval(SPARK_S, self._update_spark)

    def watch_stats(self) -> None:
        self._changed()

    def watch_receiver(self) -> None:
        self._parts.clear()
        self._changed()

    def on_resize(self, event: events.Resize) -> None:
        self._drawn = self._made = None  # Textual draws the whole line at its new size

    def _changed(self) -> None:
        """Something the line shows changed: send the cells that differ from the line as last
        rendered to the screen (none when it reads the same). A line with wide characters, or
        one rendered at another width, is drawn whole."""
        width = self.size.width
        drawn, self._drawn = self._drawn, None
        if not self.is_mounted or width <= 0:
            self.refresh()
            return
        line = self._line(width)
        self._made = (width, line)  # what render() returns, unless something changes first
        now = _cells(line)
        if drawn is None or now is None or len(drawn) != width or len(now) != width:
            self.refresh()
            return
        self._drawn = now
        start = next((x for x in range(width) if drawn[x] != now[x]), None)
        if start is None:
            return
        end = next(x for x in range(width, 0, -1) if drawn[x - 1] != now[x - 1])
        self.refresh(Region(start, 0, end - start, 1))

    def _update_spark(self) -> None:
        """The sparkline from the app's traffic, if it changed or a minute went by; at most once
        per SPARK_S (while counts stream in, it is read in the frame that draws them)."""
        traffic = live_signals(self).traffic
        if traffic is None or not traffic.loaded:
            return
        now = time.monotonic()
        if now - self._spark_at < SPARK_S * 0.9:  # the timer's tick may come a little early
            return
        self._spark_at = now
        state = (traffic.version, traffic.minute())
        if state == self._spark_state:
            return
        self._spark_state = state
        from walletpass_tui.ui.view.charts import spark  # with the history, after paint

        series = traffic.series(lambda m: m.deliveries)
        self.sparks = {width: spark(series, width) for width in SPARK_WIDTHS}
        self.per_minute = traffic.last_minute()
        self._parts.clear()
        self._changed()

    def _set_stats(self, stats: Stats | None) -> None:
        self.stats = stats
        self._update_spark()  # in the same frame as the counts, rather than a frame of its own

    def _set_receiver(self, state: ReceiverState) -> None:
        self.receiver = state

    def _drift_changed(self, _: object) -> None:
        marks = live_signals(self).drift_marks
        count = (marks.findings or 0) if marks is not None else 0
        if count != self.drift:
            self.drift = count
            self._changed()

    def _s(self, name: str) -> Style:
        """A component's style, looked up once per theme (the line is drawn on every count)."""
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(name, partial=True)
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._parts.clear()
        self._drawn = self._made = None

    def _part(self, kind: str, first: bool, second: bool = False) -> Text:
        """A part of the line that changes seldom: made once until the receiver, the
        sparkline or the theme changes."""
        key = (kind, first, second)
        part = self._parts.get(key)
        if part is None:
            if kind == "left":
                part = self._left(full_public=first, public_host=second)
            else:
                part = self._spark(SPARK_WIDTHS[0] if first else SPARK_WIDTHS[1])
            self._parts[key] = part
        return part

    def render(self) -> Text:
        width = self.size.width
        made, self._made = self._made, None
        line = made[1] if made is not None and made[0] == width else self._line(width)
        self._drawn = _cells(line) if width > 0 else None
        return line

    def _line(self, width: int) -> Text:
        """The receiver's state on the left, the counts on the right; when room is short the
        counts lose their words, then the sparkline narrows, then it goes before the public URL
        does (where the service should post matters more than the last hour's shape)."""
        full, bare = self._part("left", True), self._part("left", False)
        host = self._part("left", True, True)
        words, short = self._counts(words=True), self._counts(words=False)
        wide, narrow = self._part("spark", True), self._part("spark", False)
        for left, right in (
            (full, wide + words),
            (full, wide + short),
            (full, narrow + short),
            (host, narrow + short),
            (full, short),
            (bare, wide + short),
            (bare, narrow + short),
        ):
            if left.cell_len + right.cell_len + 2 <= width:
                return self._join(left, right, width)
        return self._join(bare, short, width)

    def _spark(self, width: int) -> Text:
        """The last hour's deliveries per minute, and the last whole minute's count."""
        line = Text(no_wrap=True)
        cells = self.sparks.get(width)
        if cells:
            quiet, bar = self._s("status-bar--label"), self._s("status-bar--spark")
            for run in _runs(cells):
                line.append(run, quiet if run[0] == QUIET_CELL else bar)
            line.append(f" {self.per_minute:,}/min  ", self._s("status-bar--label"))
        return line

    def _join(self, left: Text, right: Text, width: int) -> Text:
        gap = max(2, width - left.cell_len - right.cell_len)
        line = Text.assemble(left, " " * gap, right, no_wrap=True, overflow="ellipsis")
        line.truncate(width, overflow="ellipsis")
        return line

    def _left(self, *, full_public: bool, public_host: bool = False) -> Text:
        """``full_public``: with the public URL and forward target; ``public_host``: the public
        URL without its path (the receiver's own, shown after "listening")."""
        state = self.receiver
        line = Text(no_wrap=True)
        line.append(" walletpass-tui ", self._s("status-bar--title"))
        if state.mode:
            line.append(f" {state.mode} ", self._s("status-bar--mode"))
        line.append(" ")
        if state.gone:
            line.append("○ receiver stopped; showing the history", self._s("status-bar--stopped"))
        elif state.attached:
            line.append("● attached to ", self._s("status-bar--listening"))
            where = state.attached + (f", {state.address}" if state.address else "")
            line.append(one_line(where, 120), self._s("status-bar--value"))
        elif state.address:
            line.append("● listening ", self._s("status-bar--listening"))
            line.append(one_line(state.address), self._s("status-bar--value"))
        else:
            line.append("○ not listening", self._s("status-bar--stopped"))
            if state.problem:
                line.append(f": {one_line(state.problem, 60)}", self._s("status-bar--stopped"))
        if state.history_problem:
            line.append("  ✗ history not saved: ", self._s("status-bar--stopped"))
            line.append(one_line(state.history_problem, 90), self._s("status-bar--stopped"))
        if state.relay:
            style = "status-bar--listening" if state.relay_up else "status-bar--stopped"
            line.append(f"  ⇄ {one_line(state.relay, 60)}", self._s(style))
        if state.tunnel:
            line.append(f"  ⚠ {one_line(state.tunnel, 70)}", self._s("status-bar--stopped"))
        if state.paused:
            line.append("  ")
            line.append(" ⏸ ACKS PAUSED (503) ", self._s("status-bar--paused"))
        if state.pending_forwards:
            line.append("  ")
            line.append(
                f" ⇢ {state.pending_forwards:,} to forward ", self._s("status-bar--pending")
            )
        elif state.forward_targets and full_public:
            more = len(state.forward_targets) - 1
            line.append("  → ", self._s("status-bar--label"))
            line.append(one_line(state.forward_targets[0], 40), self._s("status-bar--value"))
            if more:
                line.append(f" +{more}", self._s("status-bar--label"))
        if state.public_url and full_public:
            public = state.public_url
            if public_host:
                parts = urlsplit(public)
                public = f"{parts.scheme}://{parts.netloc}" if parts.netloc else public
            line.append("  public ", self._s("status-bar--label"))
            line.append(one_line(public, 48), self._s("status-bar--value"))
        return line

    def _counts(self, *, words: bool) -> Text:
        s = self.stats
        line = Text(no_wrap=True)
        if s is None:
            line.append("counting… ", self._s("status-bar--label"))
            return line
        parts = (
            (s.received, "received" if words else "in", "status-bar--value"),
            (s.verified, "✓ verified" if words else "✓", "status-bar--verified"),
            (s.rejected, "✗ rejected" if words else "✗", "status-bar--rejected"),
            (s.redeliveries, "↻ redelivered" if words else "↻", "status-bar--redelivered"),
        )
        for index, (count, label, style) in enumerate(parts):
            if index:
                line.append("  ")
            line.append(f"{count:,} ", self._s("status-bar--value"))
            line.append(label, self._s(style))
        if self.drift:  # the Schema screen (S) lists them
            line.append(f"  Δ {self.drift:,}", self._s("status-bar--drift"))
            line.append(" drift (S)" if words else " (S)", self._s("status-bar--drift"))
        line.append(" ")
        return line


Cell = tuple[str, tuple[Style | str, ...]]  # one cell of the line: its character, its styles


def _cells(line: Text) -> list[Cell] | None:
    """``line`` a cell at a time, each with the styles it is drawn in; None when a character
    takes two cells (then cells and characters do not line up: the line is drawn whole)."""
    plain = line.plain
    if cell_len(plain) != len(plain):
        return None
    styles: list[tuple[Style | str, ...]] = [(line.style,)] * len(plain)
    for span in line.spans:
        for x in range(span.start, min(span.end, len(plain))):
            styles[x] = (*styles[x], span.style)
    return list(zip(plain, styles, strict=True))


def _runs(cells: str) -> list[str]:
    """``cells`` cut where quiet minutes (``·``) start or end, each run styled once."""
    runs: list[str] = []
    for ch in cells:
        if runs and (runs[-1][0] == QUIET_CELL) == (ch == QUIET_CELL):
            runs[-1] += ch
        else:
            runs.append(ch)
    return runs
