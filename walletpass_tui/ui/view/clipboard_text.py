"""What the copy keys put on the clipboard: a delivery as a curl command, its body, its headers.

The curl command is ``events export --format curl``'s (``webhooks.export.to_curl``): printable
bodies quoted, anything else carried as base64, so pasting it into a shell sends the same bytes
and printing it cannot run escape sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

from walletpass_tui.text import format_size, one_line
from walletpass_tui.webhooks.export import to_curl
from walletpass_tui.webhooks.models import Attempt

CURL = "curl"
BODY = "body"
HEADERS = "headers"
WHAT = (CURL, BODY, HEADERS)


@dataclass(frozen=True)
class Copied:
    text: str  # what goes on the clipboard
    what: str  # what it is, for the notification

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8", errors="surrogateescape"))

    @property
    def message(self) -> str:
        """The notification: what was copied, and its size."""
        return f"Copied {self.what} to the clipboard ({format_size(self.size)})."


def clipboard_text(attempt: Attempt, what: str, *, url: str) -> Copied:
    """``what`` (``curl``, ``body`` or ``headers``) of ``attempt``; ``url``: where the curl
    command posts."""
    name = one_line(attempt.webhook_id, 40, missing=f"delivery #{attempt.id}")
    if what == CURL:
        text = to_curl(attempt, url)
        return Copied(text, f"a curl command that posts {name} to {one_line(url, 60)}")
    if what == HEADERS:
        text = "".join(f"{key}: {value}\n" for key, value in attempt.headers)
        count = len(attempt.headers)
        return Copied(text, f"the {count} header{'s' if count != 1 else ''} of {name}")
    if what == BODY:
        try:
            text = attempt.body.decode("utf-8")
            how = ""
        except UnicodeDecodeError:  # not UTF-8: copied escaped, as the note says
            text = attempt.body.decode("utf-8", errors="backslashreplace")
            how = " (not UTF-8: its other bytes as \\xNN)"
        if attempt.body_truncated:
            how += f" (the first {format_size(len(attempt.body))} kept of it)"
        return Copied(text, f"the body of {name}{how}")
    raise ValueError(f"cannot copy {what!r}")
