"""The key hints at the bottom of a screen: the bindings active for the focused widget, as text.

Textual's ``Footer`` rebuilds a widget per key whenever focus moves or a screen opens, which costs
tens of milliseconds on every Enter and every jump between panes; this line only redraws its text.
A click on a key presses it.
"""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget


class KeyLine(Widget):
    COMPONENT_CLASSES = {"key-line--key", "key-line--description"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._spans: list[tuple[int, int, str]] = []  # (start, end, key) of each hint drawn

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        self.refresh()

    def _hints(self) -> list[tuple[str, str, str]]:
        """(key to press, keys shown, description) per action, in the order Textual gives."""
        by_action: defaultdict[str, list[Binding]] = defaultdict(list)
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if binding.show and enabled and binding.description:
                by_action[binding.action].append(binding)
        palette = self.app.COMMAND_PALETTE_BINDING
        if self.app.ENABLE_COMMAND_PALETTE and palette in self.screen.active_bindings:
            by_action.setdefault(
                "command_palette", [Binding(palette, "command_palette", "Commands")]
            )
        hints = []
        for bindings in by_action.values():
            shown: list[str] = []
            for binding in bindings:
                display = self.app.get_key_display(binding)
                if display not in shown:
                    shown.append(display)
            hints.append((bindings[0].key, "/".join(shown), bindings[0].description))
        return hints

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-line--key", partial=True)
        description_style = self.get_component_rich_style("key-line--description", partial=True)
        width = self.size.width
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        self._spans = []
        for key, shown, description in self._hints():
            piece = len(shown) + len(description) + 3
            if line.cell_len + piece > width:
                break
            start = line.cell_len
            line.append(f" {shown} ", key_style)
            line.append(f"{description} ", description_style)
            self._spans.append((start, line.cell_len, key))
        return line

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
