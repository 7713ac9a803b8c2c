"""The help screen (``?``): every key of the dashboard, by where it works, as remapped in the
config file's ``[keys]``, with each binding's id (what ``[keys]`` names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KeyGroup = tuple[str, Sequence[BindingType]]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help.close")]
    COMPONENT_CLASSES = {"help--group", "help--key", "help--id"}

    def __init__(self, groups: Sequence[KeyGroup]) -> None:
        super().__init__(classes="help-screen")
        self.groups = groups

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog") as dialog:
            dialog.border_title = "Keys"
            dialog.border_subtitle = Text(  # Text: "[keys]" is not markup
                "ctrl+p finds every action by name · [keys] in the config file remaps an id · "
                "esc close"
            )
            with VerticalScroll(id="help-scroll"):
                yield Static(id="help-table")

    def on_mount(self) -> None:
        self.query_one("#help-table", Static).update(self._table())

    def key_rows(self, bindings: Sequence[BindingType]) -> list[tuple[str, str, str]]:
        """(keys, description, binding id) per action, the keys of one action joined
        (``j / ↓``), as the config file's ``[keys]`` remapped them."""
        keymap: Mapping[str, str] = self.app._keymap
        merged: dict[tuple[str, str], tuple[list[str], str]] = {}
        for binding in Binding.make_bindings(bindings):
            if not binding.description:
                continue
            described = binding.tooltip or binding.description
            keys, _ = merged.setdefault((binding.action, described), ([], binding.id or ""))
            remapped = keymap.get(binding.id or "")
            pressed = remapped.split(",") if remapped else [binding.key]
            for key in pressed:
                shown = self.app.get_key_display(binding.with_key(key.strip(), key_display=None))
                if shown not in keys:
                    keys.append(shown)
        return [
            (" / ".join(keys), description, binding_id)
            for (_a, description), (keys, binding_id) in merged.items()
        ]

    def _table(self) -> Table:
        group_style = self.get_component_rich_style("help--group", partial=True)
        key_style = self.get_component_rich_style("help--key", partial=True)
        id_style = self.get_component_rich_style("help--id", partial=True)
        table = Table.grid(padding=(0, 2))
        table.add_column(justify="right", no_wrap=True)
        table.add_column()
        table.add_column(no_wrap=True)
        for index, (title, bindings) in enumerate(self.groups):
            if index:
                table.add_row("", "", "")
            table.add_row("", Text(title, style=group_style), "")
            for keys, description, binding_id in self.key_rows(bindings):
                table.add_row(
                    Text(keys, style=key_style), Text(description), Text(binding_id, id_style)
                )
        return table

    def action_close(self) -> None:
        self.dismiss(None)
