"""The detail pane's text parts: summary, attempts line, headers and forwards.

Everything shown comes from the network or the store and is escaped here (``one_line``,
``visible``); styles come from the pane's component classes through ``s``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text

from walletpass_tui.api.topics import topic_label
from walletpass_tui.text import body_text, format_gap, format_ms, format_size, one_line, visible
from walletpass_tui.ui.panes.delivery_data import DeliveryData
from walletpass_tui.ui.view.drift_text import SEVERITY_RANK, change_text
from walletpass_tui.ui.view.log_columns import DRIFT_MARK, REJECTED_MARK, VERIFIED_MARK
from walletpass_tui.webhooks.models import CHECK_COPY, PENDING, Attempt, ForwardRow, is_check_note
from walletpass_tui.webhooks.reasons import SHORT_REASONS

if TYPE_CHECKING:
    from walletpass_tui.schemas.records import DriftRecord

__all__ = [
    "ANSWER_PREVIEW",
    "StyleOf",
    "attempts_text",
    "forwards_text",
    "headers_text",
    "summary_text",
]

ANSWER_PREVIEW = 200  # characters of the app's answer shown per forward

StyleOf = Callable[[str], Style]  # a part's style by name ("id", "dim", "ack-ok", ...)


def summary_text(a: Attempt, s: StyleOf) -> Text:
    """Who sent it, the verdict and answer, then when, topic, pass, origin and size."""
    text = Text()
    text.append(one_line(a.webhook_id, missing="(no webhook-id header)"), s("id"))
    text.append("  ")
    if a.verified:
        text.append(f"{VERIFIED_MARK} verified", s("verified"))
        if a.endpoint_id:
            text.append(" with ")
            text.append(one_line(a.endpoint_id), s("id"))
    else:
        text.append(f"{REJECTED_MARK} rejected: {one_line(a.reason)}", s("rejected"))
        if a.detail:
            text.append(f" ({one_line(a.detail)})", s("rejected"))
    ack = "ack-ok" if 200 <= a.status < 300 else "ack-failed"
    text.append(" · answered ", s("label"))
    text.append(str(a.status), s(ack))
    text.append(f" in {a.processing_ms:.1f} ms", s("dim"))
    if a.note:
        text.append(f" · {one_line(a.note)}", s("note"))
    if a.body_differs:
        text.append(" · ≠ body differs from the first attempt of this webhook-id", s("rejected"))
    text.append("\n")
    text.append("received ", s("label"))
    text.append(format_ms(a.received_at_ms))
    text.append("  topic ", s("label"))
    # topic_label says "topic unknown" when the body named none: "topic" is the label here.
    text.append(one_line(topic_label(a.topic)) if a.topic else "unknown")
    text.append("  pass ", s("label"))
    text.append(one_line(a.pass_id))
    if is_check_note(a.note):
        text.append("  sent by ", s("label"))
        to = "this receiver" if (a.note or "").startswith(CHECK_COPY) else "your app"
        text.append(f"Check my app, to {to} (not a delivery)", s("note"))
    else:
        text.append("  from ", s("label"))
        text.append(one_line(a.remote_addr))
    if a.forwarded_for:
        text.append(f" (X-Forwarded-For {one_line(a.forwarded_for, 60)})", s("dim"))
    if a.relay_url:
        text.append(f"  via relay {one_line(a.relay_url, 80)} #{a.relay_cursor}", s("note"))
    text.append("  ")
    text.append(f"{a.method} {one_line(a.path, 80)}", s("dim"))
    size = a.body_size if a.body_size is not None else len(a.body)
    text.append(f"  body {format_size(size)}", s("dim"))
    if a.body_truncated:
        text.append(f" (first {format_size(len(a.body))} kept)", s("note"))
    return text


def attempts_text(data: DeliveryData, width: int, s: StyleOf) -> Text:
    """Every attempt with the gap since the one before (the retry schedule at a glance),
    wrapped between attempts, never inside one."""
    width = max(20, width or 80)
    n = len(data.attempts)
    text = Text()
    text.append(f"{n} attempt{'s' if n != 1 else ''}", s("label"))
    used = text.cell_len
    previous: Attempt | None = None
    for a in data.attempts:
        chunk = Text()
        chunk.append(f"#{a.attempt_no} ")
        if previous is None:
            chunk.append(format_ms(a.received_at_ms, time_only=True))
        else:
            chunk.append("+" + format_gap(a.received_at_ms - previous.received_at_ms))
        ok = a.verified and 200 <= a.status < 300
        chunk.append(" → ")
        chunk.append(str(a.status), s("ack-ok" if ok else "ack-failed"))
        if not a.verified:
            chunk.append(
                f" {REJECTED_MARK} {SHORT_REASONS.get(a.reason, 'rejected')}",
                s("rejected"),
            )
        if a.note and a.note.startswith("injected"):
            chunk.append(" (injected)", s("dim"))
        if a.body_differs:
            chunk.append(" ≠ body", s("rejected"))
        if a.id == data.attempt.id and n > 1:
            chunk.stylize(s("current"))
        if used + 2 + chunk.cell_len > width:
            text.append("\n")
            used = 0
        else:
            text.append("  ")
            used += 2
        text.append_text(chunk)
        used += chunk.cell_len
        previous = a
    return text


def headers_text(a: Attempt, s: StyleOf) -> Text:
    text = Text()
    width = max((len(k) for k, _ in a.headers), default=0)
    for index, (name, value) in enumerate(a.headers):
        if index:
            text.append("\n")
        text.append(one_line(name, 60).ljust(min(width, 60)), s("header-name"))
        text.append("  ")
        text.append(visible(value))
    return text or Text("(no headers)")


def forwards_text(forwards: tuple[ForwardRow, ...], s: StyleOf) -> Text:
    if not forwards:
        return Text(
            "No forwards or replays of this message.\n\n"
            "When it is forwarded to a local app or replayed, every try is listed here with "
            "the target's answer.",
            s("dim"),
        )
    text = Text()
    for index, f in enumerate(forwards):
        if index:
            text.append("\n")
        when = f.finished_at_ms or f.created_at_ms
        text.append(f"{format_ms(when, time_only=True)}  ", s("dim"))
        text.append(f"{f.kind} ({f.mode}) ", s("label"))
        text.append(one_line(f.target, 80))
        text.append(f"  {f.state}", s("dim"))
        if f.status is not None:
            ok = 200 <= f.status < 300
            text.append(f" {f.status}", s("ack-ok" if ok else "ack-failed"))
        if f.latency_ms is not None:
            text.append(f" in {f.latency_ms:.0f} ms", s("dim"))
        if f.tries > 1:
            text.append(f", {f.tries} tries", s("dim"))
        if f.error:
            text.append(f"  {one_line(f.error, 80)}", s("note"))
        if f.state == PENDING:
            text.append(
                f"\n              waiting for the app; next try {format_ms(f.next_try_at_ms, time_only=True)}",
                s("note"),
            )
        if f.note:
            text.append(f"\n              {one_line(f.note, 100)}", s("dim"))
        if f.response_body:
            answer, _ = body_text(f.response_body, ANSWER_PREVIEW)
            text.append("\n              answer: ", s("label"))
            text.append(one_line(answer, ANSWER_PREVIEW))
    return text


def drift_text(records: Sequence[DriftRecord], s: StyleOf) -> Text:
    """The payload drift the delivery showed first, one finding a line, the most severe first:
    ``Δ breaking  data.serialNumber: string -> integer (type_changed)``."""
    text = Text()
    ordered = sorted(records, key=lambda r: -SEVERITY_RANK.get(r.severity, -1))
    for index, record in enumerate(ordered):
        if index:
            text.append("\n")
        text.append(f"{DRIFT_MARK} {record.severity:<8} ", s(record.severity))
        text.append(one_line(record.path, 80))
        text.append(": ")
        text.append(one_line(change_text(record), 60), s(record.severity))
        text.append(f"  {record.kind} in {one_line(record.group.label, 40)}", s("dim"))
    return text
