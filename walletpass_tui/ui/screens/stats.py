"""The Stats screen (``s``): the last hour, minute by minute, as charts that answer a question at a
glance (is traffic arriving? did rejections spike? did my app slow down?), the numbers one key
away (``n``).

It reads the app's ``Traffic`` (counted from the history once, then from what arrives) and draws
again at most once a second, only when something changed or a minute went by. Loaded when first
opened: the dashboard's first frame does not import it.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Static

from walletpass_tui.api.topics import TOPICS, short_topic
from walletpass_tui.text import format_ms, one_line
from walletpass_tui.ui.view.charts import bars, nice_top, scale_label, spark, time_axis
from walletpass_tui.ui.view.traffic import Minute, Traffic
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.webhooks.store.activity import MINUTE_MS

REDRAW_S = 1.0
GUTTER = 7  # the scale's labels, left of a chart
TOPIC_ROWS = 4  # topics charted (the busiest); the numbers list more
NUMBER_TOPICS = 12  # topics with a column of their own in the numbers; the rest summed

Value = Callable[[Minute], float | None]


def _ms(value: float) -> str:
    """An answer time: ``14 ms``, ``1.2 s``."""
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.1f} s"


def _ms_scale(value: float) -> str:
    """The top of an answer-time scale: ``200ms``, ``5s``."""
    return f"{scale_label(value)}ms" if value < 1000 else f"{scale_label(value / 1000)}s"


def _topic_count(topic: str) -> Value:
    """One topic's deliveries in a minute."""
    return lambda minute: minute.topics.get(topic, 0)


def _clock(minute: int) -> str:
    return format_ms(minute * MINUTE_MS, time_only=True)[:5]


def _peak(traffic: Traffic, value: Value) -> tuple[float, int] | None:
    """The largest value of the window and its minute (None: nothing)."""
    found = [(v, m) for m, minute in traffic.window() if (v := value(minute))]
    return max(found) if found else None


class MinuteChart(Widget):
    """A bar chart of one value per minute over the last hour, with its scale and time axis."""

    COMPONENT_CLASSES = {"minute-chart--bar", "minute-chart--axis"}
    DEFAULT_CSS = """
    MinuteChart {
        height: auto;
    }
    """

    def __init__(
        self,
        value: Value,
        *,
        rows: int = 3,
        scale: Callable[[float], str] = scale_label,
        empty: str = "nothing in the last hour",
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.value = value
        self.rows = rows
        self.scale = scale  # the scale's top, as text
        self.empty = empty  # said in the chart when it has nothing to draw
        self.series: list[float | None] = []

    def show(self, series: list[float | None]) -> None:
        if series != self.series:
            self.series = series
            self.refresh()

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return self.rows + 2

    def render(self) -> Text:
        bar = self.get_component_rich_style("minute-chart--bar", partial=True)
        axis = self.get_component_rich_style("minute-chart--axis", partial=True)
        width = max(10, self.size.width - GUTTER)
        top = nice_top(max((v for v in self.series if v is not None), default=0.0))
        text = Text(no_wrap=True, overflow="crop")
        lines = bars(self.series, width, self.rows, top)
        if not any(v for v in self.series):
            middle = (self.rows - 1) // 2
            lines[middle] = f"  {self.empty}".ljust(width)[:width]
        for index, line in enumerate(lines):
            label = self.scale(top) if index == 0 else ""
            text.append(f"{label:>{GUTTER - 2}} ", axis)
            text.append("┤" if index == 0 else "│", axis)
            text.append(line, bar)
            text.append("\n")
        text.append(f"{'0':>{GUTTER - 2}} └" + "─" * width + "\n", axis)
        text.append(" " * GUTTER + time_axis(width), axis)
        return text


class TopicSparks(Widget):
    """One sparkline per topic, the busiest first, with its deliveries in the hour."""

    COMPONENT_CLASSES = {"topic-sparks--name", "topic-sparks--count", "topic-sparks--bar"}
    DEFAULT_CSS = """
    TopicSparks {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[tuple[str, int, list[float | None]]] = []

    def show(self, rows: list[tuple[str, int, list[float | None]]]) -> None:
        if rows != self.rows:
            self.rows = rows
            self.refresh(layout=True)

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return max(1, len(self.rows))

    def render(self) -> Text:
        name = self.get_component_rich_style("topic-sparks--name", partial=True)
        count_style = self.get_component_rich_style("topic-sparks--count", partial=True)
        bar = self.get_component_rich_style("topic-sparks--bar", partial=True)
        width = max(10, self.size.width - 32)
        text = Text(no_wrap=True, overflow="ellipsis")
        if not self.rows:
            text.append("No deliveries in the last hour.", name)
        for index, (topic, count, series) in enumerate(self.rows):
            if index:
                text.append("\n")
            text.append(f"{one_line(topic, 20):<20} ", name)
            text.append(spark(series, width), bar)
            text.append(f" {count:>8,}", count_style)
        return text


class StatsScreen(Screen[None]):
    CSS_PATH = "stats.tcss"
    BINDINGS = [
        Binding("escape,s,q", "close", "Back", id="stats.close"),
        Binding(
            "n",
            "numbers",
            "Numbers",
            id="stats.numbers",
            tooltip="The numbers minute by minute, or the charts again",
        ),
    ]
    COMPONENT_CLASSES = {"stats--label"}

    def __init__(self, traffic: Traffic) -> None:
        super().__init__(classes="stats-screen")
        self.traffic = traffic
        self._drawn: tuple[int, int] | None = None  # (traffic version, minute) on screen

    def compose(self) -> ComposeResult:
        yield Static(id="stats-title")
        with VerticalScroll(id="stats-charts"):
            with Vertical(id="stats-deliveries", classes="stats-box"):
                yield MinuteChart(
                    lambda m: m.deliveries,
                    rows=5,
                    empty="no deliveries in the last hour",
                    id="chart-deliveries",
                )
            with Vertical(id="stats-topics", classes="stats-box"):
                yield TopicSparks(id="topic-sparks")
            with Horizontal(id="stats-pair"):
                with Vertical(id="stats-rejected", classes="stats-box"):
                    yield MinuteChart(
                        lambda m: m.rejected, rows=4, empty="none rejected", id="chart-rejected"
                    )
                with Vertical(id="stats-redelivered", classes="stats-box"):
                    yield MinuteChart(
                        lambda m: m.redelivered,
                        rows=4,
                        empty="no redeliveries",
                        id="chart-redelivered",
                    )
            with Vertical(id="stats-forwards", classes="stats-box"):
                yield MinuteChart(
                    lambda m: m.forward_mean_ms,
                    rows=4,
                    scale=_ms_scale,
                    empty="no answers from your app to time",
                    id="chart-forwards",
                )
        table: DataTable[Text | str] = DataTable(id="stats-numbers", zebra_stripes=True)
        table.display = False
        yield table
        yield KeyLine(id="stats-keys")

    def on_mount(self) -> None:
        self.draw()
        self.set_interval(REDRAW_S, self.draw)

    @property
    def numbers(self) -> DataTable[Text | str]:
        return self.query_one("#stats-numbers", DataTable)

    def draw(self) -> None:
        """Everything again, if anything changed since it was drawn (or a minute went by)."""
        traffic = self.traffic
        now = traffic.minute()
        state = (traffic.version, now)
        if state == self._drawn:
            return
        self._drawn = state
        self._title(now)
        for chart_id, box_id, title in (
            ("chart-deliveries", "stats-deliveries", "Deliveries per minute"),
            ("chart-rejected", "stats-rejected", "Rejected per minute"),
            ("chart-redelivered", "stats-redelivered", "Redeliveries per minute"),
            ("chart-forwards", "stats-forwards", "Your app's answer time (forwards, mean)"),
        ):
            chart = self.query_one(f"#{chart_id}", MinuteChart)
            chart.show(traffic.series(chart.value))
            box = self.query_one(f"#{box_id}")
            box.border_title = title
            box.border_subtitle = self._summary(chart_id, chart.value)
        self._topics()
        if self.numbers.display:
            self._fill_numbers()

    def _title(self, now: int) -> None:
        label = self.get_component_rich_style("stats--label", partial=True)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("Traffic ", Style(bold=True))
        text.append(f"the last hour, per minute, to {_clock(now)} UTC", label)
        if not self.traffic.loaded:
            text.append("  · reading the history…", label)
        self.query_one("#stats-title", Static).update(text)

    def _summary(self, chart_id: str, value: Value) -> str:
        """The numbers a chart stands for, in its border: now, the hour, the peak."""
        traffic = self.traffic
        window = traffic.window()
        if chart_id == "chart-forwards":
            forwards = sum(m.forwards for _m, m in window)
            if not forwards:
                return "no forwards in the hour (--forward-to sends deliveries to your app)"
            answered = sum(m.answered for _m, m in window)
            failed = sum(m.forward_failed for _m, m in window)
            worst = max(window, key=lambda item: item[1].forward_max_ms)
            latest = next((m.forward_mean_ms for _m, m in reversed(window) if m.answered), None)
            parts = [
                f"{_ms(latest)} latest" if latest is not None else "",
                f"slowest {_ms(worst[1].forward_max_ms)} at {_clock(worst[0])}" if answered else "",
                f"{forwards:,} forwards",
                f"{failed:,} failed" if failed else "",
            ]
            return " · ".join(p for p in parts if p)
        total = sum(int(value(m) or 0) for _m, m in window)
        current = int(value(window[-1][1]) or 0)
        peak = _peak(traffic, value)
        parts = [f"{current:,} this minute", f"{total:,} in the hour"]
        if peak is not None:
            parts.append(f"peak {peak[0]:,.0f} at {_clock(peak[1])}")
        return " · ".join(parts)

    def _topics(self) -> None:
        """One sparkline per topic (the busiest ``TOPIC_ROWS``), the rest in the numbers."""
        box = self.query_one("#stats-topics")
        topics = self.traffic.topics()
        box.border_title = "By topic"
        rows = [
            (topic, count, self.traffic.series(_topic_count(topic)))
            for topic, count in topics[:TOPIC_ROWS]
        ]
        self.query_one("#topic-sparks", TopicSparks).show(rows)
        more = len(topics) - TOPIC_ROWS
        box.border_subtitle = f"{more} more in the numbers (n)" if more > 0 else None

    # -- the numbers ---------------------------------------------------------------------------

    def action_numbers(self) -> None:
        table = self.numbers
        showing = not table.display
        table.display = showing
        self.query_one("#stats-charts").display = not showing
        if showing:
            self._fill_numbers()
            table.focus()

    def _fill_numbers(self) -> None:
        """Every minute of the hour, the newest first, with every count the charts draw."""
        table = self.numbers
        seen = [topic for topic, _count in self.traffic.topics()]
        # Topics come from the wire, rejected posts included: a column each for the busiest, the
        # rest summed in one, and every name a Text (a str label would be read as markup).
        topics, others = seen[:NUMBER_TOPICS], set(seen[NUMBER_TOPICS:])
        table.clear(columns=True)
        table.add_column("minute (UTC)", key="minute")
        table.add_column("deliveries", key="deliveries")
        for topic in topics:
            name = short_topic(topic) if topic in TOPICS else one_line(topic, 20)
            table.add_column(Text(name), key=f"topic:{topic}")
        if others:
            table.add_column(f"{len(others):,} other topics", key="topics:others")
        for key, title in (
            ("rejected", "rejected"),
            ("redelivered", "redelivered"),
            ("forwards", "forwards"),
            ("mean", "mean ms"),
            ("max", "max ms"),
            ("failed", "failed"),
        ):
            table.add_column(title, key=key)
        for minute, counts in reversed(self.traffic.window()):
            mean = counts.forward_mean_ms
            cells = [
                _clock(minute),
                f"{counts.deliveries:,}",
                *(f"{counts.topics.get(t, 0):,}" for t in topics),
                *(
                    [f"{sum(n for t, n in counts.topics.items() if t in others):,}"]
                    if others
                    else []
                ),
                f"{counts.rejected:,}",
                f"{counts.redelivered:,}",
                f"{counts.forwards:,}",
                f"{mean:.0f}" if mean is not None else "-",
                f"{counts.forward_max_ms:.0f}" if counts.answered else "-",
                f"{counts.forward_failed:,}",
            ]
            table.add_row(*(Text(c, justify="right") for c in cells), key=str(minute))

    def action_close(self) -> None:
        self.dismiss(None)
