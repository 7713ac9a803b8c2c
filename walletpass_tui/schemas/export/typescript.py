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


class _Writer:
    def __init__(self, root: str) -> None:
        self.names = Names({root})
        self.blocks: list[str] = []

    def type_of(self, node: Node, name: str) -> str:
        parts: list[str] = []
        for kind in node.types:
            if kind == OBJECT:
                part = self.object_type(node, name)
            elif kind == ARRAY:
                item = self.type_of(node.items, name + "Item") if node.items else "unknown"
                part = f"({item})[]" if "|" in item or " " in item else f"{item}[]"
            else:
                part = _SCALARS[kind]
            if part not in parts:
                parts.append(part)
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


def render(group: GroupSchema) -> str:
    root = tree(group)
    name = root_name(group.key)
    writer = _Writer(name)
    header = (
        f"// Learned from {group.samples} verified samples by walletpass-tui.\n"
        "// Optional fields (?) were missing from some samples.\n"
    )
    if root.types == [OBJECT]:
        writer.interface(root, name, exact=True)
        blocks = writer.blocks
    else:
        alias = f"export type {name} = {writer.type_of(root, name + 'Object')};"
        blocks = [*writer.blocks, alias]
    return header + "\n" + "\n\n".join(blocks) + "\n"
