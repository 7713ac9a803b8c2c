"""A page of a delivery's body on screen: wrapped once per width, and only the lines in view drawn.

A 16 KiB page of a body is a couple of hundred lines at the detail pane's width; a ``Static``
renders every one of them (and wraps the text twice, once to find its height) each time a new
delivery is shown, while the screen shows a score of them. ``BodyText`` wraps the page once per
width, says its height from that, and renders a line only when the compositor asks for it (the
lines scrolled to are drawn then). While a person selects text with the mouse it draws like a
``Static``, so the selection is highlighted where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.geometry import Size
from textual.strip import Strip
from textual.visual import Visual, VisualType
from textual.widgets import Static

__all__ = ["BodyText", "Wrapped", "wrap_lines"]


@dataclass(frozen=True)
class Wrapped:
    """``content`` wrapped at ``width`` (done in a worker thread, handed to ``BodyText.seed``)."""

    content: Content
    width: int
    lines: list[Content]


def wrap_lines(content: Content, width: int) -> Wrapped | None:
    """``content``'s lines at ``width``, as ``BodyText`` wraps them (pure: safe in a thread)."""
    if width <= 0:
        return None
    return Wrapped(content, width, content.wrap(width, overflow="fold"))


class BodyText(Static):
    """A ``Static`` for long text: its lines are wrapped once per width and rendered on demand."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, markup=False)
        self._wrapped_visual: Visual | None = None
        self._wrapped: dict[int, list[Content]] = {}  # by width (a scroll bar takes a cell)
        self.wraps = 0  # how many times a text was wrapped (a test counts them)
        self.rows_drawn: set[int] = set()  # rows rendered since the last update (tests count)

    def lines_at(self, width: int) -> list[Content] | None:
        """The text's lines at ``width`` (None when it is not ``Content``: drawn as a Static)."""
        visual = self.visual
        if not isinstance(visual, Content) or width <= 0:
            return None
        if self._wrapped_visual is not visual:
            self._wrapped_visual = visual
            self._wrapped = {}
        lines = self._wrapped.get(width)
        if lines is None:
            overflow = self.styles.get_rule("text_overflow", "fold")
            # get_rule() is typed object; text_overflow holds an overflow method's name.
            lines = visual.wrap(width, overflow=overflow)  # type: ignore[arg-type]
            if len(self._wrapped) >= 4:
                self._wrapped.clear()
            self._wrapped[width] = lines
            self.wraps += 1
        return lines

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        self.rows_drawn = set()
        super().update(content, layout=layout)

    def seed(self, wrapped: Wrapped) -> None:
        """Take lines wrapped elsewhere (a worker thread) for the text on screen, so neither the
        layout nor drawing wraps it on the event loop."""
        overflow = self.styles.get_rule("text_overflow", "fold")
        if self.visual is wrapped.content and overflow == "fold" and self._plain_style():
            if self._wrapped_visual is not wrapped.content:
                self._wrapped_visual = wrapped.content
                self._wrapped = {}
            self._wrapped[wrapped.width] = wrapped.lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        lines = self.lines_at(width) if self._plain_style() else None
        if lines is None:
            return super().get_content_height(container, viewport, width)
        return len(lines)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self.lines_at(width) if self._plain_style() else None
        if lines is None or self.text_selection is not None:
            return super().render_line(y)
        style = self.visual_style
        if y >= len(lines):
            return Strip.blank(width, style.rich_style)
        self.rows_drawn.add(y)
        strips = Visual.to_strips(self, lines[y], width, 1, style, apply_selection=False)
        return strips[0] if strips else Strip.blank(width, style.rich_style)

    def _plain_style(self) -> bool:
        """Wrapping here matches Textual's own for left-aligned, wrapped text with no line pad
        (the detail's); anything else is left to ``Static``."""
        rules = self.styles
        return (
            rules.get_rule("text_wrap", "wrap") != "nowrap"
            and rules.get_rule("text_align", "left") in ("left", "start")
            and not rules.get_rule("line_pad", 0)
        )
