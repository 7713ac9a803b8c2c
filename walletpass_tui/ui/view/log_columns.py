"""The event log's columns: which fit in a given width, and each cell's text (escaped, clipped).

Pure functions, no Textual: the log view and its header line share them, and tests call them.
"""

from __future__ import annotations

from dataclasses import dataclass

from walletpass_tui.api.topics import TOPICS, short_topic, topic_label
from walletpass_tui.text import clip, format_ms, one_line
from walletpass_tui.webhooks.models import VERIFIED, Attempt, LogRow
from walletpass_tui.webhooks.reasons import SHORT_REASONS

GAP = 1
VERIFIED_MARK = "✓"
REJECTED_MARK = "✗"


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


def layout(width: int) -> list[tuple[Column, int]]:
    """The columns that fit in ``width`` cells, in display order, each with its width."""
    chosen: list[Column] = []
    used = 0
    for column in sorted(COLUMNS, key=lambda c: c.priority):
        need = column.width + (GAP if chosen else 0)
        if used + need <= width:
            chosen.append(column)
            used += need
    ordered = [c for c in COLUMNS if c in chosen]
    widths = {c.key: c.width for c in ordered}
    spare = width - used
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


BODY_DIFFERS_MARK = "≠"


def row_from_attempt(attempt: Attempt) -> LogRow:
    """The log line of a freshly stored attempt (its body and headers left behind)."""
    return LogRow(
        id=attempt.id,
        received_at_ms=attempt.received_at_ms,
        webhook_id=attempt.webhook_id,
        topic=attempt.topic,
        pass_id=attempt.pass_id,
        verdict=attempt.verdict,
        reason=attempt.reason,
        attempt_no=attempt.attempt_no,
        endpoint_id=attempt.endpoint_id,
        status=attempt.status,
        note=attempt.note,
        body_differs=attempt.body_differs,
    )


def verdict_label(verdict: str, reason: str) -> str:
    """A word for the verdict, never a colour alone: ``✓ verified`` or ``✗ bad signature``."""
    if verdict == VERIFIED:
        return f"{VERIFIED_MARK} verified"
    return f"{REJECTED_MARK} {SHORT_REASONS.get(reason, one_line(reason))}"


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
        if row.note:
            return one_line(row.note)
        return "" if row.verdict == VERIFIED else one_line(row.reason)
    raise KeyError(key)


def fit(text: str, width: int, *, right: bool = False) -> str:
    """``text`` clipped and padded to exactly ``width`` cells (the log's text is single-width)."""
    text = clip(text, width)
    return text.rjust(width) if right else text.ljust(width)
