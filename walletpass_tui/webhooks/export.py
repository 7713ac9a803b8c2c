"""Stored deliveries as JSON Lines or as curl commands that reproduce them byte for byte."""

from __future__ import annotations

import base64
import json
import shlex
from typing import Any

from walletpass_tui.formatting import format_ms
from walletpass_tui.webhooks.store import Attempt

# Headers a sender's HTTP stack sets itself; curl sets its own.
_TRANSPORT_HEADERS = {
    "host",
    "content-length",
    "connection",
    "accept-encoding",
    "transfer-encoding",
}


def attempt_record(a: Attempt) -> dict[str, Any]:
    """One JSON Lines record: metadata, all headers, the body as text when UTF-8, else base64."""
    record: dict[str, Any] = {
        "id": a.id,
        "webhook_id": a.webhook_id,
        "attempt": a.attempt_no,
        "received_at": format_ms(a.received_at_ms),
        "topic": a.topic,
        "verdict": a.verdict,
        "reason": a.reason,
        "endpoint_id": a.endpoint_id,
        "status": a.status,
        "method": a.method,
        "path": a.path,
        "headers": [[k, v] for k, v in a.headers],
        "body_truncated": a.body_truncated,
    }
    try:
        record["body"] = a.body.decode("utf-8")
    except UnicodeDecodeError:
        record["body_base64"] = base64.b64encode(a.body).decode("ascii")
    return record


def to_jsonl(a: Attempt) -> str:
    return json.dumps(attempt_record(a), ensure_ascii=False)


def _safe_text(body: bytes) -> str | None:
    """The body as text when a shell can carry it literally in single quotes (no NUL)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    if text.startswith("@"):
        # curl reads "--data-binary @name" from the file "name": such a body goes through stdin.
        return None
    return text


def to_curl(a: Attempt, url: str) -> str:
    """A POSIX-shell command that sends exactly these bytes with these headers to ``url``.

    UTF-8 bodies go in single quotes (which keep every byte but NUL literally); any other body is
    carried as base64 and decoded into curl's standard input, so nothing is lost to quoting (so is
    a body starting with ``@``, which curl would take for a file name).
    """
    parts = ["curl", "-sS", "-X", "POST", shlex.quote(url)]
    for key, value in a.headers:
        if key.lower() in _TRANSPORT_HEADERS:
            continue
        # "Name:" would make curl drop the header; "Name;" is curl's way to send it empty.
        header = f"{key}: {value}" if value.strip() else f"{key};"
        parts += ["-H", shlex.quote(header)]
    if not any(k.lower() == "content-type" for k, _ in a.headers):
        parts += ["-H", shlex.quote("Content-Type:")]  # don't let curl add a form type
    text = _safe_text(a.body)
    if text is not None:
        parts += ["--data-binary", shlex.quote(text)]
        return " ".join(parts)
    encoded = base64.b64encode(a.body).decode("ascii")
    parts += ["--data-binary", "@-"]
    return f"printf %s {shlex.quote(encoded)} | base64 -d | " + " ".join(parts)
