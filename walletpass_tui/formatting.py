"""Plain-text presentation shared by the command line and the dashboard: times, gaps, safe text."""

from __future__ import annotations

from datetime import UTC, datetime


def format_ms(ms: int, *, time_only: bool = False) -> str:
    """A UTC time in milliseconds as ISO 8601 (``2026-11-23T14:02:11.204Z``) or ``14:02:11.204``."""
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC)
    if time_only:
        return stamp.strftime("%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_gap(ms: int) -> str:
    """A gap between attempts in the units of the service's schedule: 5.0 s, 5 min, 2 h."""
    seconds = ms / 1000
    if seconds < 1:
        return f"{ms} ms"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def printable(text: str, limit: int | None = None) -> str:
    """Untrusted text made safe for a terminal: control characters and escapes shown, not executed."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\t" or (code >= 0x20 and code != 0x7F and not 0x80 <= code < 0xA0):
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    result = "".join(out)
    if limit is not None and len(result) > limit:
        result = result[: max(0, limit - 1)] + "…"
    return result
