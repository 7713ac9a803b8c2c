"""The header line: where the receiver listens, the public URL, live counts, paused acks.

It follows the app's ``LiveSignals`` by itself; ``ReceiverState`` is re-exported from here.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from walletpass_tui.text import one_line
from walletpass_tui.ui.messages import ReceiverState, live_signals
from walletpass_tui.webhooks.models import Stats

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
    }

    stats: reactive[Stats | None] = reactive(None, layout=False)  # None: still counting
    receiver: reactive[ReceiverState] = reactive(ReceiverState, layout=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._styles: dict[str, Style] = {}

    def on_mount(self) -> None:
        signals = live_signals(self)
        self.stats = signals.last_stats
        self.receiver = signals.last_receiver
        signals.stats.subscribe(self, self._set_stats, immediate=True)
        signals.receiver.subscribe(self, self._set_receiver, immediate=True)

    def _set_stats(self, stats: Stats | None) -> None:
        self.stats = stats

    def _set_receiver(self, state: ReceiverState) -> None:
        self.receiver = state

    def _s(self, name: str) -> Style:
        """A component's style, looked up once per theme (the line is drawn on every count)."""
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(name, partial=True)
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def render(self) -> Text:
        width = self.size.width
        left = self._left(full_public=True)
        for right in (self._counts(words=True), self._counts(words=False)):
            if left.cell_len + right.cell_len + 2 <= width:
                return self._join(left, right, width)
        left = self._left(full_public=False)
        return self._join(left, self._counts(words=False), width)

    def _join(self, left: Text, right: Text, width: int) -> Text:
        gap = max(2, width - left.cell_len - right.cell_len)
        line = Text.assemble(left, " " * gap, right, no_wrap=True, overflow="ellipsis")
        line.truncate(width, overflow="ellipsis")
        return line

    def _left(self, *, full_public: bool) -> Text:
        state = self.receiver
        line = Text(no_wrap=True)
        line.append(" walletpass-tui ", self._s("status-bar--title"))
        if state.mode:
            line.append(f" {state.mode} ", self._s("status-bar--mode"))
        line.append(" ")
        if state.address:
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
            line.append("  public ", self._s("status-bar--label"))
            line.append(one_line(state.public_url, 48), self._s("status-bar--value"))
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
        line.append(" ")
        return line
