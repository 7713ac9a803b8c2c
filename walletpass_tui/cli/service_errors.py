"""A failed API call as one line for a person: the service's answer escaped, shortened, secrets
masked; an unparsable create answer holding a secret saved to a private file instead."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import CommandError
from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import mask_secret
from walletpass_tui.private_files import write_private_file
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.api.errors import ApiError

ANSWER_SHOWN_CHARS = 300
SECRET_IN_TEXT = re.compile(r"whsec_[A-Za-z0-9+/=]+")


def redact(text: str, settings: Settings) -> str:
    """``text`` with the API key and any signing secret masked."""
    if settings.api_key:
        text = text.replace(settings.api_key.reveal(), settings.api_key.masked)
    return SECRET_IN_TEXT.sub(lambda m: mask_secret(m.group(0)), text)


def api_failure(exc: ApiError, settings: Settings, *, rescue_secret: bool = False) -> CommandError:
    """One line for stderr. When the service's answer is worth seeing it is appended, escaped and
    shortened, secrets masked; an answer to the create call that holds a signing secret is saved
    to a private file instead, since the service never returns that secret again."""
    message = str(exc)
    body = exc.body
    if body is None or exc.kind not in ("bad_shape", "bad_json", "http"):
        return CommandError(message)
    if rescue_secret and SECRET_IN_TEXT.search(body):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = settings.home / f"unparsed-create-answer-{stamp}.txt"
        try:
            write_private_file(path, body.encode())
        except OSError:  # the message carries the body instead
            # Nowhere to keep it: showing it is the only way not to lose it.
            return CommandError(f"{message} The service answered: {printable(body)}")
        return CommandError(
            f"{message} The answer holds the endpoint's signing secret; it is saved in {path} "
            "(mode 0600)."
        )
    shown = printable(redact(body, settings), ANSWER_SHOWN_CHARS)
    return CommandError(f"{message} The service answered: {shown}")
