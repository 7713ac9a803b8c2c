"""The form that records an endpoint created elsewhere (``i``), with its secret, so the receiver can
verify deliveries to it. Nothing is sent to the service."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static, Switch

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.webhooks.endpoint_import import import_endpoint
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry


class ImportEndpointScreen(ModalScreen[str | None]):
    """Dismisses with the imported endpoint's id, or None when cancelled."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="form.cancel"),
        Binding("ctrl+s", "save", "Import", id="form.submit"),
    ]

    def __init__(self, registry: EndpointRegistry) -> None:
        super().__init__(classes="form-screen")
        self.registry = registry

    def compose(self) -> ComposeResult:
        with Vertical(id="import-form", classes="form") as form:
            form.border_title = "Import an endpoint created elsewhere"
            yield Label("Endpoint id", classes="field-label")
            yield Input(placeholder="ep_…", id="import-id")
            yield Label("URL", classes="field-label")
            yield Input(placeholder="https://your-host.example/webhooks", id="import-url")
            yield Label("Signing secret", classes="field-label")
            yield Input(placeholder="whsec_…", password=True, id="import-secret")
            yield Label("Topics", classes="field-label")
            with Horizontal(classes="field-row"):
                for topic in TOPICS:
                    yield Checkbox(topic, value=True, id=f"import-topic-{topic.replace('.', '-')}")
            with Horizontal(classes="field-row"):
                yield Label("Enabled", classes="switch-label")
                yield Switch(value=True, id="import-enabled")
            yield Static(id="import-problem", classes="field-problem")
            with Horizontal(classes="form-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Import", id="import", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#import-id", Input).focus()

    @on(Input.Submitted)
    def _next(self, event: Input.Submitted) -> None:
        if event.input.id == "import-secret":
            self.action_save()
        else:
            self.focus_next()

    @on(Button.Pressed, "#import")
    def _pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        topics = [
            topic
            for topic in TOPICS
            if self.query_one(f"#import-topic-{topic.replace('.', '-')}", Checkbox).value
        ]
        problem = self.query_one("#import-problem", Static)
        try:
            endpoint = import_endpoint(  # refuses an id already known: its secret is kept
                self.registry,
                self.query_one("#import-id", Input).value,
                self.query_one("#import-url", Input).value,
                topics,
                self.query_one("#import-secret", Input).value,
                enabled=self.query_one("#import-enabled", Switch).value,
            )
        except ConfigError as exc:  # shown in the form
            problem.update(Text(f"✗ {exc}"))
            problem.set_class(True, "-invalid")
            return
        self.dismiss(endpoint.id)
