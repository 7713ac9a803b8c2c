"""What the queries return: typed, frozen, and each with its one JSON shape."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from walletpass_tui.schemas.drift import DRIFT_AFTER
from walletpass_tui.schemas.model import Finding, GroupKey, GroupSchema, PathStats, type_order
from walletpass_tui.text import format_ms


def _time(ms: int) -> str | None:
    return format_ms(ms) if ms else None


@dataclass(frozen=True)
class GroupSummary:
    """One line of the list of groups."""

    group: GroupKey
    samples: int
    paths: int  # field paths (the body itself, ``$``, aside)
    drift: int  # findings recorded
    last_seen_ms: int
    not_json: int = 0  # verified bodies that were not JSON (nothing learned from them)
    untracked: int = 0  # paths beyond the bounds, counted (see untracked_more)
    untracked_more: bool = False  # ... and more than that
    skipped: int = 0  # verified deliveries the learner could not take (logged with why)

    @property
    def label(self) -> str:
        return self.group.label

    @property
    def learning(self) -> str | None:
        """``learning, 5 of 20`` while drift is not looked for yet (None once it is)."""
        if self.samples >= DRIFT_AFTER:
            return None
        return f"learning, {self.samples} of {DRIFT_AFTER}"

    def to_json(self) -> dict[str, Any]:
        return {
            "group": "templates" if self.group.templates else "topic",
            "topic": self.group.topic,
            "label": self.label,
            "samples": self.samples,
            "paths": self.paths,
            "drift": self.drift,
            "last_seen": _time(self.last_seen_ms),
            "not_json": self.not_json,
            "paths_not_tracked": self.untracked,
            "paths_not_tracked_more": self.untracked_more,
            "skipped": self.skipped,
            "learning": self.samples < DRIFT_AFTER,
            "drift_after": DRIFT_AFTER,
        }


@dataclass(frozen=True)
class FieldInfo:
    """One path of a group's field tree."""

    path: str
    parent: str | None
    depth: int
    types: dict[str, int]  # JSON type -> values seen, most seen first
    presence: float  # 0..1, among the parent objects (or non-empty arrays) that could hold it
    example: str | None  # the first value seen, cut to 80 characters (None for objects, arrays)
    first_seen_ms: int
    first_webhook_id: str | None
    last_seen_ms: int
    last_webhook_id: str | None
    open: bool  # some children not learned (deeper than 64, beyond 2,000 paths, a long key)
    # Its value set, most seen first: (the value, how many times), once it has taken at most 12
    # distinct values over at least 50 (None: not a small set, or not yet).
    values: tuple[tuple[Any, int], ...] | None = None

    @property
    def values_total(self) -> int:
        return sum(n for _, n in self.values or ())

    def shares(self) -> list[tuple[str, float]]:
        """Its value set as (the value's JSON text, its share of the values), most seen first;
        empty when it has none. The texts come from the wire: escape them before showing."""
        total = self.values_total
        return [(json.dumps(v, ensure_ascii=False), n / total) for v, n in self.values or ()]

    @classmethod
    def of(cls, group: GroupSchema, stats: PathStats) -> FieldInfo:
        found = stats.value_set()
        return cls(
            stats.path,
            stats.parent,
            stats.depth,
            {t: stats.types[t] for t in type_order(stats.types)},
            group.presence(stats),
            stats.example,
            stats.first_seen_ms,
            stats.first_webhook_id,
            stats.last_seen_ms,
            stats.last_webhook_id,
            stats.open,
            None if found is None else tuple((key[1], n) for key, n in found),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "parent": self.parent,
            "depth": self.depth,
            "types": dict(self.types),
            "presence": round(self.presence, 4),
            "example": self.example,
            "first_seen": _time(self.first_seen_ms),
            "first_webhook_id": self.first_webhook_id,
            "last_seen": _time(self.last_seen_ms),
            "last_webhook_id": self.last_webhook_id,
            "open": self.open,
            "values": None
            if self.values is None
            else [
                {"value": v, "count": n, "share": round(n / self.values_total, 4)}
                for v, n in self.values
            ],
        }


@dataclass(frozen=True)
class DriftRecord:
    """One drift finding: the delivery that showed it first, and how many have shown it."""

    group: GroupKey
    path: str
    kind: str  # field_added, field_missing, type_changed, new_value, warm_up_optional, ..._types
    severity: str  # info | warning | breaking
    was: str | None  # types known before ("string", "string|null"); None for field_added
    now: str | None  # types that arrived; None for field_missing
    attempt_id: int | None
    webhook_id: str | None
    seen_at_ms: int
    count: int
    note: str | None = None  # a warm-up finding's words: what the first samples disagreed on

    @classmethod
    def of(cls, finding: Finding) -> DriftRecord:
        return cls(
            finding.group,
            finding.path,
            finding.kind.value,
            finding.kind.severity,
            finding.was,
            finding.now,
            finding.source.attempt_id,
            finding.source.webhook_id,
            finding.source.seen_at_ms,
            finding.count,
            finding.note,
        )

    def describe(self) -> str:
        """One plain line: ``pass.activated data.serialNumber: string -> integer``. The path and
        the topic come from the wire: escape them (``text.printable``) before showing them."""
        if self.note is not None:
            change = self.note
        elif self.kind == "field_added":
            change = f"added ({self.now})"
        elif self.kind == "field_missing":
            change = f"missing (was {self.was})"
        elif self.kind == "new_value":
            change = f"new value {self.now} (was one of {self.was})"
        else:
            change = f"{self.was} -> {self.now}"
        return f"{self.group.label} {self.path}: {change}"

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": None if self.group.templates else self.group.topic,
            "group": "templates" if self.group.templates else "topic",
            "path": self.path,
            "kind": self.kind,
            "severity": self.severity,
            "was": self.was,
            "now": self.now,
            "attempt_id": self.attempt_id,
            "webhook_id": self.webhook_id,
            "seen_at": _time(self.seen_at_ms),
            "count": self.count,
            "note": self.note,
        }


@dataclass(frozen=True)
class SkippedRecord:
    """A verified delivery the learner could not take: passed, and why."""

    group: GroupKey
    attempt_id: int
    webhook_id: str | None
    seen_at_ms: int
    why: str  # the error it raised, one line (escape it before showing it)

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": None if self.group.templates else self.group.topic,
            "group": "templates" if self.group.templates else "topic",
            "attempt_id": self.attempt_id,
            "webhook_id": self.webhook_id,
            "seen_at": _time(self.seen_at_ms),
            "why": self.why,
        }
