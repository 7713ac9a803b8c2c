"""Pure learning: one body -> what it shows at each path, bounded whatever it holds.

``observe(body, group)`` reads a body with the non-recursive reader (``jsonscan.py``: bodies
larger than FAST_BYTES, or that ``json.loads`` gives up on) and returns its paths in document
order, parents first, with their types, counts and first value. The group is only read (which
paths it knows, which of its objects are maps), so a body that turns out not to be JSON halfway
through changes nothing. A body ``json.loads`` parsed is walked by ``sample.Sample`` by the same
rules. Bounds (``paths.py``): 64 levels, 2,000 paths per group (the rest counted by digest), keys
up to 128 characters, id-like keys folded into ``{*}`` past 50 at one path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from walletpass_tui.schemas.jsonscan import (
    ARRAY,
    BOOLEAN,
    FAST_BYTES,
    INTEGER,
    NULL,
    OBJECT,
    NotJson,
    decode,
    scan,
    text_of,
)
from walletpass_tui.schemas.model import GroupSchema, PathStats, ValueKey, value_key
from walletpass_tui.schemas.paths import (
    MAP,
    MAP_KEYS,
    MAX_DEPTH,
    MAX_KEY_CHARS,
    MAX_PATHS,
    ROOT,
    UNTRACKED_CAP,
    Segment,
    child,
    digest,
    example,
    looks_like_id,
)


@dataclass
class Observation:
    """What one body showed: its paths (document order, parents first) and the paths it had
    beyond the group's bounds (as digests)."""

    paths: dict[str, PathStats]
    untracked: set[bytes] = field(default_factory=set)
    untracked_more: bool = False
    values: list[tuple[str, ValueKey | None]] = field(default_factory=list)  # path, value


_PENDING = object()  # an array's item path, resolved when its first item arrives


class _Frame:
    __slots__ = ("held", "is_object", "slot", "stats")

    def __init__(self, stats: PathStats | None, is_object: bool) -> None:
        self.stats = stats  # None: a value not learned (too deep, untracked), skipped whole
        self.is_object = is_object
        self.slot: Any = None if is_object or stats is None else _PENDING
        self.held: set[str] | None = None


class Observer:
    """The reader's sink: keeps a path per value, never more than the bounds allow."""

    def __init__(self, group: GroupSchema) -> None:
        self.group = group
        self.paths: dict[str, PathStats] = {}
        self.values: list[tuple[str, ValueKey | None]] = []  # each value: its path, itself
        self.frames: list[_Frame] = []
        self.new_paths = 0
        self.new_idlike: dict[str, int] = {}
        self.named_here: set[tuple[str, str]] = set()  # new keys named in this body
        self.maps: dict[str, str] = {}  # parent path -> its map path, once it is a map
        self.untracked: set[bytes] = set()
        self.untracked_more = False
        self.root = PathStats(ROOT, None, Segment.ROOT, "", 0)
        self.paths[ROOT] = self.root
        known_root = group.paths.get(ROOT)
        if known_root is None:
            self.new_paths = 1
        else:
            self.root.example = known_root.example

    # -- the reader's events -----------------------------------------------------------------

    def begin_object(self) -> None:
        slot = self._slot()
        if slot is not None:
            slot.seen += 1
            slot.types[OBJECT] = slot.types.get(OBJECT, 0) + 1
            slot.objects += 1
        self.frames.append(_Frame(slot, True))

    def key(self, name: str) -> None:
        frame = self.frames[-1]
        if frame.stats is None:
            return
        found = self._key_child(frame.stats, name)
        frame.slot = found
        if found is not None:
            held = frame.held
            if held is None:
                held = frame.held = set()
            if found.path not in held:  # once per object: a duplicate key, or a map's keys
                held.add(found.path)
                found.holders += 1

    def end_object(self) -> None:
        self.frames.pop()

    def begin_array(self) -> None:
        slot = self._slot()
        if slot is not None:
            slot.seen += 1
            slot.types[ARRAY] = slot.types.get(ARRAY, 0) + 1
            slot.arrays += 1
        self.frames.append(_Frame(slot, False))

    def end_array(self) -> None:
        self.frames.pop()

    def scalar(self, kind: str, value: Any) -> None:
        slot = self._slot()
        if slot is not None:
            slot.seen += 1
            slot.types[kind] = slot.types.get(kind, 0) + 1
            if slot.example is None:
                slot.example = example(text_of(value))
            self.values.append((slot.path, _value_key(kind, value)))

    # -- where a value goes ------------------------------------------------------------------

    def _slot(self) -> PathStats | None:
        if not self.frames:
            self.root.holders = 1
            return self.root
        frame = self.frames[-1]
        if frame.slot is _PENDING:
            assert frame.stats is not None
            frame.slot = self._child(
                frame.stats, Segment.ITEM, "", child(frame.stats.path, Segment.ITEM)
            )
            if frame.slot is not None:
                frame.slot.holders += 1  # once per non-empty array
        slot: PathStats | None = frame.slot
        return slot

    def _key_child(self, parent: PathStats, name: str) -> PathStats | None:
        in_group = self.group.paths.get(parent.path)
        kids = in_group.kids if in_group is not None else None
        known = kids.get(name) if kids is not None else None
        if known is not None:  # the common case: a key the group knows
            found = self.paths.get(known.path)
            if found is None:
                found = PathStats(known.path, parent.path, Segment.KEY, name, known.depth)
                found.example = known.example  # only a new path needs its first value
                self.paths[known.path] = found
            return found
        map_kid = in_group.map_kid if in_group is not None else None
        map_path = map_kid.path if map_kid is not None else self.maps.get(parent.path)
        if map_path is not None and (parent.path, name) not in self.named_here:
            # An open map: any key it did not name before is one of its keys, a sample of
            # ``{*}``, never a path of its own (and so never a finding).
            return self._child(parent, Segment.MAP, MAP, map_path)
        if len(name) > MAX_KEY_CHARS:
            parent.open = True
            self._untrack(child(parent.path, Segment.KEY, name[: MAX_KEY_CHARS + 1]))
            return None
        if looks_like_id(name) and (parent.path, name) not in self.named_here:
            map_path = self._map_path(parent.path)
            if map_path is not None:
                return self._child(parent, Segment.MAP, MAP, map_path)
        return self._child(parent, Segment.KEY, name, child(parent.path, Segment.KEY, name))

    def _child(self, parent: PathStats, segment: Segment, key: str, path: str) -> PathStats | None:
        found = self.paths.get(path)
        if found is not None:
            return found
        if parent.depth >= MAX_DEPTH:
            parent.open = True
            return None
        known = self.group.paths.get(path)
        if known is None:
            if len(self.group.paths) + self.new_paths >= MAX_PATHS:
                parent.open = True
                self._untrack(path)
                return None
            self.new_paths += 1
            if segment is Segment.KEY:
                self.named_here.add((parent.path, key))  # a repeated key keeps its path
                if looks_like_id(key):
                    self.new_idlike[parent.path] = self.new_idlike.get(parent.path, 0) + 1
        stats = PathStats(path, parent.path, segment, key, parent.depth + 1)
        if known is not None:
            stats.example = known.example
        self.paths[path] = stats
        return stats

    def _map_path(self, parent: str) -> str | None:
        """Where a new id-like key at ``parent`` goes when it would be the parent's (MAP_KEYS +
        1)th id-like key: the parent is a map from then on. None: it keeps its name."""
        known = self.group.idlike.get(parent, 0) + self.new_idlike.get(parent, 0)
        if known >= MAP_KEYS:
            map_path = child(parent, Segment.MAP)
            self.maps[parent] = map_path
            return map_path
        return None

    def _untrack(self, path: str) -> None:
        if len(self.untracked) < UNTRACKED_CAP:
            self.untracked.add(digest(path))
        else:
            self.untracked_more = True

    def result(self) -> Observation:
        return Observation(self.paths, self.untracked, self.untracked_more, self.values)


def _value_key(kind: str, value: Any) -> ValueKey | None:
    """``model.value_key`` of a value as the reader gives it (an integer, ``true`` as text)."""
    if kind == INTEGER and isinstance(value, str):
        if len(value) > 17:
            return None  # past VALUE_INT: no set
        value = int(value)
    elif kind == BOOLEAN and isinstance(value, str):
        value = value == "true"
    elif kind == NULL:
        value = None
    return value_key(kind, value)


def observe(body: bytes, group: GroupSchema) -> Observation | None:
    """What ``body`` shows, read by the non-recursive reader (for a body ``parse_small`` left
    unparsed), or None when it is not UTF-8 JSON. Never raises for any body."""
    observer = Observer(group)
    try:
        scan(decode(body), observer)
    except NotJson:  # not JSON: nothing to learn from this body
        return None
    return observer.result()


UNPARSED = object()  # what parse_small returns for a body the scanner must decide on


def parse_small(body: bytes) -> Any:
    """``json.loads`` of a UTF-8 body of at most FAST_BYTES; UNPARSED for a larger one, one that
    is not UTF-8, or one ``json.loads`` refuses or gives up on (the scanner decides those)."""
    if len(body) > FAST_BYTES:
        return UNPARSED
    try:
        return json.loads(decode(body))
    except (NotJson, ValueError, RecursionError):  # not JSON: kept as unparsed
        return UNPARSED


Shape = tuple[Any, ...] | type


def shape_of(doc: Any) -> Shape | None:
    """The document with its values replaced by their types: equal for two documents exactly
    when they hold the same keys in the same order, with values of the same Python (so JSON)
    types at the same places, arrays of the same length included. Two such documents show the
    same thing to a group (``observe_parsed``) as long as the group's paths stay the same. None
    for a document nested too deep to tell."""
    try:
        return _shape(doc)
    except RecursionError:  # nested too deep: no shape, as documented
        return None


def _shape(value: Any) -> Shape:
    kind = type(value)
    if kind is dict:
        return tuple([(key, _shape(item)) for key, item in value.items()])
    if kind is list:
        return (list, *[_shape(item) for item in value])
    return kind


def template_body(template: Any) -> bytes | None:
    """A template object (already parsed by the API client) as JSON text to learn from."""
    try:
        return json.dumps(template, ensure_ascii=True).encode("ascii")
    except (TypeError, ValueError, RecursionError):  # not JSON-able: nothing to learn
        return None
