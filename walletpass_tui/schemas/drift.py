"""Pure drift detection: one sample's observation against what its group learned before it.

Once a group has DRIFT_AFTER samples, a sample that

* brings a path never seen before (under a parent already seen as such) is ``field_added``;
* lacks a path that every earlier parent object (or non-empty array) held is ``field_missing``;
* carries a type never seen at a known path is ``type_changed`` (an integer where numbers were
  seen is not: JSON has one number type), one finding for each new type;
* holds a value outside a path's value set (``PathStats.value_set``: at most 12 values over at
  least 50) is ``new_value``, one finding for each new value.

A finding is reported once per path, kind and new type (or value): later samples that show it
again only add to its count; a second, different type arriving at the same path is a finding of
its own.

The sample that completes the warm-up (the DRIFT_AFTER-th) also reports what the samples before
it already disagreed on: each field missing from some of them (``warm_up_optional``) and each
path that held values of more than one type (``warm_up_types``), at most WARM_UP_REPORTED.
"""

from __future__ import annotations

from dataclasses import dataclass

from walletpass_tui.schemas.jsonscan import INTEGER, NUMBER, TYPES
from walletpass_tui.schemas.model import (
    Finding,
    FindingKey,
    GroupSchema,
    Kind,
    PathStats,
    Source,
    is_new_type,
    type_order,
    types_text,
    value_text,
)
from walletpass_tui.schemas.paths import Segment
from walletpass_tui.schemas.sample import Sample

DRIFT_AFTER = 20  # samples a group needs before a new sample can drift from it
WARM_UP_REPORTED = 50  # what the warm-up samples disagreed on, reported at most


@dataclass(frozen=True)
class Change:
    path: str
    kind: Kind
    was: str | None
    now: str | None
    baseline: tuple[str, ...]
    variant: str = ""  # the new type of a type_changed


def detect(sample: Sample) -> list[Change]:
    """What ``sample`` changes in its group (nothing before DRIFT_AFTER samples): compared with
    what was learned before it (its counts are not added yet)."""
    group = sample.group
    if group.samples < DRIFT_AFTER:
        return []
    changes: list[Change] = []
    known, new = group.paths, sample.new
    for stats in sample.touched:
        if new and stats.path in new:
            if stats.segment is Segment.MAP or stats.parent is None:
                continue  # a map's keys come and go
            parent = known.get(stats.parent)
            held_before = parent is not None and (
                parent.arrays if stats.segment is Segment.ITEM else parent.objects
            )
            if held_before:  # else its parent is new too, or changed type: reported there
                now = types_text(stats.s_types)
                changes.append(Change(stats.path, Kind.FIELD_ADDED, None, now, ()))
            continue
        if stats.s_types.keys() <= stats.types.keys():
            continue  # the common case: no type it had not
        fresh = [t for t in stats.s_types if is_new_type(t, stats.types)]
        if fresh:
            was = types_text(stats.types)
            baseline = tuple(stats.types)
            for kind in sorted(fresh, key=TYPES.index):
                changes.append(Change(stats.path, Kind.TYPE_CHANGED, was, kind, baseline, kind))
    if sample.values:
        changes += _new_values(sample)
    missing = False
    mark = sample.mark
    for stats in group.always_present_paths():
        parent = stats.up
        if parent is not None and parent.mark != mark:
            continue  # its parent is not in the sample: nothing could hold it
        could, held = sample.held(stats)
        if held < could:
            missing = True
            was = types_text(stats.types)
            changes.append(Change(stats.path, Kind.FIELD_MISSING, was, None, tuple(stats.types)))
    if missing:
        group.always = None  # those paths are present in every sample no more
    return changes


def _new_values(sample: Sample) -> list[Change]:
    """A value outside the value set of its path (one per path and value)."""
    changes: list[Change] = []
    said: set[tuple[str, str]] = set()
    for stats, key in sample.values:
        counted = stats.values
        if counted is None or key is None or key in counted or stats.path in sample.new:
            continue  # no set there, a value no set holds (a number), or one it has
        if key[0] not in stats.types:
            continue  # a value of a new type: that change is the finding (type_changed)
        known = stats.value_set()
        if known is None:
            continue  # not a set yet
        text = value_text(key)
        if (stats.path, text) in said:
            continue
        said.add((stats.path, text))
        was = "|".join(value_text(k) for k, _ in known)
        changes.append(Change(stats.path, Kind.NEW_VALUE, was, text, (), text))
    return changes


def _shows_again(finding: Finding, group: GroupSchema, sample: Sample) -> bool:
    """Whether the sample shows an earlier finding again (relative to what was known then)."""
    stats = group.paths.get(finding.path)
    if stats is None or finding.kind.warm_up:  # said once, when drift began to be looked for
        return False
    if finding.kind is Kind.FIELD_ADDED:
        return sample.showed(stats)
    if finding.kind is Kind.TYPE_CHANGED:
        return sample.showed(stats) and finding.variant in stats.s_types
    if finding.kind is Kind.NEW_VALUE:
        return sample.showed_value(stats, finding.variant)
    could, held = sample.held(stats)  # FIELD_MISSING: was its parent there without it?
    return held < could


def _index(group: GroupSchema) -> dict[str, list[Finding]]:
    """The group's findings by the path a sample must show for it to show one again: the path
    itself, or for a missing one its parent."""
    if group.finding_index is None:
        index: dict[str, list[Finding]] = {}
        for finding in group.findings.values():
            if finding.kind.warm_up:
                continue  # never shown again
            at: str | None = finding.path
            if finding.kind is Kind.FIELD_MISSING:
                stats = group.paths.get(finding.path)
                at = stats.parent if stats is not None else None
            if at is not None:
                index.setdefault(at, []).append(finding)
        group.finding_index = index
    return group.finding_index


def record(
    group: GroupSchema,
    changes: list[Change],
    sample: Sample,
    source: Source,
    shown: list[Finding] | None = None,
) -> list[Finding]:
    """Count ``changes`` and the findings ``sample`` shows again; returns the new ones.
    ``shown``, when given, receives every finding the sample showed (new or again)."""
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
            group.finding_index = None
            new.append(finding)
        else:
            finding.count += 1
            finding.last_seen_ms = source.seen_at_ms
        group.dirty_findings.append(finding)
        if shown is not None:
            shown.append(finding)
    if not group.findings:
        return new
    index = _index(group)
    for stats in sample.touched:
        for finding in index.get(stats.path, ()):
            if finding.key not in touched and _shows_again(finding, group, sample):
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


def take(sample: Sample, source: Source, shown: list[Finding] | None = None) -> list[Finding]:
    """Find the drift ``sample`` shows (against what was learned before it), then add it to what
    is learned; returns the findings it showed first (``shown``, when given, gets every finding
    it showed, new or again)."""
    changes = detect(sample)
    found = record(sample.group, changes, sample, source, shown)
    sample.add(source)
    if sample.group.samples == DRIFT_AFTER:
        found += warm_up(sample.group, source)
    return found


def warm_up(group: GroupSchema, source: Source) -> list[Finding]:
    """What the group's first DRIFT_AFTER samples disagreed on (their last one is ``source``):
    fields some of them lacked, paths that held more than one type."""
    found: list[Finding] = []
    for stats in group.tree():
        if len(found) >= WARM_UP_REPORTED:
            break
        types = [t for t in stats.types if not (t == INTEGER and NUMBER in stats.types)]
        denominator = group.denominator(stats)
        if stats.segment is Segment.KEY and 0 < stats.holders < denominator:
            if _once_a_sample(group, stats):
                note = f"present in {stats.holders} of the first {DRIFT_AFTER} samples"
            else:
                note = (
                    f"present in {stats.holders} of its {denominator} parents in the first "
                    f"{DRIFT_AFTER} samples"
                )
            found.append(_first(group, stats, Kind.WARM_UP_OPTIONAL, note, source))
        if len(types) > 1 and len(found) < WARM_UP_REPORTED:
            counts = ", ".join(f"{t} {stats.types[t]}" for t in type_order(stats.types))
            note = f"{counts} in the first {DRIFT_AFTER} samples"
            found.append(_first(group, stats, Kind.WARM_UP_TYPES, note, source))
    if found:
        group.finding_index = None
    return found


def _once_a_sample(group: GroupSchema, stats: PathStats) -> bool:
    """Whether every sample held the parent of ``stats`` exactly once (a chain of named keys
    up to the body, each in every sample): then its parents are the samples."""
    parent = stats.up
    while parent is not None and parent.parent is not None:
        if parent.segment is not Segment.KEY or parent.seen != group.samples:
            return False
        parent = parent.up
    return True


def _first(group: GroupSchema, stats: PathStats, kind: Kind, note: str, source: Source) -> Finding:
    finding = Finding(
        group.key,
        stats.path,
        kind,
        None,
        types_text(stats.types),
        (),
        source,
        last_seen_ms=source.seen_at_ms,
        note=note,
    )
    group.findings[finding.key] = finding
    group.dirty_findings.append(finding)
    return finding
