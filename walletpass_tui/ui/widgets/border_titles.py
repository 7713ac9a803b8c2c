"""A pane's border title and subtitle, redrawn alone when they change.

Textual's ``border_title`` setter redraws the whole widget, so the compositor draws every widget
inside it again. The event log's title carries its count, which changes on every frame while
deliveries stream in: ``BorderTitles.show`` sets the title and subtitle and redraws only the
border line whose words changed, and nothing when they read as they do.
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content
from textual.geometry import Region
from textual.widget import Widget

__all__ = ["BorderTitles"]

Titles = tuple[Text | None, Text | None]


class BorderTitles:
    """The title and subtitle ``widget``'s border shows."""

    def __init__(self, widget: Widget) -> None:
        self._widget = widget
        self._shown: Titles | None = None  # None: never set through here

    def show(self, title: Text | None, subtitle: Text | None = None) -> None:
        before, self._shown = self._shown, (title, subtitle)
        if before == self._shown:
            return
        widget = self._widget
        outer = widget.outer_size
        # The border lines alone need a widget on screen with a border to redraw, and Textual's
        # own attributes (else its setters, which redraw the whole widget).
        alone = (
            before is not None
            and widget.is_mounted
            and outer.height > 2
            and widget.styles.border_top[0] not in ("", "none", "hidden")
            and widget.styles.border_bottom[0] not in ("", "none", "hidden")
            and hasattr(widget, "_border_title")
            and hasattr(widget, "_border_subtitle")
        )
        if not alone:
            widget.border_title = title
            widget.border_subtitle = subtitle
            return
        assert before is not None
        left, top = widget.content_offset
        if title != before[0]:
            widget._border_title = _line(widget, title)
            widget.refresh(Region(-left, -top, outer.width, 1))
        if subtitle != before[1]:
            widget._border_subtitle = _line(widget, subtitle)
            widget.refresh(Region(-left, outer.height - 1 - top, outer.width, 1))


def _line(widget: Widget, text: Text | None) -> Content | None:
    """``text`` as Textual's setter keeps it: its first line, tabs expanded."""
    if text is None:
        return None
    return widget.render_str(Content.from_rich_text(text)).expand_tabs(4).split()[0]
