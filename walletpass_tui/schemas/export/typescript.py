"""A group as TypeScript: an exported interface named after the topic (``pass.activated`` ->
``PassActivated``) and one per nested object, which ``tsc --strict`` accepts with each sample
assigned to it.

Wire text never becomes code: a property name that is not a plain identifier is written as a
JSON string literal (ASCII only, every quote, backslash, line break and ``*/`` escaped or
harmless inside it), and no field name or value is written into a comment. Interface names are
made of ASCII letters and digits only. No global type is referenced (``T[]``, index signatures),
so an interface that happens to be named ``Array`` or ``Record`` shadows nothing we use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from walletpass_tui.schemas.export.shape import Names, Node, pascal, root_name, tree
from walletpass_tui.schemas.jsonscan import ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING
from walletpass_tui.schemas.model import GroupSchema

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_QUOTED_ALWAYS = {"__proto__", "constructor", "prototype"}
_SCALARS = {STRING: "string", INTEGER: "number", NUMBER: "number", BOOLEAN: "boolean", NULL: "null"}
# Every object literal has these (from Object.prototype) in TypeScript's eyes, so an object
# without its own cannot be given to an optional property of that name typed otherwise.
_INHERITED = {
    "__proto__",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "constructor",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
}


def property_name(key: str) -> str:
    if _IDENTIFIER.fullmatch(key) and key not in _QUOTED_ALWAYS:
        return key
    return json.dumps(key, ensure_ascii=True)


def literal(value: Any) -> str:
    """A value of a value set as a TypeScript literal type: ``"apple"`` (escaped, ASCII only),
    ``7``, ``true``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=True)


class _Writer:
    def __init__(self, names: Names) -> None:
        self.names = names
        self.blocks: list[str] = []

    def type_of(self, node: Node, name: str) -> str:
        parts: list[str] = []
        for kind in node.types:
            if kind == OBJECT:
                found = [self.object_type(node, name)]
            elif kind == ARRAY:
                item = self.type_of(node.items, name + "Item") if node.items else "unknown"
                found = [f"({item})[]" if "|" in item or " " in item else f"{item}[]"]
            elif node.values is not None:  # every scalar it took, as literals
                found = [literal(v) for v in node.values]
            else:
                found = [_SCALARS[kind]]
            parts += [part for part in found if part not in parts]
        return " | ".join(parts) if parts else "unknown"

    def object_type(self, node: Node, name: str) -> str:
        if not node.props:
            if node.map_values is not None and not node.open:
                return f"{{ [key: string]: {self.type_of(node.map_values, name + 'Value')} }}"
            if node.map_values is None:
                return "{ [key: string]: unknown }"
        return self.interface(node, name)

    def interface(self, node: Node, wanted: str, *, exact: bool = False) -> str:
        name = wanted if exact else self.names.claim(wanted)
        lines = [f"export interface {name} {{"]
        for key, kid in node.props:
            optional = "" if kid.required else "?"
            presence = "" if kid.required else f"  /** present in {kid.presence:.0%} */\n"
            kid_type = self.type_of(kid, name + (pascal(key) or "Field"))
            if optional and key in _INHERITED:
                kid_type = "unknown"  # see _INHERITED
            lines.append(f"{presence}  {property_name(key)}{optional}: {kid_type};")
        if node.map_values is not None or node.open:
            values = "unknown"
            if node.map_values is not None and not node.props and not node.open:
                values = self.type_of(node.map_values, name + "Value")
            lines.append(f"  [key: string]: {values};")
        lines.append("}")
        self.blocks.append("\n".join(lines))
        return name


HEADER = (
    "// Learned from {samples} verified samples by walletpass-tui.\n"
    "// Optional fields (?) were missing from some samples; a union of literals is the values a\n"
    "// field took (at most 12 over at least 50).\n"
)


def _root(writer: _Writer, group: GroupSchema, name: str) -> list[str]:
    """The group's root type, named ``name`` (claimed already), and what it needs."""
    root = tree(group)
    if root.types == [OBJECT]:
        writer.interface(root, name, exact=True)
        return []
    return [f"export type {name} = {writer.type_of(root, name + 'Object')};"]


def render(group: GroupSchema) -> str:
    name = root_name(group.key)
    writer = _Writer(Names({name}))
    aliases = _root(writer, group, name)
    blocks = [*writer.blocks, *aliases]
    return HEADER.format(samples=group.samples) + "\n" + "\n\n".join(blocks) + "\n"


def render_all(groups: Sequence[GroupSchema]) -> str:
    """Every topic, one interface each, and their union ``WalletPassEvent``: a discriminated
    union over ``type`` when each topic's ``type`` took one value."""
    names = Names(set())
    union = names.claim("WalletPassEvent")
    roots = [names.claim(root_name(group.key)) for group in groups]
    writer = _Writer(names)
    aliases: list[str] = []
    for group, name in zip(groups, roots, strict=True):
        aliases += _root(writer, group, name)
    members = " | ".join(roots) if roots else "never"
    blocks = [*writer.blocks, *aliases, f"export type {union} = {members};"]
    samples = sum(group.samples for group in groups)
    return HEADER.format(samples=samples) + "\n" + "\n\n".join(blocks) + "\n"
