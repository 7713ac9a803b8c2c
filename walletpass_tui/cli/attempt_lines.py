"""How one attempt is printed as it arrives: a line for people, a JSON object for programs.

``listen`` prints each attempt it receives this way and ``events tail`` each one another process
stored, so the two read the same. Light on purpose (``events tail`` starts from it): nothing
heavier than the standard library and the text helpers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from walletpass_tui.api.topics import topic_label
from walletpass_tui.text import format_ms, printable
from walletpass_tui.webhooks.export import attempt_json  # the one JSON shape of an attempt
from walletpass_tui.webhooks.models import Attempt

if TYPE_CHECKING:  # the schemas package is loaded by what learns, never by events tail
    from walletpass_tui.schemas.records import DriftRecord

__all__ = ["attempt_line", "attempt_text", "body_differs", "drift_line", "reason_beyond"]


def body_differs(a: Attempt) -> bool:
    """The body (or topic) differs from an earlier attempt with the same webhook-id."""
    return bool(getattr(a, "body_differs", False))


def reason_beyond(verdict: str, reason: str) -> str:
    """``reason``, or nothing when it only repeats ``verdict`` (``verified  verified``)."""
    return "" if reason.strip().lower() == verdict.lower() else reason


def attempt_line(a: Attempt) -> str:
    verdict = "verified" if a.verified else "REJECTED"
    reason = reason_beyond(verdict, a.reason)
    if a.detail:
        reason = f"{reason} ({a.detail})" if reason else f"({a.detail})"
    if a.note:
        reason += f" [{a.note}]"
    if body_differs(a):
        reason += " [body differs from an earlier attempt with this webhook-id]"
    return "  ".join(
        (
            _time_of_day(a.received_at_ms),
            printable(a.webhook_id or "-", 40).ljust(30),
            topic_label(a.topic).ljust(18),
            f"#{a.attempt_no}",
            verdict,
            str(a.status),
            printable(reason.strip(), 120),
        )
    ).rstrip()


def attempt_text(a: Attempt, *, as_json: bool) -> str:
    """The attempt as ``listen`` prints it: :func:`attempt_line`, or its JSON on one line."""
    return json.dumps(attempt_json(a)) if as_json else attempt_line(a)


def drift_line(record: DriftRecord) -> str:
    """One finding, as ``listen`` prints it after its delivery's line:
    ``drift pass.activated data.serialNumber: string -> integer  [msg_2KWP...]``. The topic, the
    path and the webhook-id come from the wire: escaped."""
    line = "drift " + printable(record.describe(), 300)
    if record.webhook_id:
        line += f"  [{printable(record.webhook_id, 40)}]"
    return line


_second: list[Any] = [None, ""]  # the last whole second formatted, and its "HH:MM:SS."


def _time_of_day(ms: int) -> str:
    """``format_ms(ms, time_only=True)``, the second's part formatted once per second (a line is
    printed for every delivery, on the event loop that answers them)."""
    second, milli = divmod(ms, 1000)
    if second != _second[0]:
        _second[0], _second[1] = second, format_ms(second * 1000, time_only=True)[:-3]
    return f"{_second[1]}{milli:03d}"
