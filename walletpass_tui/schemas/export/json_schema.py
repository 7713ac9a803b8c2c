"""A group as a JSON Schema (draft 2020-12) that every sample it learned from validates.

A path present in every parent that could hold it is ``required``; integers stay ``integer``; a
path whose values form a small set (at most 12 over at least 50) takes them as ``enum`` (``const``
for one); an object used as a map gets ``patternProperties`` keyed by the id pattern; unknown
properties are allowed everywhere (a new field is drift to report, not a reason to reject a
delivery). Several topics make one document: each in ``$defs``, the body any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from walletpass_tui.schemas.export.shape import Names, Node, json_text, root_name, tree
from walletpass_tui.schemas.jsonscan import ARRAY, OBJECT
from walletpass_tui.schemas.model import GroupSchema
from walletpass_tui.schemas.paths import ID_PATTERN

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _scalars(node: Node) -> dict[str, Any]:
    values = node.values or []
    return {"const": values[0]} if len(values) == 1 else {"enum": list(values)}


def _node(node: Node) -> dict[str, Any]:
    alternatives: list[dict[str, Any]] = []
    for kind in node.types:
        if kind == OBJECT:
            schema: dict[str, Any] = {"type": "object"}
            if node.props:
                schema["properties"] = {key: _node(kid) for key, kid in node.props}
                required = [key for key, kid in node.props if kid.required]
                if required:
                    schema["required"] = required
            if node.map_values is not None:
                schema["patternProperties"] = {ID_PATTERN: _node(node.map_values)}
            alternatives.append(schema)
        elif kind == ARRAY:
            schema = {"type": "array"}
            if node.items is not None:
                schema["items"] = _node(node.items)
            alternatives.append(schema)
        elif node.values is None:
            alternatives.append({"type": kind})
        elif not any("enum" in a or "const" in a for a in alternatives):
            alternatives.append(_scalars(node))  # every scalar type at once: its values
    if len(alternatives) == 1:
        out = alternatives[0]
    elif all(list(a) == ["type"] for a in alternatives):
        out = {"type": [a["type"] for a in alternatives]}
    else:
        out = {"anyOf": alternatives}
    stats = node.stats
    if stats.parent is not None and not node.required:
        out = {**out, "description": f"present in {node.presence:.0%} of its parents"}
    return out


def to_json_schema(group: GroupSchema) -> dict[str, Any]:
    body = _node(tree(group))
    return {
        "$schema": DRAFT,
        "title": group.key.label,
        "description": f"Learned from {group.samples} verified samples.",
        **body,
    }


def component(group: GroupSchema) -> dict[str, Any]:
    """The group's schema as one of several (no ``$schema``: the document says it)."""
    return {k: v for k, v in to_json_schema(group).items() if k != "$schema"}


def named(groups: Sequence[GroupSchema], reserved: set[str] | None = None) -> list[str]:
    """A unique name for each group (``PassActivated``; ``PassActivated2`` for a clash)."""
    names = Names(set(reserved or ()))
    return [names.claim(root_name(group.key)) for group in groups]


def render(group: GroupSchema) -> str:
    return json_text(to_json_schema(group))


def render_all(groups: Sequence[GroupSchema]) -> str:
    """Every topic in one document: the body is one of them (``anyOf`` over ``$defs``: with a
    ``type`` of one value each, only one fits)."""
    names = named(groups)
    doc = {
        "$schema": DRAFT,
        "title": "Wallet Pass Service webhooks",
        "description": "Each topic's body, learned from verified deliveries by walletpass-tui.",
        "anyOf": [{"$ref": f"#/$defs/{name}"} for name in names],
        "$defs": {name: component(group) for name, group in zip(names, groups, strict=True)},
    }
    return json_text(doc)
