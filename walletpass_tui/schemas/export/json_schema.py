"""A group as a JSON Schema (draft 2020-12) that every sample it learned from validates.

A path present in every parent that could hold it is ``required``; integers stay ``integer``; an
object used as a map gets ``patternProperties`` keyed by the id pattern; unknown properties are
allowed everywhere (a new field is drift to report, not a reason to reject a delivery).
"""

from __future__ import annotations

import json
from typing import Any

from walletpass_tui.schemas.export.shape import Node, tree
from walletpass_tui.schemas.jsonscan import ARRAY, OBJECT
from walletpass_tui.schemas.model import GroupSchema
from walletpass_tui.schemas.paths import ID_PATTERN

DRAFT = "https://json-schema.org/draft/2020-12/schema"


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
        else:
            alternatives.append({"type": kind})
    if len(alternatives) == 1:
        out = alternatives[0]
    elif all(len(a) == 1 for a in alternatives):
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


def render(group: GroupSchema) -> str:
    return json.dumps(to_json_schema(group), indent=2, ensure_ascii=False) + "\n"
