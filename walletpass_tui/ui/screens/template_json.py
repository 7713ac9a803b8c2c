"""One pass template, or the service's whole answer listing them, as highlighted JSON (Enter, or
``a``, in the Templates pane)."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.highlight import highlight
from textual.screen import ModalScreen
from textual.widgets import Static

from walletpass_tui.api.models import template_title
from walletpass_tui.text import one_line, pretty_json


class TemplateScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Close", id="json.close"),
        Binding("c", "copy", "Copy JSON", id="json.copy"),
    ]

    def __init__(self, template: Any, *, title: str | None = None) -> None:
        """``template``: one template (its id and name are the title), or any JSON document
        with its ``title``."""
        super().__init__(classes="json-screen")
        self.template = template
        self.title_text = title

    def compose(self) -> ComposeResult:
        if self.title_text is not None:
            name = self.title_text
        else:
            title = template_title(self.template)
            ident = self.template.get("id")
            name = " · ".join(one_line(str(v), 50) for v in (ident, title) if v)
        pretty, _cut = pretty_json(self.template)
        with Vertical(id="template-dialog") as dialog:
            dialog.border_title = Text(name or "Pass template")
            dialog.border_subtitle = "c copy · esc close"
            with VerticalScroll(id="template-scroll"):
                yield Static(highlight(pretty, language="json"), id="template-json")

    def action_close(self) -> None:
        self.dismiss(None)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(json.dumps(self.template, indent=2, ensure_ascii=False))
        self.notify("Template JSON copied to the clipboard.", markup=False)
