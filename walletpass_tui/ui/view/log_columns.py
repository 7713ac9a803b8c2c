"""The event log's columns: which fit in a given width, and each cell's text (escaped, clipped).

Pure functions, no Textual: the log view and its header line share them, and tests call them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from walletpass_tui.api.topics import TOPICS, short_topic, topic_label
from walletpass_tui.text import clip, format_ms, one_line
from walletpass_tui.webhooks.models import VERIFIED, LogRow, is_check_note
from walletpass_tui.webhooks.reasons import SHORT_REASONS

GAP = 1
VERIFIED_MARK = "✓"
REJECTED_MARK = "✗"
CHECK_MARK = "⚑"
DRIFT_MARK = "Δ"  # after the verdict: the delivery's payload drifted from the learned schema


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # the least it needs
    priority: int  # columns with a higher number are dropped first when space runs out
    flex: int = 0  # share of the spare width it takes
    right: bool = False


COLUMNS: tuple[Column, ...] = (
    Column("time", "time (UTC)", 12, 0),
    Column("topic", "topic", 11, 2),
    Column("pass", "pass id", 7, 4, flex=1),
    Column("verdict", "verdict", 16, 0),
    Column("attempt", "#", 3, 1, right=True),
    Column("endpoint", "endpoint", 8, 3, flex=1),
    Column("status", "ack", 3, 5, right=True),
    Column("webhook", "webhook-id", 12, 1, flex=3),
    Column("reason", "note", 14, 6, flex=2),
)

# How wide a flex column may grow before the spare width goes to the next one.
_FLEX_CAP = {"pass": 26, "endpoint": 30, "webhook": 40, "reason": 200}
# Columns whose values vary in length: the log measures the widest value of each it holds, and
# the spare width goes to the ids first (up to what their widest values need, the narrowest
# widened first), the rest to the note.
SIZED = ("pass", "endpoint", "webhook", "reason")
_SIZED_CAP = {"pass": 48, "endpoint": 48, "webhook": 64}


def _choose(width: int) -> tuple[list[Column], int]:
    """The columns that fit at their least width, by priority; and the cells they use."""
    chosen: list[Column] = []
    used = 0
    for column in sorted(COLUMNS, key=lambda c: c.priority):
        need = column.width + (GAP if chosen else 0)
        if used + need <= width:
            chosen.append(column)
            used += need
    return [c for c in COLUMNS if c in chosen], used


def layout(width: int, wants: dict[str, int] | None = None) -> list[tuple[Column, int]]:
    """The columns that fit in ``width`` cells, in display order, each with its width.

    ``wants``: the widest value of each ``SIZED`` column among the rows shown. With it the spare
    width goes to the ids first, each as wide as its widest value (a note column no row uses
    gives its room to an id that would still be cut), then to the note; without it (nothing
    measured yet) it is shared out in fixed proportions.
    """
    ordered, used = _choose(width)
    if wants is None:
        return _flex(ordered, width - used)
    widths = {c.key: c.width for c in ordered}
    spare = width - used

    def grow(spare: int) -> int:
        """Widen the ids still cut a cell at a time, the narrowest first, while room is left."""
        while spare > 0:
            short = [
                key
                for key in SIZED[:-1]
                if key in widths and widths[key] < min(wants.get(key, 0), _SIZED_CAP[key])
            ]
            if not short:
                break
            widths[min(short, key=lambda k: widths[k])] += 1
            spare -= 1
        return spare

    spare = grow(spare)
    cut = any(
        key in widths and widths[key] < min(wants.get(key, 0), _SIZED_CAP[key])
        for key in SIZED[:-1]
    )
    if cut and "reason" in widths and not wants.get("reason"):
        spare += widths.pop("reason") + GAP
        ordered = [c for c in ordered if c.key != "reason"]
        spare = grow(spare)
    if spare > 0:
        last = "reason" if "reason" in widths else ordered[-1].key if ordered else None
        if last is not None:
            widths[last] += spare
    return [(c, widths[c.key]) for c in ordered]


def _flex(ordered: list[Column], spare: int) -> list[tuple[Column, int]]:
    """Spare width shared by the flex columns in proportion, each up to its cap."""
    widths = {c.key: c.width for c in ordered}
    flexible = [c for c in ordered if c.flex]
    while spare > 0 and flexible:
        total = sum(c.flex for c in flexible)
        given = 0
        for column in list(flexible):
            share = max(1, spare * column.flex // total)
            room = _FLEX_CAP.get(column.key, 200) - widths[column.key]
            add = min(share, room, spare - given)
            widths[column.key] += add
            given += add
            if widths[column.key] >= _FLEX_CAP.get(column.key, 200):
                flexible.remove(column)
            if given >= spare:
                break
        if given == 0:
            break
        spare -= given
    return [(c, widths[c.key]) for c in ordered]


def measure(rows: Iterable[LogRow], widest: dict[str, int]) -> bool:
    """Raise ``widest`` to the longest text of each ``SIZED`` column in ``rows``; whether any
    grew."""
    grew = False
    for row in rows:
        for key in SIZED:
            n = len(cell_text(row, key))
            if n > widest.get(key, 0):
                widest[key] = n
                grew = True
    return grew


BODY_DIFFERS_MARK = "≠"


def verdict_label(verdict: str, reason: str) -> str:
    """A word for the verdict, never a colour alone: ``✓ verified`` or ``✗ bad signature``."""
    if verdict == VERIFIED:
        return f"{VERIFIED_MARK} verified"
    return f"{REJECTED_MARK} {SHORT_REASONS.get(reason, one_line(reason))}"


def is_check(row: LogRow) -> bool:
    """A request "Check my app" sent to the user's app, not a delivery a sender posted."""
    return is_check_note(row.note)


def check_label(note: str) -> str:
    """The verdict cell of a check's request: its outcome, ``⚑ check pass``."""
    return f"{CHECK_MARK} {note.partition(':')[0]}"


def acknowledged(row: LogRow) -> bool:
    return 200 <= row.status < 300


def cell_text(row: LogRow, key: str) -> str:
    """The plain text of one cell (already escaped; clipping is left to the caller)."""
    if key == "time":
        return format_ms(row.received_at_ms, time_only=True)
    if key == "topic":
        # Known topics without "pass." (the column is narrow); anything else as ``listen`` says it.
        return short_topic(row.topic) if row.topic in TOPICS else one_line(topic_label(row.topic))
    if key == "pass":
        return one_line(row.pass_id)
    if key == "verdict":
        if row.note is not None and is_check_note(row.note):
            return check_label(row.note)  # what the check made of the app's answer
        return verdict_label(row.verdict, row.reason)
    if key == "attempt":  # ≠: same webhook-id as an earlier attempt, another body or topic
        return f"#{row.attempt_no}{BODY_DIFFERS_MARK if row.body_differs else ''}"
    if key == "endpoint":
        return one_line(row.endpoint_id)
    if key == "status":
        return str(row.status)
    if key == "webhook":
        return one_line(row.webhook_id, missing="(no webhook-id)")
    if key == "reason":
        if row.note and is_check_note(row.note):
            return one_line(row.note.partition(":")[2].strip())  # the case and the answer
        if row.note:
            return one_line(row.note)
        return "" if row.verdict == VERIFIED else one_line(row.reason)
    raise KeyError(key)


def fit(text: str, width: int, *, right: bool = False) -> str:
    """``text`` clipped and padded to exactly ``width`` cells (the log's text is single-width)."""
    text = clip(text, width)
    return text.rjust(width) if right else text.ljust(width)
