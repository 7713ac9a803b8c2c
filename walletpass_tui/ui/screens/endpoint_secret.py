"""Shown once, right after an endpoint is created: its signing secret, and a plain warning."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from walletpass_tui.api.models import WebhookEndpoint
from walletpass_tui.text import one_line, visible
from walletpass_tui.ui.view.endpoints_text import topics_text


class EndpointSecretScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("c", "copy", "Copy secret", id="secret.copy"),
        Binding("escape", "close", "Done", id="secret.close"),
    ]

    def __init__(
        self, endpoint: WebhookEndpoint, registry_path: Path, *, saved_error: str | None = None
    ) -> None:
        super().__init__(classes="form-screen")
        self.endpoint = endpoint
        self.registry_path = registry_path
        self.saved_error = saved_error

    def compose(self) -> ComposeResult:
        ep = self.endpoint
        with Vertical(id="secret-dialog", classes="form") as dialog:
            dialog.border_title = "Endpoint created"
            summary = Text()
            summary.append(one_line(ep.id))
            summary.append(f"  {one_line(ep.url, 60)}\n")
            summary.append(
                f"topics {visible(topics_text(ep.enabled_topics))} · "
                f"{'enabled' if ep.enabled else 'disabled'}"
            )
            yield Static(summary, id="secret-summary")
            yield Static(Text("Signing secret"), classes="field-label")
            # Escaped like anything the service sends; the copy below is the secret as sent.
            yield Static(Text(visible(ep.secret.reveal())), id="secret-value")
            if self.saved_error:
                warning = (
                    "This secret is shown only now: the service will not show it again. It could "
                    f"NOT be saved locally ({self.saved_error}). Copy it now and keep it safe."
                )
            else:
                warning = (
                    "This secret is shown only now: the service will not show it again, and this "
                    "screen will not either. It is saved (readable only by you) in "
                    f"{self.registry_path}, and the receiver verifies deliveries with it."
                )
            yield Static(Text(warning), id="secret-warning")
            with Horizontal(classes="form-buttons"):
                yield Button("Copy to clipboard (c)", id="copy", variant="primary")
                yield Button("Done", id="done")

    def on_mount(self) -> None:
        self.query_one("#copy", Button).focus()

    @on(Button.Pressed, "#copy")
    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.endpoint.secret.reveal())
        self.notify("Secret copied to the clipboard.", markup=False)

    @on(Button.Pressed, "#done")
    def action_close(self) -> None:
        self.dismiss(None)
