"""Records to rows and back: the column lists, text SQLite can store, and multi-row inserts."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import fields
from json.encoder import encode_basestring_ascii
from typing import Any

from walletpass_tui.webhooks.models import (
    REJECTED_BODY_LIMIT,
    VERIFIED,
    Attempt,
    ForwardRow,
    LogRow,
    evolve,
)
from walletpass_tui.webhooks.relay_channel import relay_channel

# The log's columns are LogRow's fields, read in their order (attempts' columns of the same names).
_LOG_FIELDS = tuple(field.name for field in fields(LogRow))
LOG_COLUMNS = ", ".join(_LOG_FIELDS)
ATTEMPT_COLUMNS = (
    "id, webhook_id, attempt_no, received_at_ms, remote_addr, forwarded_for, method, path, headers, "
    "body, body_size, verdict, reason, detail, endpoint_id, status, processing_ms, topic, pass_id, "
    "note, body_differs, relay_url, relay_cursor"
)
FORWARD_COLUMNS = (
    "id, attempt_id, webhook_id, kind, mode, target, state, tries, next_try_at_ms, created_at_ms, "
    "finished_at_ms, status, latency_ms, response_headers, response_body, error, note, request_body"
)


def log_row(row: Sequence[Any]) -> LogRow:
    values = dict(zip(_LOG_FIELDS, row, strict=True))
    values["body_differs"] = bool(values["body_differs"])
    return LogRow(**values)


def attempt_from_row(row: Sequence[Any]) -> Attempt:
    (
        id_,
        webhook_id,
        attempt_no,
        received,
        remote,
        xff,
        method,
        path,
        headers,
        body,
        body_size,
        verdict,
        reason,
        detail,
        endpoint_id,
        status,
        processing_ms,
        topic,
        pass_id,
        note,
        differs,
        relay_url,
        relay_cursor,
    ) = row
    return Attempt(
        id=id_,
        webhook_id=webhook_id,
        attempt_no=attempt_no,
        received_at_ms=received,
        remote_addr=remote,
        forwarded_for=xff,
        method=method,
        path=path,
        headers=tuple((str(k), str(v)) for k, v in json.loads(headers)),
        body=bytes(body),
        body_size=body_size,
        verdict=verdict,
        reason=reason,
        detail=detail,
        endpoint_id=endpoint_id,
        status=status,
        processing_ms=processing_ms,
        topic=topic,
        pass_id=pass_id,
        note=note,
        body_differs=bool(differs),
        relay_url=relay_url,
        relay_cursor=relay_cursor,
    )


def headers_json(headers: Sequence[tuple[str, str]]) -> str:
    """``json.dumps(headers)``, character for character, without building an encoder per call (it
    runs for every delivery, on the writer's thread, holding the interpreter's lock)."""
    e = encode_basestring_ascii
    return "[" + ", ".join(f"[{e(k)}, {e(v)}]" for k, v in headers) + "]"


def attempt_values(a: Attempt) -> tuple[Any, ...]:
    """The row for ``INSERT INTO attempts (ATTEMPT_COLUMNS)``."""
    return (
        a.id,
        a.webhook_id,
        a.attempt_no,
        a.received_at_ms,
        a.remote_addr,
        a.forwarded_for,
        a.method,
        a.path,
        headers_json(a.headers),
        a.body,
        a.body_size if a.body_size is not None else len(a.body),
        a.verdict,
        a.reason,
        a.detail,
        a.endpoint_id,
        a.status,
        a.processing_ms,
        a.topic,
        a.pass_id,
        a.note,
        1 if a.body_differs else 0,
        a.relay_url,
        a.relay_cursor,
    )


def channel_of(a: Attempt) -> str | None:
    """The channel a relayed attempt came from (its cursor is unique in it), else None."""
    if a.relay_url is None or a.relay_cursor is None:
        return None
    return relay_channel(a.relay_url)


def forward_from_row(row: Sequence[Any]) -> ForwardRow:
    values = list(row)
    values[13] = tuple((str(k), str(v)) for k, v in json.loads(values[13] or "[]"))
    values[14] = bytes(values[14] or b"")
    values[17] = bytes(values[17]) if values[17] is not None else None
    return ForwardRow(*values)


def clean(text: str | None) -> str | None:
    """Text SQLite can store: bytes that were not UTF-8 (HTTP servers hand them over as lone surrogates,
    JSON escapes can make them too) are kept visible as ``\\xff`` escapes instead of failing the
    whole batch's transaction."""
    if text is None or text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: kept by its bytes
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # not even as bytes: replaced
            return text.encode("utf-8", "replace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return text


_TEXT_FIELDS = (
    "method",
    "path",
    "reason",
    "detail",
    "webhook_id",
    "endpoint_id",
    "remote_addr",
    "forwarded_for",
    "topic",
    "pass_id",
    "note",
    "relay_url",
)


def storable(a: Attempt) -> Attempt:
    """The attempt as stored: text fields valid Unicode, a rejected body cut at 64 KiB."""
    changes: dict[str, Any] = {}
    fields = a.__dict__
    for name in _TEXT_FIELDS:
        value = fields[name]
        if value is None or value.isascii():  # the common case, without a call
            continue
        cleaned = clean(value)
        if cleaned is not value:
            changes[name] = cleaned
    if not all(k.isascii() and v.isascii() for k, v in a.headers):
        changes["headers"] = tuple((clean(k) or "", clean(v) or "") for k, v in a.headers)
    if a.verdict != VERIFIED and len(a.body) > REJECTED_BODY_LIMIT:
        changes["body"] = a.body[:REJECTED_BODY_LIMIT]
        changes["body_size"] = a.body_size or len(a.body)
    return evolve(a, **changes) if changes else a


def insert_many(
    db: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]], tail: str = ""
) -> None:
    """``head VALUES (...), (...) tail`` for many rows at once.

    One statement runs in one step, so the writer's thread lets go of the GIL once per chunk
    instead of once per row (``executemany``): with the event loop busy, every hand-back of the
    GIL is a wait.
    """
    if not rows:
        return
    width = len(rows[0])
    per = max(1, min(500, db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
    group = "(" + ",".join("?" * width) + ")"
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        params = [value for row in chunk for value in row]
        db.execute(f"{head} VALUES {','.join([group] * len(chunk))} {tail}", params)
