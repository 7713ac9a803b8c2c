"""``FilterInput``: the event log's filter box, with the completions shown under it
(``filter_completions.py``): Tab puts the highlighted one in place of the word at the cursor, Up
and Down highlight another; every other key is the ``Input``'s own.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from walletpass_tui.ui.widgets.filter_completions import FilterCompletions


class FilterInput(Input):
    """The filter box: Tab inserts the highlighted completion, Up and Down choose another."""

    def __init__(self, completions: FilterCompletions, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # Input's own keywords
        self.completions = completions

    async def _on_key(self, event: events.Key) -> None:
        choice = self.completions.chosen
        if choice is not None and event.key in ("tab", "down", "up"):
            event.stop()
            event.prevent_default()
            if event.key == "tab":
                self._take_completion()
            else:
                self.completions.move(1 if event.key == "down" else -1)
            return
        await super()._on_key(event)

    def _take_completion(self) -> None:
        """The highlighted completion in place of the word it completes, the cursor after it."""
        found, choice = self.completions.completion, self.completions.chosen
        if found is None or choice is None:
            return
        text = self.value
        self.value = text[: found.start] + choice.label + text[found.end :]
        self.cursor_position = found.start + len(choice.label)
