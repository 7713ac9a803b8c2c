"""Text from outside (webhook bodies, headers, ids, template fields) made safe to put on screen.

Nothing from a sender or the service is ever parsed as markup: it goes into ``rich.text.Text`` or
``textual.content.Content`` objects built from plain strings. Control and format characters (ESC,
BEL, backspace, bidi overrides, zero-width joiners, line separators...) are shown as Python escapes
(``\\x1b``, ``\\u202e``) so a body can neither move the cursor nor disguise itself.
"""

from __future__ import annotations

import json
from typing import Any

ELLIPSIS = "…"
PRETTY_LIMIT = 256 * 1024  # characters of a pretty-printed body shown on screen
RAW_LIMIT = 256 * 1024  # characters of a raw body shown on screen


def _escape(ch: str) -> str:
    return ch.encode("unicode_escape").decode("ascii")


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every non-printable character replaced by its escape.

    With ``keep_newlines`` line feeds and tabs stay as they are (multi-line views); a carriage
    return is still shown, since it would otherwise rewrite the line it ends.
    """
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch.isprintable() or (keep_newlines and ch in "\n\t"):
            out.append(ch)
        else:
            out.append(_escape(ch))
    return "".join(out)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when something was cut."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + ELLIPSIS


def one_line(value: str | None, width: int | None = None, *, missing: str = "-") -> str:
    """A single-line, escaped, optionally clipped rendering of an untrusted value."""
    if value is None or value == "":
        return missing
    shown = visible(value)
    return shown if width is None else clip(shown, width)


def body_text(body: bytes, limit: int = RAW_LIMIT) -> tuple[str, bool]:
    """The raw body for display (invalid UTF-8 shown as ``\\xNN``) and whether it was cut."""
    text = body.decode("utf-8", errors="backslashreplace")
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    return visible(text, keep_newlines=True), cut


def parse_json_body(body: bytes) -> Any | None:
    """The body as JSON, or None when it is not (UTF-8) JSON."""
    if not body.strip():
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def pretty_json(doc: Any, limit: int = PRETTY_LIMIT) -> tuple[str, bool]:
    """``doc`` indented for reading, escaped for the terminal, and whether it was cut."""
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    return visible(text, keep_newlines=True), cut


def compact_value(value: Any, width: int = 40) -> str:
    """A nested value (a template field) on one short line: ``{3 keys}``, ``[2 items]``, text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return clip(visible(value), width)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        inline = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if len(inline) <= width:
            return visible(inline)
        n = len(value)
        return f"{{{n} key{'s' if n != 1 else ''}}}"
    if isinstance(value, list):
        inline = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if len(inline) <= width:
            return visible(inline)
        n = len(value)
        return f"[{n} item{'s' if n != 1 else ''}]"
    return clip(visible(str(value)), width)
