"""The one reading of a time the command line is given: ``--since``, ``--until``,
``--older-than``, in every command that asks for one.

A time is either

* a duration back from now: a number and a unit, ``s``, ``m`` (or ``min``), ``h``, ``d``, ``w``,
  several in a row (``1h30m``), a fraction allowed (``1.5h``), a bare number counting days; at most
  a century;
* or an ISO 8601 time: ``2026-11-23T14:00:00Z``, ``2026-11-23T15:00+01:00``, ``2026-11-23 14:00``
  (a time without a zone is local, as people type it), ``2026-11-23`` (local midnight).

Numbers are the ASCII digits 0-9 only: Python's ``float()`` and ``\\d`` also take the digits of
every script (Arabic-Indic ``12h`` would be 12 hours), which no one means on a command line.
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import dataclass
from datetime import datetime

from walletpass_tui.errors import UsageError
from walletpass_tui.text import format_ms, printable

__all__ = [
    "MAX_DURATION_S",
    "When",
    "check_window",
    "duration_arg",
    "parse_duration",
    "parse_when",
    "when_arg",
]

MAX_DURATION_S = 100 * 365 * 86400  # a century: anything longer is a typo
MAX_TEXT = 64  # characters of a time or a duration; anything longer is refused unread
_UNIT_S = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
# One number and its unit; [0-9], never \d (which takes every script's digits).
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?) *(min|[smhdw])", re.IGNORECASE | re.ASCII)
_BARE = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)
EXAMPLES = "e.g. 45s, 15m, 12h, 1h30m, 7d, 2w or 2026-11-23T14:00:00Z"


@dataclass(frozen=True)
class When:
    """A point in time the user gave: epoch milliseconds, and how far back from now it was when
    given as a duration (None for a time given as such)."""

    ms: int
    ago_s: float | None = None

    def describe(self) -> str:
        """``12 h ago`` for a duration, the ISO time otherwise."""
        if self.ago_s is None:
            return format_ms(self.ms)
        return f"{_plain(self.ago_s)} ago"


def parse_duration(text: str) -> float:
    """Seconds in ``90s``, ``15m``, ``12h``, ``1h30m``, ``30d``, ``2w`` (a bare number is days), at
    most a century; UsageError, one sentence with examples, for anything else."""
    seconds = _duration(text)
    if seconds is None:
        raise UsageError(f"{_shown(text)} is not a duration; use e.g. 45s, 15m, 12h, 1h30m or 2w.")
    return seconds


def parse_when(text: str, *, now_ms: int | None = None) -> When:
    """A duration back from ``now_ms`` (default: now) or an ISO 8601 time."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    seconds = _duration(text)
    if seconds is not None:
        return When(now_ms - int(seconds * 1000), ago_s=seconds)
    stamp = _iso(text)
    if stamp is None:
        raise UsageError(f"{_shown(text)} is neither a duration nor an ISO 8601 time; {EXAMPLES}.")
    return When(stamp)


def duration_arg(text: str) -> float:
    """:func:`parse_duration` for argparse (a usage error, exit 2)."""
    try:
        return parse_duration(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def when_arg(text: str) -> When:
    """:func:`parse_when` for argparse (a usage error, exit 2)."""
    try:
        return parse_when(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


when_arg.__name__ = "time"  # argparse names the type in "invalid time value" (never reached)


def _duration(text: str) -> float | None:
    """Seconds, or None when ``text`` is not a duration; UsageError past a century."""
    compact = text.strip()
    if not compact or len(compact) > MAX_TEXT or not compact.isascii():
        return None
    if _BARE.fullmatch(compact):
        seconds = float(compact) * _UNIT_S["d"]
    else:
        position, seconds = 0, 0.0
        while position < len(compact):
            match = _PART.match(compact, position)
            if match is None:
                return None
            seconds += float(match.group(1)) * _UNIT_S[match.group(2).lower()]
            position = match.end()
            while position < len(compact) and compact[position] == " ":
                position += 1
    if seconds > MAX_DURATION_S:
        raise UsageError(f"{_shown(text)} is longer than 100 years; give e.g. 30d or 52w.")
    return seconds


def _iso(text: str) -> int | None:
    """Epoch milliseconds of an ISO 8601 time (local when it names no zone), or None."""
    compact = text.strip()
    if not compact or len(compact) > MAX_TEXT or not compact.isascii():
        return None
    if compact[-1:] in ("z", "Z"):
        compact = compact[:-1] + "+00:00"
    try:
        stamp = datetime.fromisoformat(compact)
        if stamp.tzinfo is None:
            stamp = stamp.astimezone()  # a local time, as people type it
        return int(stamp.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):  # not a time, or outside what a clock holds
        return None


def _plain(seconds: float) -> str:
    """``90 s``, ``15 min``, ``12 h``, ``7 d``: the largest unit that divides it whole."""
    for size, word in ((604800, "w"), (86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {word}"
    return f"{seconds:g} s"


def _shown(text: str) -> str:
    return repr(printable(text, 40))


def check_window(since: When | None, until: When | None) -> None:
    """UsageError when ``--until`` is not after ``--since``."""
    if since is not None and until is not None and until.ms <= since.ms:
        raise UsageError(
            f"--until ({until.describe()}) must be after --since ({since.describe()}); "
            "swap them or widen the window."
        )
