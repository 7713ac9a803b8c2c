"""Folding maps: an object whose keys read as ids (accounts, passes, slots) becomes one map path,
``data.balances{*}``, the paths below its keys merged into the same paths below ``{*}`` (their
counts added) and their findings following them.

``fold_maps(group)`` runs after each sample (``sample.py``); what it looks at is kept up to date
by ``GroupSchema`` (``idlike``, ``fold_check``).
"""

from __future__ import annotations

from dataclasses import replace

from walletpass_tui.schemas.model import Finding, FindingKey, GroupSchema, Kind, PathStats
from walletpass_tui.schemas.paths import (
    MAP,
    MAP_KEYS,
    MAX_VALUES,
    Segment,
    child,
    looks_like_id,
    map_member,
)

ABOUT_VALUES = (Kind.TYPE_CHANGED, Kind.WARM_UP_TYPES, Kind.NEW_VALUE)  # true of a map's values


def fold_maps(group: GroupSchema) -> None:
    """Fold every object that has become a map, until none is left to fold: folding one
    merges the objects below it (``data.balances.acct_1`` and ``.acct_2`` become
    ``data.balances{*}``), and their keys together may make a map of their own."""
    while group.fold_check:
        check, group.fold_check = group.fold_check, set()
        for parent in check:
            if group.idlike.get(parent) and _is_map(group, parent):
                _fold_map(group, parent)
                group.reindex()  # every parent is looked at again
                group.epoch += 1
                break


def _is_map(group: GroupSchema, parent: str) -> bool:
    """Whether the object at ``parent`` is a map with id-like keys still named below it:
    more than MAP_KEYS of them, or a ``{*}`` there already."""
    if parent not in group.paths:
        return False  # folded itself meanwhile: its keys are counted where they went
    return child(parent, Segment.MAP) in group.paths or group.idlike.get(parent, 0) > MAP_KEYS


def _fold_map(group: GroupSchema, parent: str) -> None:
    """Fold every key of the map at ``parent`` that reads as one of its ids (see
    ``map_member``), with everything below it, into ``parent{*}``."""
    named = [s for s in group.paths.values() if s.parent == parent and s.segment is Segment.KEY]
    ids = [s.key for s in named if looks_like_id(s.key)]
    members = [s for s in named if map_member(s.key, ids)]
    map_path = child(parent, Segment.MAP)
    kids = group.children()
    if map_path not in group.paths:
        depth = group.paths[parent].depth + 1
        group.paths[map_path] = PathStats(map_path, parent, Segment.MAP, MAP, depth)
        group.dirty.add(map_path)
    moved: dict[str, str] = {}
    for node in sorted(members, key=lambda s: s.seq):
        _fold(group, node, map_path, kids, moved)
    _move_findings(group, moved)


def _move_findings(group: GroupSchema, moved: dict[str, str]) -> None:
    """The findings at paths folded into a map follow them; those that were about the map's
    keys themselves (one added, one missing) are dropped: a map's keys coming and going is
    not drift. Two findings that meet at one path are one (the first, both counts)."""
    if not any(path in moved for path, _, _ in group.findings):
        return
    kept: dict[FindingKey, Finding] = {}
    for finding in sorted(group.findings.values(), key=lambda f: (f.source.seen_at_ms, f.id)):
        path = moved.get(finding.path, finding.path)
        about_a_key = path.endswith(MAP) and finding.kind not in ABOUT_VALUES
        known = kept.get((path, finding.kind, finding.variant))
        if about_a_key or known is not None:
            if known is not None:
                known.count += finding.count
                known.last_seen_ms = max(known.last_seen_ms, finding.last_seen_ms)
                group.dirty_findings.append(known)
            if finding.id:
                group.removed_findings.append(finding.id)
            continue
        if path != finding.path:
            finding.path = path
            group.dirty_findings.append(finding)
        kept[finding.key] = finding
    group.findings = kept
    group.finding_index = None


def _fold(
    group: GroupSchema,
    node: PathStats,
    map_path: str,
    kids: dict[str | None, list[PathStats]],
    moved: dict[str, str],
) -> None:
    """Move ``node`` and everything below it to ``map_path`` and the same paths below it
    (``moved`` gets each path's new one)."""
    cut = len(node.path)
    stack = [node]
    while stack:
        current = stack.pop()
        stack.extend(kids.get(current.path, []))
        target_path = map_path + current.path[cut:]
        moved[current.path] = target_path
        target = group.paths.get(target_path)
        if target is None:
            assert current.parent is not None  # below the folded key
            target = replace(
                current,
                path=target_path,
                parent=map_path + current.parent[cut:],
                types=dict(current.types),
                values=None if current.values is None else dict(current.values),
                up=None,
                kids=None,
                map_kid=None,
                item_kid=None,
                s_types={},
            )
            group.paths[target_path] = target
        else:
            _absorb(target, current, as_map_node=current is node)
        del group.paths[current.path]
        group.dirty.discard(current.path)
        group.removed.add(current.path)
        group.removed.discard(target_path)
        group.dirty.add(target_path)


def _absorb(target: PathStats, other: PathStats, *, as_map_node: bool) -> None:
    """Add the counts of ``other``, a path folded into ``target``."""
    for kind, n in other.types.items():
        target.types[kind] = target.types.get(kind, 0) + n
    target.seen += other.seen
    # Folding: several keys of one object become one map path; an object holding two of them
    # still holds the map once, so the larger count is the closest one can tell.
    target.holders = (
        max(target.holders, other.holders) if as_map_node else target.holders + other.holders
    )
    target.objects += other.objects
    target.arrays += other.arrays
    target.open = target.open or other.open
    if target.values is not None and other.values is not None:
        for key, n in other.values.items():
            target.values[key] = target.values.get(key, 0) + n
        if len(target.values) > MAX_VALUES:
            target.values = None
    else:
        target.values = None
    if other.first_seen_ms and (not target.first_seen_ms or other.seq < target.seq):
        target.example = other.example if other.example is not None else target.example
        target.first_seen_ms = other.first_seen_ms
        target.first_webhook_id = other.first_webhook_id
        target.first_attempt_id = other.first_attempt_id
        target.seq = other.seq
    elif target.example is None:
        target.example = other.example
    if other.last_seen_ms >= target.last_seen_ms:
        target.last_seen_ms = other.last_seen_ms
        target.last_webhook_id = other.last_webhook_id
