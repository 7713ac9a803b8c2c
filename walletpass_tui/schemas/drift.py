"""Pure drift detection: one sample's observation against what its group learned before it.

Once a group has DRIFT_AFTER samples, a sample that

* brings a path never seen before (under a parent already seen as such) is ``field_added``;
* lacks a path that every earlier parent object (or non-empty array) held is ``field_missing``;
* carries a type never seen at a known path is ``type_changed`` (an integer where numbers were
  seen is not: JSON has one number type), one finding for each new type.

A finding is reported once per path, kind and new type: later samples that show it again only
add to its count; a second, different type arriving at the same path is a finding of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from walletpass_tui.schemas.jsonscan import TYPES
from walletpass_tui.schemas.learn import Observation
from walletpass_tui.schemas.model import (
    Finding,
    FindingKey,
    GroupSchema,
    Kind,
    Source,
    is_new_type,
    types_text,
)
from walletpass_tui.schemas.paths import Segment

DRIFT_AFTER = 20  # samples a group needs before a new sample can drift from it


@dataclass(frozen=True)
class Change:
    path: str
    kind: Kind
    was: str | None
    now: str | None
    baseline: tuple[str, ...]
    variant: str = ""  # the new type of a type_changed


def _held(obs: Observation, path: str, segment: Segment, parent: str | None) -> tuple[int, int]:
    """(parents in the sample that could hold ``path``, how many did)."""
    if parent is None:
        return 1, 1
    container = obs.paths.get(parent)
    if container is None:
        return 0, 0
    could = container.arrays if segment is Segment.ITEM else container.objects
    found = obs.paths.get(path)
    return could, (found.holders if found is not None else 0)


def detect(group: GroupSchema, obs: Observation) -> list[Change]:
    """What ``obs`` changes in ``group`` (nothing before DRIFT_AFTER samples)."""
    if group.samples < DRIFT_AFTER:
        return []
    changes: list[Change] = []
    known = group.paths
    for seen in obs.paths.values():
        stats = known.get(seen.path)
        if stats is None:
            if seen.segment is Segment.MAP or seen.parent is None:
                continue  # a map's keys come and go
            parent = known.get(seen.parent)
            held_before = parent is not None and (
                parent.arrays if seen.segment is Segment.ITEM else parent.objects
            )
            if held_before:  # else its parent is new too, or changed type: reported there
                now = types_text(seen.types)
                changes.append(Change(seen.path, Kind.FIELD_ADDED, None, now, ()))
            continue
        if seen.types.keys() <= stats.types.keys():
            continue  # the common case: no type it had not
        new = [t for t in seen.types if is_new_type(t, stats.types)]
        if new:
            was = types_text(stats.types)
            baseline = tuple(stats.types)
            for kind in sorted(new, key=TYPES.index):
                change = Change(seen.path, Kind.TYPE_CHANGED, was, kind, baseline, kind)
                changes.append(change)
    missing = False
    for stats in group.always_present_paths():
        could, held = _held(obs, stats.path, stats.segment, stats.parent)
        if held < could:
            missing = True
            was = types_text(stats.types)
            changes.append(Change(stats.path, Kind.FIELD_MISSING, was, None, tuple(stats.types)))
    if missing:
        group.always = None  # those paths are present in every sample no more
    return changes


def _shows_again(finding: Finding, group: GroupSchema, obs: Observation) -> bool:
    """Whether the sample shows an earlier finding again (relative to what was known then)."""
    seen = obs.paths.get(finding.path)
    if finding.kind is Kind.FIELD_ADDED:
        return seen is not None
    if finding.kind is Kind.TYPE_CHANGED:
        return seen is not None and finding.variant in seen.types
    stats = group.paths.get(finding.path)  # FIELD_MISSING: was its parent there without it?
    if stats is None:
        return False
    could, held = _held(obs, stats.path, stats.segment, stats.parent)
    return held < could


def record(
    group: GroupSchema,
    changes: list[Change],
    obs: Observation,
    source: Source,
    shown: list[Finding] | None = None,
) -> list[Finding]:
    """Count ``changes`` and the findings ``obs`` shows again; returns the new ones. ``shown``,
    when given, receives every finding the sample showed (new or again)."""
    new: list[Finding] = []
    touched: set[FindingKey] = set()
    for change in changes:
        key = (change.path, change.kind, change.variant)
        touched.add(key)
        finding = group.findings.get(key)
        if finding is None:
            finding = Finding(
                group.key,
                change.path,
                change.kind,
                change.was,
                change.now,
                change.baseline,
                source,
                last_seen_ms=source.seen_at_ms,
                variant=change.variant,
            )
            group.findings[key] = finding
            new.append(finding)
        else:
            finding.count += 1
            finding.last_seen_ms = source.seen_at_ms
        group.dirty_findings.append(finding)
        if shown is not None:
            shown.append(finding)
    for key, finding in group.findings.items():
        if key not in touched and _shows_again(finding, group, obs):
            finding.count += 1
            finding.last_seen_ms = source.seen_at_ms
            group.dirty_findings.append(finding)
            if shown is not None:
                shown.append(finding)
    return new


def shown_again(group: GroupSchema, shown: list[Finding], source: Source, times: int = 1) -> None:
    """Count the findings ``times`` samples of a shape already learned show again (``shown``:
    what the last sample of that shape showed; see ``GroupSchema.repeat``)."""
    for finding in shown:
        finding.count += times
        finding.last_seen_ms = source.seen_at_ms
        group.dirty_findings.append(finding)
