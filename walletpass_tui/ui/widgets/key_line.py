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
    COMPONENT_CLASSES = {"key-line--key", "key-line--description", "key-line--unavailable"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._spans: list[tuple[int, int, str]] = []  # (start, end, key) of each hint drawn

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        self.refresh()

    def _hints(self) -> list[tuple[str, str, str, bool]]:
        """(key to press, keys shown, description, unavailable) per action, in the order Textual
        gives. Unavailable: the app says it cannot be done now (``unavailable_actions``, e.g.
        pausing a receiver that stopped): shown greyed, and pressing it says why."""
        by_action: defaultdict[str, list[Binding]] = defaultdict(list)
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if binding.show and enabled and binding.description:
                by_action[binding.action].append(binding)
        palette = self.app.COMMAND_PALETTE_BINDING
        if self.app.ENABLE_COMMAND_PALETTE and palette in self.screen.active_bindings:
            by_action.setdefault(
                "command_palette", [Binding(palette, "command_palette", "Commands")]
            )
        unavailable: frozenset[str] = getattr(self.app, "unavailable_actions", frozenset())
        hints = []
        for action, bindings in by_action.items():
            shown: list[str] = []
            for binding in bindings:
                display = self.app.get_key_display(binding)
                if display not in shown:
                    shown.append(display)
            greyed = action.rpartition(".")[2] in unavailable
            hints.append((bindings[0].key, "/".join(shown), bindings[0].description, greyed))
        return hints

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-line--key", partial=True)
        description_style = self.get_component_rich_style("key-line--description", partial=True)
        greyed_style = self.get_component_rich_style("key-line--unavailable", partial=True)
        width = self.size.width
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        self._spans = []
        for key, shown, description, greyed in self._hints():
            piece = len(shown) + len(description) + 3
            if line.cell_len + piece > width:
                break
            start = line.cell_len
            line.append(f" {shown} ", greyed_style if greyed else key_style)
            line.append(f"{description} ", greyed_style if greyed else description_style)
            self._spans.append((start, line.cell_len, key))
        return line

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
