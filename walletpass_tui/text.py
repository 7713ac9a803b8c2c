"""The one place that decides how untrusted text, times, durations and sizes are shown.

Used by the command line and the dashboard alike. Text from outside (webhook bodies, headers, ids,
template fields, a tunnel's URL, a target's answer) is never passed to a terminal or a markup
parser as it came: every character that is not plainly printable (control characters, so ESC and
every ANSI/OSC sequence it starts, BEL, backspace, DEL, C1 controls; format characters such as the
bidi overrides U+202A..U+202E and isolates U+2066..U+2069, zero-width spaces and joiners, the byte
order mark; line and paragraph separators U+2028/U+2029; private-use, unassigned and surrogate code
points) is replaced by its Python escape (``\\x1b``, ``\\u202e``). The result is plain ASCII-safe
for those classes, so it can neither move the cursor, ring the bell, rewrite a line nor reorder
what a person reads. Nothing here imports a UI library.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "ELLIPSIS",
    "PRETTY_LIMIT",
    "RAW_LIMIT",
    "body_text",
    "clip",
    "compact_value",
    "format_duration",
    "format_gap",
    "format_ms",
    "format_size",
    "one_line",
    "parse_ascii_int",
    "parse_json_body",
    "pretty_json",
    "printable",
    "visible",
]

ELLIPSIS = "…"
PRETTY_LIMIT = 256 * 1024  # characters of a pretty-printed body shown at once
RAW_LIMIT = 256 * 1024  # characters of a raw body shown at once
DAY_MS = 86_400_000


def _escape(ch: str) -> str:
    if ch == "\t":
        return "\\t"
    return ch.encode("unicode_escape").decode("ascii")


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that is not plainly printable replaced by its escape.

    With ``keep_newlines`` line feeds and tabs stay as they are (multi-line views); a carriage
    return is still shown escaped, since it would otherwise rewrite the line it ends.
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


def printable(text: str, limit: int | None = None) -> str:
    """Untrusted text on one line, escaped, and cut to ``limit`` characters when one is given."""
    shown = visible(text)
    return shown if limit is None else clip(shown, limit)


def one_line(value: str | None, width: int | None = None, *, missing: str = "-") -> str:
    """A single-line, escaped, optionally clipped rendering of an untrusted value."""
    if value is None or value == "":
        return missing
    return printable(value, width)


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
    except (UnicodeDecodeError, ValueError, RecursionError):  # not JSON: None, as documented
        return None


def pretty_json(doc: Any, limit: int = PRETTY_LIMIT) -> tuple[str, bool]:
    """``doc`` indented for reading, escaped for the terminal, and whether it was cut."""
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    return visible(text, keep_newlines=True), cut


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def compact_value(value: Any, width: int = 40) -> str:
    """A nested value (a template field) on one short line: ``{3 keys}``, ``[2 items]``, text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return printable(value, width)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict | list):
        inline = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if len(inline) <= width:
            return visible(inline)
        n = len(value)
        return f"{{{_count(n, 'key')}}}" if isinstance(value, dict) else f"[{_count(n, 'item')}]"
    return printable(str(value), width)


# -- times, durations, sizes ------------------------------------------------------------------


def parse_ascii_int(text: str | bytes, *, max_digits: int = 19) -> int | None:
    """A whole number written only with the ASCII digits 0-9, at most ``max_digits`` of them; None
    for anything else.

    The one way a number from the network, a file or another process is read. Python's ``int()``
    also takes a sign (``+5``), surrounding spaces (``" 12 "``), underscores (``1_000``) and the
    digits of every script (``"١٢٣"`` is 123); ``str.isdigit()`` also passes ``"²"``, which
    ``int()`` then refuses. None of those is a number on the wire. The length is checked first, so
    a megabyte of digits is refused at once instead of converted (``int()`` of more than 4300
    digits raises).
    """
    if not 0 < len(text) <= max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def format_ms(ms: int, *, time_only: bool = False) -> str:
    """A UTC time in milliseconds as ISO 8601 (``2026-11-23T14:02:11.204Z``) or ``14:02:11.204``."""
    if time_only:  # the time of day in UTC, by arithmetic (the log draws one for every row)
        seconds, millis = divmod(ms % DAY_MS, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return f"{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}"
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_duration(seconds: float, *, fine: bool = True) -> str:
    """A duration in the units of the service's schedule: ``5 s``, ``5 min``, ``35 min 5 s``, ``2 h``.

    ``fine`` shows what is under 10 s more closely (``250 ms``, ``5.0 s``); without it everything is
    rounded to whole seconds (``0 s``), as the simulated service's offsets are.
    """
    seconds = max(0.0, float(seconds))
    if fine and seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if fine and seconds < 10:
        return f"{seconds:.1f} s"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] if hours else []
    if minutes:
        parts.append(f"{minutes} min")
    if secs or not parts:
        parts.append(f"{secs} s")
    return " ".join(parts)


def format_gap(ms: int) -> str:
    """The gap between two attempts, given in milliseconds."""
    return format_duration(ms / 1000)


def format_size(n: int) -> str:
    """A byte count: ``512 B``, ``64.0 KiB``, ``1.0 MiB``."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"
