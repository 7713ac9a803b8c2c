"""One sample taken into its group: counted on the group's own paths, compared, then added.

``Sample(group)`` walks a document ``json.loads`` made (``take_doc``), or takes what the
non-recursive reader observed of a larger body (``take_observation``), and counts what it shows
at each path on that path itself (``PathStats.s_*``, valid while ``mark`` is the sample's serial);
a path the group does not know yet is made and hung in the group's tree, not yet among its
paths. ``drift.detect`` then compares it with what was learned before it, and ``add`` adds its
counts to what is learned. Nothing is copied per path: a known path costs a
dictionary lookup and a few additions per value.

The rules for where a value goes (``paths.py``'s bounds, maps, over-long keys) are the reader's
(``learn.Observer``); a property test checks the two give the same catalog for any body.
"""

from __future__ import annotations

from typing import Any

from walletpass_tui.schemas.folding import fold_maps
from walletpass_tui.schemas.jsonscan import (
    ARRAY,
    BOOLEAN,
    INTEGER,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    text_of,
)
from walletpass_tui.schemas.learn import Observation
from walletpass_tui.schemas.model import (
    Counts,
    GroupSchema,
    PathStats,
    Source,
    ValueKey,
    value_key,
    value_text,
)
from walletpass_tui.schemas.paths import (
    MAP,
    MAP_KEYS,
    MAX_DEPTH,
    MAX_KEY_CHARS,
    MAX_PATHS,
    MAX_VALUES,
    ROOT,
    UNTRACKED_CAP,
    Segment,
    child,
    digest,
    example,
    looks_like_id,
)

_SCALAR = {str: STRING, bool: BOOLEAN, int: INTEGER, float: NUMBER, type(None): NULL}


Slot = tuple[PathStats, tuple[Any, ...]]  # a path counting its values, and where it sits


def value_slots(group: GroupSchema, doc: Any) -> list[Slot]:
    """Where the scalars of ``doc`` sit that paths of ``group`` count the values of (a document
    whose every path the group knows: one just learned)."""
    root = group.paths.get(ROOT)
    out: list[Slot] = []
    stack: list[tuple[PathStats | None, Any, tuple[Any, ...]]] = [(root, doc, ())]
    while stack:
        stats, value, at = stack.pop()
        if stats is None:
            continue  # not learned (beyond the bounds)
        kind = type(value)
        if kind is dict:
            kids = stats.kids or {}
            for key, item in value.items():
                stack.append((kids.get(key) or stats.map_kid, item, (*at, key)))
        elif kind is list:
            for index, item in enumerate(value):
                stack.append((stats.item_kid, item, (*at, index)))
        elif stats.values is not None:
            out.append((stats, at))
    return out


def slot_values(doc: Any, slots: list[Slot]) -> tuple[ValueKey | None, ...] | None:
    """The values of ``doc`` at ``slots`` (a document of the shape they were found in); None
    when one of their paths counts values no more."""
    out: list[ValueKey | None] = []
    for stats, at in slots:
        if stats.values is None:
            return None
        value = doc
        for step in at:
            value = value[step]
        out.append(value_key(_SCALAR.get(type(value), NUMBER), value))
    return tuple(out)


class Sample:
    """One sample of ``group``: its counts on the group's paths, the paths it brings."""

    def __init__(self, group: GroupSchema) -> None:
        group.serial += 1
        self.group = group
        self.mark = group.serial
        self.touched: list[PathStats] = []  # every path it showed, in document order
        self.new: dict[str, PathStats] = {}  # ... of them those the group did not know
        self.untracked: set[bytes] = set()
        self.untracked_more = False
        self.new_idlike: dict[str, int] = {}  # id-like keys it named, per parent path
        self.named_here: set[tuple[str, str]] = set()  # (parent path, key) it named
        self.maps: dict[str, str] = {}  # parent path -> the map path it made of it
        # Each value it held at a path still counting its values (None: one no set holds).
        self.values: list[tuple[PathStats, ValueKey | None]] = []

    # -- counting ----------------------------------------------------------------------------

    def _touch(self, stats: PathStats) -> None:
        stats.mark = self.mark
        stats.s_seen = stats.s_holders = stats.s_objects = stats.s_arrays = 0
        stats.s_types.clear()
        self.touched.append(stats)

    def take_doc(self, doc: Any) -> None:
        """Count a document ``json.loads`` made (the same as the reader's events for its text)."""
        root = self._root()
        root.s_holders = 1
        self._value(root, doc)

    def _value(self, stats: PathStats, value: Any) -> None:
        kind = type(value)
        stats.s_seen += 1
        types = stats.s_types
        mark = self.mark
        touched = self.touched
        if kind is dict:
            types[OBJECT] = types.get(OBJECT, 0) + 1
            stats.s_objects += 1
            kids = stats.kids
            map_held = False
            for key, item in value.items():
                kid = kids.get(key) if kids is not None else None
                if kid is None:
                    kid = self._key_child(stats, key)
                    if kid is None:
                        continue  # not learned (too deep, too many paths, an over-long key)
                    kids = stats.kids
                if kid.mark != mark:  # the first value there in this sample (_touch)
                    kid.mark = mark
                    kid.s_seen = kid.s_holders = kid.s_objects = kid.s_arrays = 0
                    kid.s_types.clear()
                    touched.append(kid)
                if kid.segment is Segment.MAP:
                    if not map_held:  # several keys, one path: held once by this object
                        kid.s_holders += 1
                        map_held = True
                else:
                    kid.s_holders += 1
                self._value(kid, item)
        elif kind is list:
            types[ARRAY] = types.get(ARRAY, 0) + 1
            stats.s_arrays += 1
            if not value:
                return
            kid = stats.item_kid
            if kid is None:
                kid = self._child(stats, Segment.ITEM, "", child(stats.path, Segment.ITEM))
                if kid is None:
                    return
            if kid.mark != mark:
                self._touch(kid)
            kid.s_holders += 1  # once per non-empty array
            for item in value:
                self._value(kid, item)
        else:
            name = _SCALAR.get(kind, NUMBER)
            types[name] = types.get(name, 0) + 1
            if stats.example is None:
                stats.example = example(text_of(value))
            if stats.values is not None:
                self.values.append((stats, value_key(name, value)))

    def take_observation(self, obs: Observation) -> None:
        """Count what the reader observed of a body (its paths in document order, parents
        first), as ``take_doc`` counts a document."""
        group = self.group
        for seen in obs.paths.values():
            stats = group.paths.get(seen.path) or self.new.get(seen.path)
            if stats is None:
                stats = PathStats(seen.path, seen.parent, seen.segment, seen.key, seen.depth)
                self._new(stats)
                if seen.parent is not None:  # parents first: it is there
                    (group.paths.get(seen.parent) or self.new[seen.parent]).link(stats)
            self._touch(stats)
            stats.s_seen = seen.seen
            stats.s_holders = seen.holders
            stats.s_objects = seen.objects
            stats.s_arrays = seen.arrays
            stats.s_types = dict(seen.types)
            stats.open = stats.open or seen.open
            if stats.example is None:
                stats.example = seen.example
        for path, key in obs.values:
            stats = group.paths.get(path) or self.new[path]
            if stats.values is not None:
                self.values.append((stats, key))
        self.untracked = obs.untracked
        self.untracked_more = obs.untracked_more

    # -- where a value goes (the reader's rules: learn.Observer) --------------------------------

    def _root(self) -> PathStats:
        root = self.group.paths.get(ROOT)
        if root is None:
            root = PathStats(ROOT, None, Segment.ROOT, "", 0)
            self._new(root)
        self._touch(root)
        return root

    def _key_child(self, parent: PathStats, name: str) -> PathStats | None:
        """Where a key the group (and this sample) has not named at ``parent`` goes."""
        if parent.map_kid is not None:
            # An open map: any key it did not name before is one of its keys.
            return parent.map_kid
        map_path = self.maps.get(parent.path)
        if map_path is not None:  # made a map by this sample, but beyond the bounds
            return self._child(parent, Segment.MAP, MAP, map_path)
        if len(name) > MAX_KEY_CHARS:
            parent.open = True
            self._untrack(child(parent.path, Segment.KEY, name[: MAX_KEY_CHARS + 1]))
            return None
        if looks_like_id(name):
            known = self.group.idlike.get(parent.path, 0) + self.new_idlike.get(parent.path, 0)
            if known >= MAP_KEYS:  # its (MAP_KEYS + 1)th id-like key: a map from now on
                map_path = self.maps[parent.path] = child(parent.path, Segment.MAP)
                return self._child(parent, Segment.MAP, MAP, map_path)
        return self._child(parent, Segment.KEY, name, child(parent.path, Segment.KEY, name))

    def _child(self, parent: PathStats, segment: Segment, key: str, path: str) -> PathStats | None:
        if parent.depth >= MAX_DEPTH:
            parent.open = True
            return None
        if len(self.group.paths) + len(self.new) >= MAX_PATHS:
            parent.open = True
            self._untrack(path)
            return None
        stats = PathStats(path, parent.path, segment, key, parent.depth + 1)
        self._new(stats)
        parent.link(stats)
        if segment is Segment.KEY:
            self.named_here.add((parent.path, key))
            if looks_like_id(key):
                self.new_idlike[parent.path] = self.new_idlike.get(parent.path, 0) + 1
        return stats

    def _new(self, stats: PathStats) -> None:
        self.new[stats.path] = stats

    def _untrack(self, path: str) -> None:
        if len(self.untracked) < UNTRACKED_CAP:
            self.untracked.add(digest(path))
        else:
            self.untracked_more = True

    # -- after the walk ------------------------------------------------------------------------

    def add(self, source: Source) -> None:
        """Add what it showed to what is learned (after ``drift.detect`` compared it with what
        was learned before it), its new paths first seen at ``source``; maps fold then."""
        group = self.group
        at_ms, webhook_id, dirty, new = source.seen_at_ms, source.webhook_id, group.dirty, self.new
        for stats in self.touched:
            if new and stats.path in new:
                group.add_path(stats, source)
            types = stats.types
            for kind, n in stats.s_types.items():
                types[kind] = types.get(kind, 0) + n
            stats.seen += stats.s_seen
            stats.holders += stats.s_holders
            stats.objects += stats.s_objects
            stats.arrays += stats.s_arrays
            stats.last_seen_ms = at_ms
            stats.last_webhook_id = webhook_id
            dirty.add(stats.path)
        for stats, key in self.values:
            counted = stats.values
            if counted is None:
                continue
            if key is None:  # a number, a long string: no set of values
                stats.values = None
                continue
            counted[key] = counted.get(key, 0) + 1
            if len(counted) > MAX_VALUES:
                stats.values = None
        group.counted(1, source)
        fold_maps(group)
        group.add_untracked(self.untracked, self.untracked_more)

    def counts(self) -> list[Counts]:
        """What it showed at each path (for counting samples of the same shape alike)."""
        return [
            (s, s.s_seen, s.s_holders, s.s_objects, s.s_arrays, tuple(s.s_types.items()))
            for s in self.touched
        ]

    # -- read by drift.py ------------------------------------------------------------------------

    def showed(self, stats: PathStats) -> bool:
        return stats.mark == self.mark

    def showed_value(self, stats: PathStats, text: str) -> bool:
        """Whether it held the value written ``text`` (``value_text``) at ``stats``."""
        return stats.mark == self.mark and any(
            s is stats and key is not None and value_text(key) == text for s, key in self.values
        )

    def held(self, stats: PathStats) -> tuple[int, int]:
        """(the parents in the sample that could hold ``stats``, how many did)."""
        parent = stats.up
        if parent is None:
            return (1, 1) if stats.parent is None else (0, 0)
        if parent.mark != self.mark:
            return 0, 0
        could = parent.s_arrays if stats.segment is Segment.ITEM else parent.s_objects
        return could, (stats.s_holders if stats.mark == self.mark else 0)
