"""One JSON shape for an attempt, and stored deliveries as JSON Lines or as curl commands.

:func:`attempt_json` is the only place that decides what an attempt looks like as JSON: ``listen
--json`` prints it per attempt, ``events show --json`` lists it per message and ``events export``
writes it per line. docs/history.md ("The JSON of an attempt") documents every key.
"""

from __future__ import annotations

import base64
import json
import shlex
from typing import TYPE_CHECKING, Any

from walletpass_tui.text import format_ms

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt

__all__ = ["attempt_json", "attempt_record", "to_curl", "to_jsonl"]

# Headers a sender's HTTP stack sets itself; curl sets its own.
_TRANSPORT_HEADERS = {
    "host",
    "content-length",
    "connection",
    "accept-encoding",
    "transfer-encoding",
}


def attempt_json(a: Attempt, *, with_body: bool = True) -> dict[str, Any]:
    """The attempt as JSON. ``with_body`` adds the request itself: method, path, every header in
    order, ``body`` (the text when the bytes are UTF-8, else null) and ``body_base64`` (the exact
    bytes, always). ``body_differs`` is true when an earlier attempt with the same webhook-id had
    another body."""
    data: dict[str, Any] = {
        "id": a.id,
        "webhook_id": a.webhook_id,
        "attempt": a.attempt_no,
        "received_at": format_ms(a.received_at_ms),
        "topic": a.topic,
        "pass_id": a.pass_id,
        "verdict": a.verdict,
        "reason": a.reason,
        "detail": a.detail,
        "endpoint_id": a.endpoint_id,
        "status": a.status,
        "note": a.note,
        "remote_addr": a.remote_addr,
        "forwarded_for": a.forwarded_for,
        "relay_url": a.relay_url,  # came through this relay (null: posted directly)
        "relay_cursor": a.relay_cursor,
        "body_size": a.body_size if a.body_size is not None else len(a.body),
        "body_differs": bool(getattr(a, "body_differs", False)),
        "processing_ms": round(a.processing_ms, 3),
    }
    if with_body:
        data["method"] = a.method
        data["path"] = a.path
        data["headers"] = [[k, v] for k, v in a.headers]
        try:
            data["body"] = a.body.decode("utf-8")
        except UnicodeDecodeError:  # not UTF-8: the body goes as base64
            data["body"] = None
        data["body_base64"] = base64.b64encode(a.body).decode("ascii")
        data["body_truncated"] = a.body_truncated
    return data


attempt_record = attempt_json  # the name export used before


def to_jsonl(a: Attempt) -> str:
    return json.dumps(attempt_json(a), ensure_ascii=False)


def _plain(text: str) -> bool:
    """True when ``text`` can sit in single quotes and be printed on a terminal as it is: every
    character printable, or a line feed or tab."""
    return all(ch.isprintable() or ch in "\n\t" for ch in text)


def _safe_text(body: bytes) -> str | None:
    """The body as text when it can be shown and quoted literally; None when it needs base64."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: exported as base64
        return None
    if not _plain(text):
        return None  # control bytes (ESC, NUL, CR, bidi overrides...) travel as base64
    if text.startswith("@"):
        # curl reads "--data-binary @name" from the file "name": such a body goes through stdin.
        return None
    return text


def _decoded(text: str) -> str:
    """A shell word that expands to ``text``, written in base64 so nothing in it reaches the
    terminal that prints the command."""
    encoded = base64.b64encode(text.encode("utf-8", errors="surrogateescape")).decode("ascii")
    return f'"$(printf %s {encoded} | base64 -d)"'


def _word(text: str) -> str:
    return shlex.quote(text) if text.isprintable() else _decoded(text)


def to_curl(a: Attempt, url: str) -> str:
    """A POSIX-shell command that sends exactly these bytes with these headers to ``url``.

    Printable UTF-8 bodies go in single quotes; any other body (not UTF-8, or holding control or
    format characters) is carried as base64 and decoded into curl's standard input, so nothing is
    lost to quoting and printing the command on a terminal cannot run escape sequences (so is a
    body starting with ``@``, which curl would take for a file name). Header values with such
    characters are decoded from base64 the same way.
    """
    parts = ["curl", "-sS", "-X", "POST", _word(url)]
    for key, value in a.headers:
        if key.lower() in _TRANSPORT_HEADERS:
            continue
        # "Name:" would make curl drop the header; "Name;" is curl's way to send it empty.
        header = f"{key}: {value}" if value.strip() else f"{key};"
        parts += ["-H", _word(header)]
    if not any(k.lower() == "content-type" for k, _ in a.headers):
        parts += ["-H", shlex.quote("Content-Type:")]  # don't let curl add a form type
    text = _safe_text(a.body)
    if text is not None:
        parts += ["--data-binary", shlex.quote(text)]
        return " ".join(parts)
    encoded = base64.b64encode(a.body).decode("ascii")
    parts += ["--data-binary", "@-"]
    return f"printf %s {shlex.quote(encoded)} | base64 -d | " + " ".join(parts)
