"""Replay a stored delivery to your app (``R`` on a delivery), with the body open for editing.

``resign`` (the default when a secret is known): the same webhook-id, a fresh timestamp, signed with
the endpoint's secret, as the service would send a retry. ``original``: the stored bytes and headers
exactly. An edited body is always re-signed. The replay runs in a worker; its answer is recorded in
the message's history (the detail's Forwards tab) and the form closes; a problem keeps it open.

The body is untrusted: a body the editor cannot show faithfully (not UTF-8, or holding control
characters) is not editable, and is replayed byte for byte as stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.validation import ValidationResult, Validator
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static, TextArea

from walletpass_tui.api.urls import url_problem
from walletpass_tui.text import one_line
from walletpass_tui.ui.screens.worker_form import WorkerForm
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.ui.widgets.notice import Notice, NoticeText
from walletpass_tui.webhooks.forward import ForwardError, SecretLookup, replay
from walletpass_tui.webhooks.models import ORIGINAL, RESIGN, Attempt, ForwardResult
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.target_options import TargetOptions

EDITABLE_LIMIT = 256 * 1024  # larger bodies are replayed as stored, not loaded into the editor


@dataclass(frozen=True)
class Replayed:
    target: str
    mode: str
    result: ForwardResult


class TargetUrl(Validator):
    def validate(self, value: str) -> ValidationResult:
        if not value.strip():
            return self.failure("Give the URL of your app, e.g. http://localhost:3000/webhooks.")
        problem = url_problem(value, allow_http=True)
        return self.failure(problem) if problem else self.success()


def editable_text(body: bytes) -> str | None:
    """The body as text an editor shows faithfully, or None (replayed as stored)."""
    if len(body) > EDITABLE_LIMIT:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: not editable as text
        return None
    if any((ch < " " and ch not in "\n\t") or ch == "\x7f" for ch in text):
        return None
    return text


class ReplayScreen(WorkerForm[Replayed | None]):
    SUBMIT_ID = "send"
    SUBMIT_LABEL = "Send"
    BUSY_LABEL = "Sending…"
    NOTICE_ID = "replay-notice"
    WORKER_GROUP = "replay"
    FAILURE = "The replay failed"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="form.cancel"),
        Binding("ctrl+s", "send", "Send", id="form.submit"),
    ]

    def __init__(
        self,
        store: Store,
        attempt: Attempt,
        *,
        target: str = "",
        secret_for: SecretLookup | None = None,
        options_for: Callable[[str], TargetOptions] | None = None,
    ) -> None:
        super().__init__(classes="form-screen")
        # The headers and certificates the dashboard's flags give a --forward-to target.
        self.options_for = options_for
        self.store = store
        self.attempt = attempt
        self.secret = secret_for(attempt) if secret_for else None
        self.initial_target = target
        self.text = editable_text(attempt.body)

    def compose(self) -> ComposeResult:
        a = self.attempt
        can_resign = bool(self.secret and a.webhook_id)
        with Vertical(id="replay-form", classes="form") as form:
            # The webhook-id is untrusted: a Text, never a string Textual would read as markup.
            form.border_title = Text("Replay " + one_line(a.webhook_id or f"delivery #{a.id}", 50))
            yield Label("Send to (your app)", classes="field-label")
            yield Input(
                self.initial_target,
                placeholder="http://localhost:3000/webhooks",
                validators=[TargetUrl()],
                validate_on=["changed", "submitted"],
                id="replay-target",
            )
            yield Static(id="replay-target-problem", classes="field-problem")
            yield Label("Signature", classes="field-label")
            with RadioSet(id="replay-mode"):
                yield RadioButton(
                    "re-sign: same webhook-id, fresh timestamp, the secret that verified it",
                    value=can_resign,
                    disabled=not can_resign,
                    id="mode-resign",
                )
                yield RadioButton(
                    "original: stored bytes and headers exactly (old timestamp)",
                    value=not can_resign,
                    id="mode-original",
                )
            yield Static(Text(self._mode_hint(can_resign)), id="replay-mode-hint")
            yield Label("Body", classes="field-label")
            if self.text is not None:
                yield TextArea(
                    self.text,
                    language="json" if self.text.lstrip().startswith(("{", "[")) else None,
                    soft_wrap=True,
                    show_line_numbers=False,
                    id="replay-body",
                )
            else:
                yield Static(
                    Text(
                        f"{a.body_size:,} bytes that an editor cannot show faithfully (not UTF-8 "
                        "text, control characters, or too large): replayed exactly as stored."
                    ),
                    id="replay-body-fixed",
                )
            yield Notice(id="replay-notice")
            with Horizontal(classes="form-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Send", id="send", variant="primary")
        yield KeyLine(id="replay-keys")

    def _mode_hint(self, can_resign: bool) -> str:
        if can_resign:
            return "An edited body is always re-signed."
        if not self.attempt.webhook_id:
            return "This attempt has no webhook-id, so it can only be replayed as stored."
        return (
            "No secret known here made this delivery's signature, so it can only be replayed as "
            "stored: import its endpoint (i) or give its secret (WALLETPASS_SECRET) to re-sign."
        )

    def on_mount(self) -> None:
        self._notice(None)
        target = self.query_one("#replay-target", Input)
        if target.value:
            self.query_one("#send", Button).focus()
        else:
            target.focus()

    # -- checking ------------------------------------------------------------------------------

    @on(Input.Changed, "#replay-target")
    def _target_changed(self, event: Input.Changed) -> None:
        result = event.validation_result
        problem = self.query_one("#replay-target-problem", Static)
        bad = result is not None and not result.is_valid
        problem.update(Text("✗ " + " ".join(result.failure_descriptions) if bad and result else ""))
        problem.set_class(bad, "-invalid")

    @on(TextArea.Changed, "#replay-body")
    def _body_changed(self) -> None:
        edited = self.edited_body() is not None
        hint = self.query_one("#replay-mode-hint", Static)
        if edited and not (self.secret and self.attempt.webhook_id):
            hint.update(Text("✗ An edited body must be re-signed, and no secret is known."))
            hint.set_class(True, "-invalid")
        else:
            note = "Edited: it will be re-signed." if edited else self._mode_hint(True)
            hint.update(Text(note))
            hint.set_class(False, "-invalid")

    def edited_body(self) -> bytes | None:
        """The editor's body when it differs from the stored one, else None."""
        if self.text is None:
            return None
        body = self.query_one("#replay-body", TextArea).text.encode("utf-8")
        return None if body == self.attempt.body else body

    def mode(self) -> str:
        return RESIGN if self.query_one("#mode-resign", RadioButton).value else ORIGINAL

    # -- sending ---------------------------------------------------------------------------------

    @on(Input.Submitted, "#replay-target")
    @on(Button.Pressed, "#send")
    def _send_pressed(self) -> None:
        self.action_send()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)

    def action_send(self) -> None:
        if self.busy:
            return
        target_input = self.query_one("#replay-target", Input)
        validation = target_input.validate(target_input.value)
        if validation is not None and not validation.is_valid:
            self._target_changed(Input.Changed(target_input, target_input.value, validation))
            target_input.focus()
            return
        self._set_busy(True)
        self._send(target_input.value.strip(), self.mode(), self.edited_body())

    @work(exclusive=True, group="replay", exit_on_error=False)
    async def _send(self, target: str, mode: str, body: bytes | None) -> None:
        try:
            options = self.options_for(target) if self.options_for else None
            result = await replay(
                self.store,
                self.attempt,
                target,
                mode=mode,
                secret=self.secret,
                body=body,
                options=options,
            )
        except ForwardError as exc:  # shown in the form
            self._set_busy(False)
            self._notice(NoticeText("Not sent.", hint=str(exc), error=True))
            return
        self.dismiss(Replayed(target, mode if body is None else "edited", result))
