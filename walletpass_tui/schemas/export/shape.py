"""The learned tree as the exporters need it, and names made safe from wire text.

Every exporter reads a ``Node`` tree built from one group: each node's JSON types (in the JSON
order), whether it is required (present in every parent that could hold it), its named children,
its map values (``{*}``) and its array items (``[]``), whether it is open (children not learned:
anything goes there), and its value set (``values``: the scalars it takes, when they are at most
12 over at least 50: exported as literals).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from walletpass_tui.schemas.jsonscan import TYPES
from walletpass_tui.schemas.model import GroupKey, GroupSchema, PathStats
from walletpass_tui.schemas.paths import ROOT, Segment


@dataclass
class Node:
    stats: PathStats
    types: list[str]
    required: bool
    presence: float
    props: list[tuple[str, Node]] = field(default_factory=list)
    map_values: Node | None = None
    items: Node | None = None
    values: list[Any] | None = None  # every scalar it took (str, int, bool, None), most seen first

    @property
    def open(self) -> bool:
        return self.stats.open


def tree(group: GroupSchema) -> Node:
    """The group's root node (the body itself)."""
    kids = group.children()

    def build(stats: PathStats) -> Node:
        found = stats.value_set()
        node = Node(
            stats,
            sorted(stats.types, key=TYPES.index),
            stats.parent is None or group.always_present(stats),
            group.presence(stats) if stats.parent is not None else 1.0,
            values=None if found is None else [key[1] for key, _ in found],
        )
        for kid in kids.get(stats.path, []):
            if kid.segment is Segment.KEY:
                node.props.append((kid.key, build(kid)))
            elif kid.segment is Segment.MAP:
                node.map_values = build(kid)
            elif kid.segment is Segment.ITEM:
                node.items = build(kid)
        return node

    root = group.paths.get(ROOT)
    if root is None:
        raise ValueError(f"nothing learned for {group.key.label}")
    return build(root)


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(doc: Any) -> str:
    """``doc`` as indented JSON that is valid UTF-8 whatever it holds: text is kept as it is
    (``École``, emoji), except a lone surrogate (a key or value the wire sent as a JSON escape
    such as ``"\\udc80"``), which UTF-8 cannot hold: it stays that escape, so every reader
    (Python, Node) gets back the very key or value a sample holds."""
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    # Outside its strings JSON is ASCII: a surrogate found is inside a string, as a character.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def pascal(text: str) -> str:
    """``pass.activated`` -> ``PassActivated``: ASCII letters and digits only."""
    words = re.findall(r"[A-Za-z0-9]+", text)
    name = "".join(w[:1].upper() + w[1:] for w in words)
    if not name:
        return ""
    return "T" + name if name[0] in "0123456789" else name  # ASCII only, as above


def root_name(key: GroupKey) -> str:
    if key.templates:
        return "PassTemplate"
    if key.topic is None:
        return "UnknownTopic"
    return pascal(key.topic) or "Payload"


class Names:
    """Unique names: a taken name gets a number (``Data2``)."""

    def __init__(self, reserved: set[str]) -> None:
        self.taken = set(reserved)

    def claim(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self.taken:
            name = f"{wanted}{n}"
            n += 1
        self.taken.add(name)
        return name
