"""What is learned about one group: its paths with their counts, and its drift findings.

A group is a topic (``pass.activated``; ``None`` is "topic unknown") or the pass templates. Pure
data and the arithmetic on it; reading bodies is in ``learn.py``, storing in ``storage.py``,
folding maps in ``folding.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from walletpass_tui.api.topics import TopicError, parse_topic
from walletpass_tui.schemas.jsonscan import BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING, TYPES
from walletpass_tui.schemas.paths import (
    UNTRACKED_CAP,
    VALUE_CHARS,
    VALUE_INT,
    VALUE_SAMPLES,
    Segment,
    looks_like_id,
)

# -- groups ---------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class GroupKey:
    """Which group: the templates, or one topic (``topic=None``: deliveries with no topic)."""

    templates: bool = False
    topic: str | None = None

    @classmethod
    def of_topic(cls, topic: str | None) -> GroupKey:
        return cls(False, topic)

    @property
    def label(self) -> str:
        """The group's one name: ``templates``, ``topic unknown``, or the topic as the log shows
        it; a topic from the wire that reads as one of our names (``templates``, ``unknown``,
        ``activated``, `` pass.activated`` with a space) is ``topic:`` and its exact name, which
        is also what ``parse_group`` reads back as that topic."""
        if self.templates:
            return "templates"
        if self.topic is None:
            return "topic unknown"
        return self.topic if plain_topic(self.topic) else TOPIC_PREFIX + self.topic

    @property
    def stored(self) -> str:
        """The key in the schema file (a topic named ``templates`` stays a topic)."""
        if self.templates:
            return "templates"
        return "topic" if self.topic is None else "topic:" + self.topic

    @classmethod
    def from_stored(cls, text: str) -> GroupKey:
        if text == "templates":
            return TEMPLATES
        if text == "topic":
            return cls(False, None)
        if text.startswith("topic:"):
            return cls(False, text[len("topic:") :])
        raise ValueError(f"not a group key: {text!r}")


TEMPLATES = GroupKey(True, None)
TOPIC_PREFIX = "topic:"  # a topic named exactly as what follows, whatever it reads like
UNKNOWN_NAMES = ("unknown", "topic-unknown", "topic unknown")  # the group of topic-less deliveries


def builtin_group(text: str) -> GroupKey | None:
    """The group one of our own names gives: ``templates``, ``unknown`` (also ``topic unknown``,
    any case), ``topic:NAME`` (the topic NAME exactly), or a service topic by its full or short
    name (``activated``). None: another name, a topic learned from the wire perhaps."""
    if text.startswith(TOPIC_PREFIX):
        return GroupKey.of_topic(text[len(TOPIC_PREFIX) :])
    name = text.strip()
    if name == "templates":
        return TEMPLATES
    if name.lower() in UNKNOWN_NAMES:
        return GroupKey.of_topic(None)
    try:
        return GroupKey.of_topic(parse_topic(name))
    except TopicError:  # not one of the service's topics
        return None


def plain_topic(topic: str) -> bool:
    """Whether a topic from the wire can be named by itself: none of our names means another
    group (see ``builtin_group``)."""
    found = builtin_group(topic)
    return topic != "" and (found is None or found == GroupKey.of_topic(topic))


# -- where a value came from ----------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """The delivery (or the template list) a sample came from."""

    seen_at_ms: int
    webhook_id: str | None = None
    attempt_id: int | None = None


# -- paths ----------------------------------------------------------------------------------------


_SCRATCH = {"scratch": True}  # a field's metadata: not learned, never stored


def learned_fields(stats: PathStats) -> dict[str, Any]:
    """What is learned at a path, as plain data (the tree and the sample's counts left out)."""
    return {f.name: getattr(stats, f.name) for f in fields(stats) if "scratch" not in f.metadata}


@dataclass(slots=True)
class PathStats:
    """Everything learned at one path of one group.

    ``seen``: values found there; ``holders``: parent objects (or non-empty parent arrays) that
    held it, so presence is ``holders`` over the parent's ``objects`` (or ``arrays``);
    ``open``: some of its children were not learned (too deep, too many paths, an over-long key).
    """

    path: str
    parent: str | None
    segment: Segment
    key: str
    depth: int
    seq: int = 0
    types: dict[str, int] = field(default_factory=dict)
    seen: int = 0
    holders: int = 0
    objects: int = 0
    arrays: int = 0
    example: str | None = None
    open: bool = False
    first_seen_ms: int = 0
    first_webhook_id: str | None = None
    first_attempt_id: int | None = None
    last_seen_ms: int = 0
    last_webhook_id: str | None = None
    # Each value counted (kind, value) while the path took few of them; None: too many, or
    # values that are no set (numbers, long strings). See ``value_set``.
    values: dict[ValueKey, int] | None = field(default_factory=dict)
    # Below: no part of what is learned, never stored. The group's paths as a tree (each one's
    # named children, its map's and its array's items: ``GroupSchema.reindex``) and what the
    # sample being taken showed here (``sample.py``), counted while ``mark`` is its serial.
    up: PathStats | None = field(default=None, compare=False, repr=False, metadata=_SCRATCH)
    kids: dict[str, PathStats] | None = field(
        default=None, compare=False, repr=False, metadata=_SCRATCH
    )
    map_kid: PathStats | None = field(default=None, compare=False, repr=False, metadata=_SCRATCH)
    item_kid: PathStats | None = field(default=None, compare=False, repr=False, metadata=_SCRATCH)
    mark: int = field(default=0, compare=False, repr=False, metadata=_SCRATCH)
    s_seen: int = field(default=0, compare=False, repr=False, metadata=_SCRATCH)
    s_holders: int = field(default=0, compare=False, repr=False, metadata=_SCRATCH)
    s_objects: int = field(default=0, compare=False, repr=False, metadata=_SCRATCH)
    s_arrays: int = field(default=0, compare=False, repr=False, metadata=_SCRATCH)
    s_types: dict[str, int] = field(
        default_factory=dict, compare=False, repr=False, metadata=_SCRATCH
    )

    def link(self, kid: PathStats) -> None:
        """Make ``kid`` (a path below this one) one of this path's children in the tree."""
        kid.up = self
        if kid.segment is Segment.KEY:
            if self.kids is None:
                self.kids = {}
            self.kids[kid.key] = kid
        elif kid.segment is Segment.MAP:
            self.map_kid = kid
        elif kid.segment is Segment.ITEM:
            self.item_kid = kid

    @property
    def is_object(self) -> bool:
        return OBJECT in self.types

    def value_set(self) -> list[tuple[ValueKey, int]] | None:
        """The values it takes, most seen first, with their counts, once it has taken at least
        VALUE_SAMPLES of at most MAX_VALUES distinct ones (None: not a small set, or not yet)."""
        values = self.values
        if not values or sum(values.values()) < VALUE_SAMPLES:
            return None
        return sorted(values.items(), key=lambda kv: (-kv[1], value_text(kv[0])))


ValueKey = tuple[str, Any]  # (JSON type, value): "1" and 1, true and 1 are different values


def value_key(kind: str, value: Any) -> ValueKey | None:
    """How a scalar is counted in a value set (None: a value no set holds)."""
    if kind == STRING:
        return (STRING, value) if len(value) <= VALUE_CHARS else None
    if kind == INTEGER:
        return (INTEGER, value) if -VALUE_INT < value < VALUE_INT else None
    if kind in (BOOLEAN, NULL):
        return (kind, value)
    return None


def value_text(key: ValueKey) -> str:
    """A value as JSON text: ``"apple"``, ``7``, ``true``, ``null`` (from the wire: escape it)."""
    return json.dumps(key[1], ensure_ascii=False)


def type_order(types: dict[str, int]) -> list[str]:
    """Types by count, most seen first (ties in the JSON order string..array)."""
    return sorted(types, key=lambda t: (-types[t], TYPES.index(t)))


def types_text(types: dict[str, int] | list[str]) -> str:
    names = type_order(types) if isinstance(types, dict) else sorted(types, key=TYPES.index)
    return "|".join(names)


def is_new_type(kind: str, known: dict[str, int] | list[str]) -> bool:
    """Whether ``kind`` was never seen where ``known`` were: an integer where numbers were seen
    is one of them (JSON has one number type)."""
    return kind not in known and not (kind == INTEGER and NUMBER in known)


# -- findings -------------------------------------------------------------------------------------


class Kind(Enum):
    FIELD_ADDED = "field_added"
    FIELD_MISSING = "field_missing"
    TYPE_CHANGED = "type_changed"
    NEW_VALUE = "new_value"  # a value outside a path's value set (variant: the value's text)
    # What the samples before drift is looked for disagreed on, said once when it starts.
    WARM_UP_OPTIONAL = "warm_up_optional"
    WARM_UP_TYPES = "warm_up_types"

    @property
    def severity(self) -> str:
        return _SEVERITY[self]

    @property
    def warm_up(self) -> bool:
        return self in (Kind.WARM_UP_OPTIONAL, Kind.WARM_UP_TYPES)


_SEVERITY = {
    Kind.FIELD_ADDED: "info",
    Kind.FIELD_MISSING: "warning",
    Kind.TYPE_CHANGED: "breaking",
    Kind.NEW_VALUE: "warning",
    Kind.WARM_UP_OPTIONAL: "info",
    Kind.WARM_UP_TYPES: "warning",
}


FindingKey = tuple[str, Kind, str]  # path, kind, variant (see Finding.variant)


@dataclass(slots=True)
class Finding:
    """One drift: the first delivery that showed it, and how many have shown it since.

    A finding is one per path, kind and variant: the variant is the new type of a
    ``type_changed`` (``string -> integer`` and, later, ``string|integer -> object`` at the same
    path are two findings), and empty for the other kinds."""

    group: GroupKey
    path: str
    kind: Kind
    was: str | None
    now: str | None
    baseline: tuple[str, ...]  # the types known at the path when it was found
    source: Source
    count: int = 1
    last_seen_ms: int = 0
    id: int = 0  # its row in the schema file (0: not stored yet)
    variant: str = ""
    note: str | None = None  # what a warm-up finding says (``present in 3 of 20 ...``)

    @property
    def key(self) -> FindingKey:
        return (self.path, self.kind, self.variant)


# -- a group --------------------------------------------------------------------------------------


# What one sample showed at one path: the path, and its values, parent objects (or arrays)
# holding it, objects and arrays there, and each type's values.
Counts = tuple[PathStats, int, int, int, int, tuple[tuple[str, int], ...]]


@dataclass(frozen=True)
class Repeat:
    """A sample's shape (``learn.shape_of``), what it showed (at each of its paths, in document
    order) and the findings it showed, valid while the group's ``epoch`` is ``epoch``; and where
    its values sit that paths count (``slots``: the path, the keys and indexes that lead there)
    with those values: a sample of that shape shows what it showed only with the same values."""

    shape: object
    seen: list[Counts]
    shown: list[Finding]
    epoch: int
    slots: list[tuple[PathStats, tuple[Any, ...]]]
    values: tuple[ValueKey | None, ...]


@dataclass
class GroupSchema:
    key: GroupKey
    samples: int = 0
    not_json: int = 0  # verified bodies that are not JSON: counted, nothing learned
    paths: dict[str, PathStats] = field(default_factory=dict)
    next_seq: int = 1
    untracked: set[bytes] = field(default_factory=set)
    untracked_more: bool = False
    first_seen_ms: int = 0
    last_seen_ms: int = 0
    last_webhook_id: str | None = None
    findings: dict[FindingKey, Finding] = field(default_factory=dict)
    skipped: int = 0  # verified deliveries the learner could not take (see book.py)
    # Indexes of ``paths``: named id-like keys per parent path (more than MAP_KEYS: the parent
    # is a map), and the parents whose keys changed since maps were last looked for; the paths
    # as a tree is kept on the paths themselves (``PathStats.kids``).
    idlike: dict[str, int] = field(default_factory=dict)
    fold_check: set[str] = field(default_factory=set)
    always: list[PathStats] | None = None  # see always_present_paths()
    serial: int = 0  # samples taken (sample.py marks the paths it counts on with it)
    # The last sample's shape, kept while the paths stay as they were (``epoch``): a sample of
    # that same shape is learned without being walked again (see ``Catalog._sample``).
    epoch: int = 0  # changes whenever a path is added, folded or untracked
    repeat: Repeat | None = None
    shape_tries: int = 0  # see Catalog._shape
    shape_hits: int = 0
    shape_pause: int = 0
    # What changed since the last save (storage.py writes only these).
    dirty: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    dirty_findings: list[Finding] = field(default_factory=list)
    removed_findings: list[int] = field(default_factory=list)  # stored ids
    finding_index: dict[str, list[Finding]] | None = None  # see drift._index
    changed: bool = False

    # -- reading -----------------------------------------------------------------------------

    def denominator(self, stats: PathStats) -> int:
        """How many times the parent could have held ``stats``: its objects (or arrays)."""
        if stats.parent is None:
            return self.samples
        parent = self.paths.get(stats.parent)
        if parent is None:
            return 0
        return parent.arrays if stats.segment is Segment.ITEM else parent.objects

    def presence(self, stats: PathStats) -> float:
        denominator = self.denominator(stats)
        return min(1.0, stats.holders / denominator) if denominator else 0.0

    def always_present(self, stats: PathStats) -> bool:
        denominator = self.denominator(stats)
        return denominator > 0 and stats.holders >= denominator

    def children(self) -> dict[str | None, list[PathStats]]:
        """Each path's children, in the order they were first seen."""
        out: dict[str | None, list[PathStats]] = {}
        for stats in sorted(self.paths.values(), key=lambda s: s.seq):
            out.setdefault(stats.parent, []).append(stats)
        return out

    def tree(self) -> list[PathStats]:
        """Every path, parents before children, siblings in the order first seen."""
        kids = self.children()
        out: list[PathStats] = []
        stack = list(reversed(kids.get(None, [])))
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed(kids.get(node.path, [])))
        return out

    def reindex(self) -> None:
        """Rebuild the indexes of ``paths`` and the tree (after loading, after a fold)."""
        self.always = None
        self.idlike = {}
        for s in self.paths.values():
            s.kids = s.map_kid = s.item_kid = s.up = None
        for s in self.paths.values():
            if s.parent is None:
                continue
            self.paths[s.parent].link(s)
            if s.segment is Segment.KEY and looks_like_id(s.key):
                self.idlike[s.parent] = self.idlike.get(s.parent, 0) + 1
        self.fold_check = set(self.idlike)

    def add_path(self, stats: PathStats, source: Source) -> None:
        """A path a sample brought (already in the tree), first seen at ``source``."""
        stats.seq = self.next_seq
        self.next_seq += 1
        stats.first_seen_ms = source.seen_at_ms
        stats.first_webhook_id = source.webhook_id
        stats.first_attempt_id = source.attempt_id
        self.paths[stats.path] = stats
        self.removed.discard(stats.path)
        self.always = None
        self.epoch += 1
        parent = stats.parent
        if parent is not None:
            if stats.segment is Segment.KEY and looks_like_id(stats.key):
                self.idlike[parent] = self.idlike.get(parent, 0) + 1
                self.fold_check.add(parent)
            elif stats.segment is Segment.MAP:
                self.fold_check.add(parent)

    @property
    def untracked_count(self) -> int:
        return len(self.untracked)

    # -- learning ----------------------------------------------------------------------------

    def add_untracked(self, digests: set[bytes], more: bool) -> None:
        for d in digests:
            if len(self.untracked) >= UNTRACKED_CAP:
                self.untracked_more = True
                break
            if d not in self.untracked:
                self.untracked.add(d)
                self.changed = True
                self.epoch += 1
        if more and not self.untracked_more:
            self.untracked_more = True
            self.changed = True
            self.epoch += 1

    def count_repeat(self, seen: list[Counts], source: Source, times: int) -> None:
        """Add what ``times`` samples of a shape already learned showed (``seen``: what one of
        them showed at each of its paths, all of them known); ``source`` is the latest."""
        at_ms, webhook_id, dirty = source.seen_at_ms, source.webhook_id, self.dirty
        for stats, n_seen, holders, objects, arrays, type_counts in seen:
            types = stats.types
            for kind, n in type_counts:
                types[kind] = types.get(kind, 0) + n * times
            stats.seen += n_seen * times
            stats.holders += holders * times
            stats.objects += objects * times
            stats.arrays += arrays * times
            stats.last_seen_ms = at_ms
            stats.last_webhook_id = webhook_id
            dirty.add(stats.path)
        self.counted(times, source)

    def counted(self, times: int, source: Source) -> None:
        """``times`` more samples, the latest from ``source``."""
        self.samples += times
        if not self.first_seen_ms:
            self.first_seen_ms = source.seen_at_ms
        self.last_seen_ms = source.seen_at_ms
        self.last_webhook_id = source.webhook_id
        self.changed = True

    def always_present_paths(self) -> list[PathStats]:
        """The paths every parent that could hold them held (maps and the body aside). Once a
        path misses it never comes back, so the list is kept until a path is added or folded,
        or one goes missing (``forget_always``)."""
        if self.always is None:
            self.always = [
                s
                for s in self.paths.values()
                if s.segment not in (Segment.MAP, Segment.ROOT) and self.always_present(s)
            ]
        return self.always
