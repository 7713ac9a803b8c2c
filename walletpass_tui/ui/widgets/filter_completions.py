"""The filter box's completions: the known paths (or values) for the word being typed, one a
line, the highlighted one inserted by Tab. Paths and values come from bodies: plain ``Text``,
escaped by ``text.visible``, never markup."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from walletpass_tui.text import clip, visible
from walletpass_tui.ui.view.filter_completion import Choice, Completion


class FilterCompletions(Widget):
    """Shows a ``Completion``; ``move`` highlights another choice, ``chosen`` is the one Tab
    inserts."""

    COMPONENT_CLASSES = {
        "filter-completions--label",
        "filter-completions--detail",
        "filter-completions--highlight",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.completion: Completion | None = None
        self.highlight = 0
        self.display = False

    def show(self, completion: Completion | None) -> None:
        same = (
            completion is not None
            and self.completion is not None
            and completion.choices == self.completion.choices
        )
        self.completion = completion
        if not same:
            self.highlight = 0
        self.display = completion is not None
        self.refresh(layout=True)

    @property
    def chosen(self) -> Choice | None:
        if self.completion is None or not self.display:
            return None
        return self.completion.choices[self.highlight]

    def move(self, step: int) -> None:
        if self.completion is not None:
            self.highlight = (self.highlight + step) % len(self.completion.choices)
            self.refresh()

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self.completion.choices) if self.completion is not None else 0

    def render(self) -> Text:
        out = Text(no_wrap=True, overflow="ellipsis")
        if self.completion is None:
            return out
        label_style = self.get_component_rich_style("filter-completions--label")
        detail_style = self.get_component_rich_style("filter-completions--detail")
        high = self.get_component_rich_style("filter-completions--highlight")
        room = max(self.size.width, 20)
        width = max((len(visible(c.label)) for c in self.completion.choices), default=0)
        width = min(width, 48, room)
        for i, choice in enumerate(self.completion.choices):
            if i:
                out.append("\n")
            label = clip(visible(choice.label), width).ljust(width)
            line = Text(no_wrap=True)
            line.append(label, label_style)
            rest = room - width - 2
            if rest > 0:  # one line a choice: the detail cut to what is left of it
                line.append("  ")
                line.append(clip(visible(choice.detail), rest), detail_style)
            if i == self.highlight:
                line.stylize(high)
            out.append_text(line)
        return out
