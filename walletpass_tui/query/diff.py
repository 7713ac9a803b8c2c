"""What differs between two stored attempts: the body's paths added, removed and changed (read as
field queries read a body, values as written), and the headers that differ.

Pure: two ``Attempt`` in, a ``Diff`` out, with its one JSON shape (``events diff --json``). The
values and header text come from the network: whoever shows them escapes them (``text.printable``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from walletpass_tui.query.values import MAX_VALUES, WrittenFields, written_fields
from walletpass_tui.schemas.paths import MAX_DEPTH, MAX_KEY_CHARS
from walletpass_tui.text import format_ms, format_size, printable
from walletpass_tui.webhooks.models import Attempt


@dataclass(frozen=True)
class Change:
    """One path or header: its values in A (``was``) and in B (``now``); empty: not there."""

    name: str
    was: tuple[str, ...]
    now: tuple[str, ...]

    @property
    def kind(self) -> str:
        if not self.was:
            return "added"
        if not self.now:
            return "removed"
        return "changed"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "was": list(self.was), "now": list(self.now)}


@dataclass(frozen=True)
class Side:
    """Which attempt one side is."""

    id: int
    webhook_id: str | None
    attempt: int
    received_at_ms: int
    verdict: str
    body_size: int
    json: bool

    @classmethod
    def of(cls, attempt: Attempt, is_json: bool) -> Side:
        return cls(
            attempt.id,
            attempt.webhook_id,
            attempt.attempt_no,
            attempt.received_at_ms,
            attempt.verdict,
            attempt.body_size or len(attempt.body),
            is_json,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "webhook_id": self.webhook_id,
            "attempt": self.attempt,
            "received_at": format_ms(self.received_at_ms),
            "verdict": self.verdict,
            "body_size": self.body_size,
            "json": self.json,
        }


@dataclass(frozen=True)
class Diff:
    a: Side
    b: Side
    same_body: bool  # byte for byte
    body: tuple[Change, ...] = field(default_factory=tuple)  # paths, in A's order then B's
    headers: tuple[Change, ...] = field(default_factory=tuple)  # names in lower case
    # Every value of both bodies was read (none past the depth, key length or count bounds).
    read_whole: bool = True

    @property
    def same_fields(self) -> bool:
        return not self.body

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "body": {"same": self.same_body, "changes": [c.to_json() for c in self.body]},
            "headers": [c.to_json() for c in self.headers],
        }


def _changes(a: dict[str, list[str]], b: dict[str, list[str]]) -> tuple[Change, ...]:
    out: list[Change] = []
    for name in [*a, *(n for n in b if n not in a)]:
        was, now = tuple(a.get(name, ())), tuple(b.get(name, ()))
        if was != now:
            out.append(Change(name, was, now))
    return tuple(out)


def _headers(attempt: Attempt) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, value in attempt.headers:
        found.setdefault(name.lower(), []).append(value)
    return found


def diff(a: Attempt, b: Attempt) -> Diff:
    """What changed from ``a`` to ``b``."""
    fields_a, fields_b = written_fields(a.body), written_fields(b.body)
    read_whole = True
    if fields_a is not None and fields_b is not None:
        body = _changes(fields_a.values, fields_b.values)
        read_whole = fields_a.whole and fields_b.whole
    elif a.body == b.body:
        body = ()
    else:  # not JSON on one side at least: the body as a whole
        body = (Change("$", (_whole(a.body, fields_a),), (_whole(b.body, fields_b),)),)
    return Diff(
        Side.of(a, fields_a is not None),
        Side.of(b, fields_b is not None),
        a.body == b.body,
        body,
        _changes(_headers(a), _headers(b)),
        read_whole,
    )


def _whole(body: bytes, fields: WrittenFields | None) -> str:
    """A body that is not JSON, as one value: its text (JSON-quoted) or its size."""
    if fields is not None:
        return "(JSON)"
    try:
        return json.dumps(body.decode("utf-8"), ensure_ascii=False)
    except UnicodeDecodeError:  # said as its size instead
        return f"({len(body):,} bytes, not UTF-8)"


def partner_of(attempt: Attempt, earlier: list[Attempt]) -> Attempt | None:
    """What ``attempt`` is compared with by default: for a redelivery its first attempt
    (``earlier`` holds the message's attempts), else None."""
    if attempt.attempt_no > 1:
        first = [e for e in earlier if e.webhook_id == attempt.webhook_id and e.attempt_no == 1]
        if first:
            return first[0]
    return None


# -- as lines ---------------------------------------------------------------------------------

SHOWN_CHARS = 80  # of a value or a header, on a line
# Two JSON bodies whose bytes differ and whose values, as written, do not: what else can differ.
SAME_VALUES = (
    "the same values as written (the bytes differ only in spacing, key order, "
    "string escapes or a key given twice)"
)
SAME_AS_READ = (
    "the same values as far as they are read (the bytes differ; values nested deeper than "
    f"{MAX_DEPTH} levels, under keys longer than {MAX_KEY_CHARS} characters or past the "
    f"first {MAX_VALUES:,} are not compared)"
)


def _side(mark: str, side: Side) -> str:
    return (
        f"{mark} {printable(side.webhook_id or '-', 60)} #{side.attempt}  "
        f"{format_ms(side.received_at_ms)}  {side.verdict}  {format_size(side.body_size)}"
    )


def _values(values: tuple[str, ...]) -> str:
    return printable(", ".join(values), SHOWN_CHARS)


def change_line(change: Change) -> str:
    name = printable(change.name, SHOWN_CHARS)
    if change.kind == "added":
        return f"  + {name}: {_values(change.now)}"
    if change.kind == "removed":
        return f"  - {name}: {_values(change.was)}"
    return f"  ~ {name}: {_values(change.was)} -> {_values(change.now)}"


def diff_lines(found: Diff) -> list[tuple[str, str]]:
    """The diff as plain lines, each with its kind (``a``, ``b``, ``title``, ``added``,
    ``removed``, ``changed``, ``same``) for a screen to colour; every value from the wire is
    escaped."""
    lines = [("a", _side("---", found.a)), ("b", _side("+++", found.b))]
    if found.same_body:
        lines.append(("same", "body: the same bytes"))
    elif not found.body and found.read_whole:
        lines.append(("same", f"body: {SAME_VALUES}"))
    elif not found.body:
        lines.append(("same", f"body: {SAME_AS_READ}"))
    else:
        lines.append(("title", "body:"))
        lines.extend((c.kind, change_line(c)) for c in found.body)
    if found.headers:
        lines.append(("title", "headers:"))
        lines.extend((c.kind, change_line(c)) for c in found.headers)
    else:
        lines.append(("same", "headers: the same"))
    return lines
