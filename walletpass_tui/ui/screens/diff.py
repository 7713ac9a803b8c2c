"""Two deliveries compared (``D``): the body's paths added, removed and changed, and the headers
that differ, as ``events diff`` prints them. Without a marked delivery to compare with, a
redelivery is compared with its first attempt, and any other delivery with the one of its topic
received before it (for a delivery that brought drift: the one before the drift)."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from walletpass_tui.query.diff import Diff, diff, diff_lines
from walletpass_tui.webhooks.models import VERIFIED, Attempt, LogFilter
from walletpass_tui.webhooks.store import Store

_STYLES = {
    "a": "bold red",
    "b": "bold green",
    "title": "bold",
    "added": "green",
    "removed": "red",
    "changed": "yellow",
    "same": "dim",
}


async def partner(store: Store, attempt: Attempt) -> tuple[Attempt | None, str]:
    """What ``attempt`` is compared with by default, and how to say it."""
    if attempt.attempt_no > 1 and attempt.webhook_id:
        for earlier in await store.message_attempts_without_bodies(attempt.webhook_id):
            if earlier.attempt_no == 1:
                first = await store.attempt(earlier.id)
                if first is not None:
                    return first, "a redelivery against its first attempt"
    flt = LogFilter(topic=attempt.topic, verdict=VERIFIED)
    before = await store.log_page(flt, limit=1, before_id=attempt.id)
    if before:
        found = await store.attempt(before[0].id)
        if found is not None:
            topic = attempt.topic or "no topic"
            return found, f"against the delivery of {topic} received before it"
    return None, ""


class DiffScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "close", "Close", id="diff.close")]

    def __init__(self, store: Store, attempt_id: int, against: int | None = None) -> None:
        super().__init__(classes="json-screen")
        self.store = store
        self.attempt_id = attempt_id
        self.against = against
        self.diff: Diff | None = None  # once loaded (tests wait for it)
        self.said: str | None = None  # why there is nothing to compare

    def compose(self) -> ComposeResult:
        with Vertical(id="template-dialog") as dialog:
            dialog.border_title = "Compare deliveries"
            dialog.border_subtitle = "esc close"
            with VerticalScroll(id="template-scroll"):
                yield Static(Text("Reading both deliveries…"), id="diff-lines")

    def on_mount(self) -> None:
        self._load()

    @work(exclusive=True, group="diff", exit_on_error=False)
    async def _load(self) -> None:
        attempt = await self.store.attempt(self.attempt_id)
        if attempt is None:
            self._say("That delivery is no longer in the history.")
            return
        how = ""
        if self.against is not None:
            other = await self.store.attempt(self.against)
            a, b = other, attempt
        else:
            other, how = await partner(self.store, attempt)
            a, b = other, attempt
        if a is None:
            self._say(
                "Nothing to compare it with: it is the first of its topic. Mark a delivery with "
                "m, then press D on another."
            )
            return
        self.diff = diff(a, b)
        text = Text()
        for i, (kind, line) in enumerate(diff_lines(self.diff)):
            if i:
                text.append("\n")
            text.append(line, _STYLES.get(kind, ""))
        dialog = self.query_one("#template-dialog", Vertical)
        dialog.border_title = "Compare deliveries" + (f": {how}" if how else "")
        self.query_one("#diff-lines", Static).update(text)

    def _say(self, sentence: str) -> None:
        self.said = sentence
        self.query_one("#diff-lines", Static).update(Text(sentence))

    def action_close(self) -> None:
        self.dismiss(None)
