"""Webhook bodies for the check: the simulator's invented event shape, serialized in several ways.

The service does not document a body's fields (spec section 6, rule 9), so the documents come from
``walletpass_tui.sim.events`` (its plausible invention); what matters here is only the *bytes*: a
receiver must verify them exactly as received, whatever their spelling.
"""

from __future__ import annotations

import json
import random
from typing import Any

from walletpass_tui.sim.events import event_body

LARGE_BODY_BYTES = 256 * 1024
# Text a real holder could have: accents, other scripts, an emoji; every one of them is changed
# by a receiver that decodes and re-encodes the JSON with ASCII escapes.
NON_ASCII_NAME = "Zoë Ångström-Łukasiewicz · 李小龍 · Café 🎟️"


def event_document(topic: str, rng: random.Random) -> dict[str, Any]:
    """A body document for ``topic`` as the simulator makes them up."""
    return event_body(topic, rng=rng)


def compact(doc: Any) -> bytes:
    """The usual spelling of a JSON body: no spaces, keys in order, non-ASCII as UTF-8."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def non_ascii(doc: dict[str, Any]) -> bytes:
    """The body with a holder name in non-ASCII UTF-8, written as raw UTF-8 (no ``\\u`` escapes)."""
    data = dict(doc.get("data") or {})
    data["holderName"] = NON_ASCII_NAME
    return compact({**doc, "data": data})


def unusual_spelling(doc: dict[str, Any]) -> bytes:
    """Valid JSON no serializer would write back the same way: keys in reverse order, tabs,
    spaces before colons, a CRLF line ending and trailing whitespace."""

    def reverse(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: reverse(v) for k, v in reversed(list(value.items()))}
        return value

    text = json.dumps(reverse(doc), indent="\t", separators=(" ,", " : "), ensure_ascii=False)
    return ("  " + text.replace("\n", "\r\n") + " \r\n").encode("utf-8")


def large(doc: dict[str, Any], size: int = LARGE_BODY_BYTES) -> bytes:
    """The body padded to exactly ``size`` bytes with a long (invented) ``notes`` field."""
    data = dict(doc.get("data") or {})
    data["notes"] = ""
    base = compact({**doc, "data": data})
    if len(base) > size:
        raise ValueError(f"a body of {size} bytes cannot hold the event itself")
    filler = "Pass history line. " * ((size - len(base)) // 19 + 1)
    data["notes"] = filler[: size - len(base)]
    body = compact({**doc, "data": data})
    assert len(body) == size
    return body


def change_one_byte(body: bytes, pass_id: str | None) -> bytes:
    """``body`` with one byte changed, still valid JSON: the last character of the pass id (or,
    without one, of the first long enough ASCII word) is swapped for another letter."""
    marker = pass_id.encode() if pass_id else None
    index = body.find(marker) + len(marker) - 1 if marker and marker in body else -1
    if index < 0:
        index = max(i for i, b in enumerate(body) if chr(b).isalnum())
    old = body[index]
    new = ord("B") if old == ord("A") else ord("A")
    return body[:index] + bytes([new]) + body[index + 1 :]
