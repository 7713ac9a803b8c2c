"""One delivery on a screen of its own (Enter in the log; the only detail view on small terminals)."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from walletpass_tui.ui.messages import DiffRequested, ReplayRequested
from walletpass_tui.ui.panes.delivery_detail import DeliveryDetail, copy_bindings
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.webhooks.store import Store


class DetailScreen(Screen[None]):
    """Built once and installed; ``open(attempt_id)`` shows another delivery (composing a screen
    of tabs anew on every Enter would cost a few hundred milliseconds)."""

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="detail.close"),
        Binding(
            "j",
            "step(1)",
            "Older",
            show=False,
            id="detail.older",
            tooltip="The next (older) delivery in the log",
        ),
        Binding(
            "k",
            "step(-1)",
            "Newer",
            show=False,
            id="detail.newer",
            tooltip="The previous (newer) delivery in the log",
        ),
        Binding("b", "tab('body')", "Body", id="detail.body"),
        Binding("h", "tab('headers')", "Headers", id="detail.headers"),
        Binding("w", "tab('raw')", "Raw", id="detail.raw"),
        Binding(
            "o", "tab('forwards')", "Forwards", id="detail.forwards", tooltip="Forwards & replays"
        ),
        Binding(
            "R", "replay", "Replay", id="replay", tooltip="Send this delivery to your app again"
        ),
        Binding("right_square_bracket", "page(1)", "Next part", show=False, id="body.next_part"),
        Binding(
            "left_square_bracket", "page(-1)", "Previous part", show=False, id="body.previous_part"
        ),
        Binding("c", "copy_id", "Copy id", id="detail.copy_id", tooltip="Copy the webhook-id"),
        Binding(
            "D",
            "diff",
            "Compare",
            id="diff",
            tooltip="Compare with its first attempt (a redelivery), else the one before it",
        ),
        *copy_bindings(show=True),
    ]

    def __init__(
        self,
        store: Store,
        attempt_id: int | None = None,
        *,
        step: Callable[[int], int | None] | None = None,
    ) -> None:
        super().__init__(classes="detail-screen")
        self.store = store
        self.attempt_id = attempt_id
        self._step = step  # moves the log's cursor by n rows, returns the attempt now selected

    def compose(self) -> ComposeResult:
        yield Static(Text("Delivery  (esc: back)"), id="detail-title")
        yield DeliveryDetail(self.store, id="detail-full")
        yield KeyLine(id="detail-keys")

    @property
    def detail(self) -> DeliveryDetail:
        return self.query_one("#detail-full", DeliveryDetail)

    def on_mount(self) -> None:
        if self.attempt_id is not None:
            self.detail.show(self.attempt_id)

    def open(self, attempt_id: int) -> None:
        """Show this delivery (the screen is then pushed by the caller)."""
        self.attempt_id = attempt_id
        if self.is_mounted:
            self.detail.show(attempt_id)

    @on(DeliveryDetail.Loaded)
    def _loaded(self, event: DeliveryDetail.Loaded) -> None:
        data = event.data
        if data is None:
            return
        a = data.attempt
        title = Text(f"Delivery #{a.id} · attempt {a.attempt_no} of {len(data.attempts)}")
        title.append("  (esc: back)")
        self.query_one("#detail-title", Static).update(title)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_step(self, rows: int) -> None:
        if self._step is not None:
            attempt_id = self._step(rows)
            if attempt_id is not None and attempt_id != self.attempt_id:
                self.open(attempt_id)

    def action_replay(self) -> None:
        if self.attempt_id is not None:
            self.post_message(ReplayRequested(self.attempt_id))

    def action_diff(self) -> None:
        if self.attempt_id is not None:
            self.post_message(DiffRequested(self.attempt_id))

    def action_page(self, step: int) -> None:
        """The next or previous part of a long body (Body and Raw tabs)."""
        self.detail.action_page(step)

    def on_screen_resume(self) -> None:
        self.detail.catch_up()

    def action_tab(self, key: str) -> None:
        self.detail.show_tab(key)

    def action_copy_id(self) -> None:
        data = self.detail.data
        if data is not None and data.attempt.webhook_id:
            self.app.copy_to_clipboard(data.attempt.webhook_id)
            self.notify("webhook-id copied to the clipboard.", markup=False)

    def action_copy(self, what: str) -> None:
        """The delivery on screen as curl, its body or its headers, on the clipboard."""
        from walletpass_tui.ui.copying import copy_attempt

        data = self.detail.data
        if data is not None:
            copy_attempt(self.app, data.attempt, what)
