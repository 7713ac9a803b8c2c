"""The form that registers a webhook endpoint at the service (``n``).

The URL is checked as it is typed; the call runs in a worker; an error keeps the form open with the
service's answer. On success the endpoint, with the secret the service returns only once, is in the
local registry before the form closes (the client's ``on_endpoint_created`` hook normally stored it
already; if not, it is stored here).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.validation import ValidationResult, Validator
from textual.widgets import Button, Checkbox, Input, Label, Static, Switch

from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.models import WebhookEndpoint
from walletpass_tui.api.topics import TOPICS
from walletpass_tui.api.urls import url_problem
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.ui.screens.worker_form import WorkerForm
from walletpass_tui.ui.view.context import DashboardContext
from walletpass_tui.ui.widgets.notice import Notice, NoticeText, notice_for_error


@dataclass(frozen=True)
class Created:
    endpoint: WebhookEndpoint
    saved_error: str | None = None  # why the secret could not be stored locally, if it could not


class EndpointUrl(Validator):
    """The service's rule: a public https URL with a host (http only when allowed)."""

    def __init__(self, allow_http: bool) -> None:
        super().__init__()
        self.allow_http = allow_http

    def validate(self, value: str) -> ValidationResult:
        if not value.strip():
            return self.failure("Give the URL the service should POST webhooks to.")
        problem = url_problem(value, allow_http=self.allow_http)
        return self.failure(problem) if problem else self.success()


class CreateEndpointScreen(WorkerForm[Created | None]):
    SUBMIT_ID = "create"
    SUBMIT_LABEL = "Create"
    BUSY_LABEL = "Creating…"
    NOTICE_ID = "create-notice"
    WORKER_GROUP = "create-endpoint"
    FAILURE = "Creating the endpoint failed"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="form.cancel"),
        Binding("ctrl+s", "create", "Create", id="form.submit"),
    ]

    def __init__(self, context: DashboardContext) -> None:
        super().__init__(classes="form-screen")
        self.context = context

    def compose(self) -> ComposeResult:
        with Vertical(id="create-form", classes="form") as form:
            form.border_title = "New webhook endpoint"
            yield Label("URL the service delivers to", classes="field-label")
            yield Input(
                self.context.public_url or "",
                placeholder="https://your-host.example/webhooks",
                validators=[EndpointUrl(self.context.settings.allow_http)],
                validate_on=["changed", "submitted"],
                id="endpoint-url",
            )
            yield Static(id="url-problem", classes="field-problem")
            yield Label("Topics", classes="field-label")
            with Horizontal(classes="field-row"):
                for topic in TOPICS:
                    yield Checkbox(topic, value=True, id=f"topic-{topic.replace('.', '-')}")
            with Horizontal(classes="field-row"):
                yield Label("Enabled", classes="switch-label")
                yield Switch(value=True, id="endpoint-enabled")
            yield Static(id="topics-problem", classes="field-problem")
            yield Notice(id="create-notice")
            with Horizontal(classes="form-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Create", id="create", variant="primary")

    def on_mount(self) -> None:
        self._notice(None)
        how_to = self.context.missing_service_setup("registration_url")
        if how_to is not None:
            self._notice(NoticeText("Endpoints cannot be created yet.", hint=how_to, error=True))
        self.query_one("#endpoint-url", Input).focus()

    # -- checking ------------------------------------------------------------------------------

    @on(Input.Changed, "#endpoint-url")
    def _url_changed(self, event: Input.Changed) -> None:
        result = event.validation_result
        problem = self.query_one("#url-problem", Static)
        if result is None or result.is_valid:
            problem.update(Text("✓ looks right" if event.value.strip() else ""))
            problem.set_class(False, "-invalid")
        else:
            problem.update(Text("✗ " + " ".join(result.failure_descriptions)))
            problem.set_class(True, "-invalid")

    @on(Checkbox.Changed)
    def _topics_changed(self) -> None:
        self._check_topics()

    def _topics(self) -> list[str]:
        return [
            topic
            for topic in TOPICS
            if self.query_one(f"#topic-{topic.replace('.', '-')}", Checkbox).value
        ]

    def _check_topics(self) -> bool:
        ok = bool(self._topics())
        problem = self.query_one("#topics-problem", Static)
        problem.update(Text("" if ok else "✗ Choose at least one topic."))
        problem.set_class(not ok, "-invalid")
        return ok

    # -- creating --------------------------------------------------------------------------------

    @on(Input.Submitted, "#endpoint-url")
    def _submitted(self) -> None:
        self.action_create()

    @on(Button.Pressed, "#create")
    def _create_pressed(self) -> None:
        self.action_create()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)

    def action_create(self) -> None:
        if self.busy:
            return
        url_input = self.query_one("#endpoint-url", Input)
        validation = url_input.validate(url_input.value)
        topics_ok = self._check_topics()
        if validation is not None and not validation.is_valid:
            self._url_changed(Input.Changed(url_input, url_input.value, validation))
            url_input.focus()
            return
        if not topics_ok:
            return
        how_to = self.context.missing_service_setup("registration_url")
        if how_to is not None or self.context.client is None:
            self._notice(NoticeText("Endpoints cannot be created yet.", hint=how_to, error=True))
            return
        self._set_busy(True)
        self._create(
            url_input.value.strip(),
            self._topics(),
            self.query_one("#endpoint-enabled", Switch).value,
        )

    @work(exclusive=True, group="create-endpoint", exit_on_error=False)
    async def _create(self, url: str, topics: list[str], enabled: bool) -> None:
        client = self.context.client
        assert client is not None
        try:
            endpoint = await client.create_webhook_endpoint(url, topics, enabled)
        except ApiError as exc:  # shown in the form
            self._set_busy(False)
            self._notice(notice_for_error(exc, retry_key="ctrl+s"))
            return
        self.dismiss(Created(endpoint, self._ensure_saved(endpoint)))

    def _ensure_saved(self, endpoint: WebhookEndpoint) -> str | None:
        """Store the endpoint and its secret unless the client's hook already did."""
        registry = self.context.registry
        try:
            if registry.get(endpoint.id) is None:
                registry.record_created(endpoint)
        except ConfigError as exc:  # the reason is shown by the caller
            return str(exc)
        return None
