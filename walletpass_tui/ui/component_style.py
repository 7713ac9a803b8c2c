"""Rich styles from a widget's component classes (``Widget > .name`` rules in the .tcss files).

Textual's ``partial=True`` styles leave colours with transparency (``$foreground 60%``) and ``auto``
colours (``$text-muted``) unresolved, which draws muted text white on a light theme. The full
style resolves them against the widget's background; the background itself is then dropped unless
asked for, so a component colours text without painting a box behind it.
"""

from __future__ import annotations

from rich.style import Style
from textual.widget import Widget


def component_style(widget: Widget, name: str, *, background: bool = False) -> Style:
    style = widget.get_component_rich_style(name)
    if background:
        return style
    return Style(
        color=style.color,
        bold=style.bold,
        dim=style.dim,
        italic=style.italic,
        underline=style.underline,
        reverse=style.reverse,
        strike=style.strike,
    )
