"""What the dashboard shows of the learned payload schemas, without Textual: which deliveries
brought drift (the log's mark, the header's count), and the Schema screen's data read in one go
off the event loop.

The text here is plain and escaped (``text.printable``); the screens style it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.model import GroupKey
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.schemas.records import DriftRecord, FieldInfo, GroupSummary
from walletpass_tui.text import printable
from walletpass_tui.ui.view.drift_text import SEVERITY_RANK, change_text
from walletpass_tui.ui.view.log_columns import DRIFT_MARK

__all__ = [
    "DRIFT_MARK",
    "DriftMarks",
    "SchemaData",
    "change_text",
    "read_marks",
    "read_schema",
]

BAR_CELLS = 5
BAR_FULL = "▇"
BAR_EMPTY = "░"
# Deliveries with drift read at start (the drift table holds one row per path and kind, so it
# stays small; this only bounds a file made elsewhere).
MARKS_LIMIT = 100_000
FINDINGS_LIMIT = 500  # drift findings listed on the Schema screen (newest first)


class DriftMarks:
    """Which deliveries showed drift first (their row ids) and how many findings there are:
    read once from the schema file, then kept up to date from the runtime's drift events."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled  # False: no learner runs (--no-schemas)
        self.attempts: set[int] = set()
        self.findings: int | None = None  # None: not read yet
        self.version = 0

    def __contains__(self, attempt_id: object) -> bool:
        return attempt_id in self.attempts

    def add(self, attempt_id: int, records: Sequence[DriftRecord]) -> bool:
        """A drift event: whether it changed anything."""
        if not records:
            return False
        self.attempts.add(attempt_id)
        self.findings = (self.findings or 0) + len(records)
        self.version += 1
        return True

    def add_findings(self, count: int) -> None:
        """Findings with no delivery (the templates' drift)."""
        if count:
            self.findings = (self.findings or 0) + count
            self.version += 1

    def reset(self, attempts: Iterable[int], findings: int) -> set[int]:
        """What the schema file says; returns the ids whose mark changed."""
        new = set(attempts)
        changed = new ^ self.attempts
        self.attempts = new
        if findings != self.findings or changed:
            self.findings = findings
            self.version += 1
        return changed


def read_marks(
    reader: SchemaReader, unless: tuple[int, ...] | None = None
) -> tuple[tuple[int, ...], tuple[list[int], int] | None]:
    """The file's drift state (``SchemaReader.drift_state``), then the deliveries with drift
    and the number of findings, or None when the state reads as ``unless`` (nothing changed
    since it was read). Blocking: run it in a thread."""
    state = reader.drift_state()
    if state == unless:
        return state, None
    findings = sum(g.drift for g in reader.groups())
    return state, (reader.attempts_with_drift(limit=MARKS_LIMIT), findings)


# -- the Schema screen's data ---------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaData:
    """One reading of the schema file for the Schema screen."""

    groups: list[GroupSummary] = field(default_factory=list)
    selected: GroupKey | None = None
    fields: list[FieldInfo] = field(default_factory=list)
    drift: list[DriftRecord] = field(default_factory=list)  # the selected group's, newest first
    problem: str | None = None  # the file could not be read: why


def read_schema(reader: SchemaReader, wanted: GroupKey | None) -> SchemaData:
    """The groups, and the field tree and findings of ``wanted`` (else of the topic seen last);
    blocking: run it in a thread. A file that cannot be read is said, not raised."""
    try:
        # The topics, the most recently seen first, then the pass templates.
        groups = sorted(reader.groups(), key=lambda g: g.group.templates)
        selected = wanted if wanted is not None else groups[0].group if groups else None
        if selected is None or not any(g.group == selected for g in groups):
            return SchemaData(groups, selected)  # nothing learned (for it) yet
        return SchemaData(
            groups,
            selected,
            reader.fields(selected),
            reader.drift(selected, limit=FINDINGS_LIMIT),
        )
    except SchemaError as exc:  # shown in the schema view
        return SchemaData(problem=str(exc))


def presence_bar(share: float, cells: int = BAR_CELLS) -> str:
    """``▇▇▇▇░`` for 80%: a cell per ``1/cells``, rounded down, a full bar only at 100%."""
    share = min(max(share, 0.0), 1.0)
    full = cells if share >= 0.995 else min(cells - 1, int(share * cells + 1e-9))
    return BAR_FULL * full + BAR_EMPTY * (cells - full)


def presence_text(share: float) -> str:
    """``100%``, ``80%``, ``66.7%`` (as ``schema show`` says it)."""
    percent = share * 100
    return f"{percent:.0f}%" if percent in (0, 100) or percent >= 99.5 else f"{percent:.1f}%"


def values_text(info: FieldInfo, width: int = 48) -> str:
    """``"apple" 55% · "google" 45%``: a value set with each value's share (escaped), cut to
    ``width``; empty when the path has none."""
    parts = [f"{printable(text, 24)} {presence_text(share)}" for text, share in info.shares()]
    joined = " · ".join(parts)
    return joined if len(joined) <= width else joined[: width - 1] + "…"


def types_text(info: FieldInfo) -> str:
    """``string(22) integer(2)``."""
    return " ".join(f"{kind}({count})" for kind, count in info.types.items())


def worst_by_path(records: Iterable[DriftRecord]) -> dict[str, DriftRecord]:
    """Each path's most severe finding (the newest of equals)."""
    out: dict[str, DriftRecord] = {}
    for record in records:  # newest first
        known = out.get(record.path)
        if known is None or SEVERITY_RANK.get(record.severity, 0) > SEVERITY_RANK.get(
            known.severity, 0
        ):
            out[record.path] = record
    return out
