"""Best-effort labels from a webhook body whose fields the service does not document.

Nothing here assumes a shape: a body that is not JSON, or JSON without such fields, simply has no
topic or pass id. Only plain strings are taken, bounded in length; they are shown escaped anyway.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TOPIC_KEYS = ("type", "topic", "event", "eventType", "event_type")
_PASS_ID_KEY = re.compile(r"^pass_?id$", re.IGNORECASE)
_MAX_LABEL = 120
_MAX_DEPTH = 4


def parse_json(body: bytes) -> Any | None:
    """The body as JSON, or None when it is not UTF-8 JSON."""
    if not body or body[:1] not in b'{["0123456789-tfn \t\r\n':
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _label(value: Any) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= _MAX_LABEL:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate from a JSON escape: not storable text
                return None
        return value
    return None


def extract_topic(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    for key in _TOPIC_KEYS:
        found = _label(doc.get(key))
        if found:
            return found
    return None


def extract_pass_id(doc: Any, depth: int = 0) -> str | None:
    """A ``passId``/``pass_id`` string anywhere near the top, or ``pass: {"id": ...}``."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(doc, dict):
        for key, value in doc.items():
            if isinstance(key, str) and _PASS_ID_KEY.match(key):
                found = _label(value)
                if found:
                    return found
        nested = doc.get("pass")
        if isinstance(nested, dict):
            found = _label(nested.get("id"))
            if found:
                return found
        for value in doc.values():
            if isinstance(value, dict | list):
                found = extract_pass_id(value, depth + 1)
                if found:
                    return found
    elif isinstance(doc, list):
        for item in doc[:20]:
            found = extract_pass_id(item, depth + 1)
            if found:
                return found
    return None


def labels(body: bytes) -> tuple[str | None, str | None]:
    """(topic, pass id) found in the body, each None when absent."""
    doc = parse_json(body)
    return extract_topic(doc), extract_pass_id(doc)
