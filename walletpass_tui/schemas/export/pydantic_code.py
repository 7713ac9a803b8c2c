"""A group as a Python module of pydantic (v2) models: a ``BaseModel`` named after the topic and
one per nested object, whose ``model_validate`` accepts each sample body. Text only: pydantic is
not imported here.

Wire text never becomes code: every field whose name is not a plain ASCII identifier that is
safe as a model attribute (not a keyword, no leading underscore, nothing ``BaseModel`` defines,
no ``model_`` prefix, not one of the module's names) gets a made-up attribute name and its
real name as ``alias``, written as a string literal by ``ascii()`` (escaped, ASCII only). The module refers to
pydantic and typing only through ``_pd`` and ``_t``, which no field or class name can shadow.
Types are strict (``StrictInt`` stays an integer, ``true`` is no integer); an optional field
defaults to None. A name pydantic cannot take at all (one holding a lone surrogate, which JSON can
escape but UTF-8 cannot hold) is left out of its model, which then ignores keys it does not name;
a value set holding such a value is exported as any string (``StrictStr``), not as literals.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence

from walletpass_tui.schemas.export.shape import Names, Node, pascal, root_name, tree
from walletpass_tui.schemas.jsonscan import ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING
from walletpass_tui.schemas.model import GroupKey, GroupSchema

_SCALARS = {
    STRING: "_pd.StrictStr",
    INTEGER: "_pd.StrictInt",
    NUMBER: "_pd.StrictFloat",
    BOOLEAN: "_pd.StrictBool",
    NULL: "None",
}
# What a BaseModel subclass must not define as a field (pydantic's own attributes and methods,
# and ``Config``, which pydantic reads as the model's configuration class).
_BASEMODEL = {
    "Config",
    "construct",
    "copy",
    "dict",
    "fields",
    "from_orm",
    "json",
    "parse_file",
    "parse_obj",
    "parse_raw",
    "schema",
    "schema_json",
    "update_forward_refs",
    "validate",
}
_RESERVED_CLASSES = {"None", "True", "False"}
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _safe_attribute(key: str) -> bool:
    return (
        _PLAIN.fullmatch(key) is not None
        and not keyword.iskeyword(key)
        and not keyword.issoftkeyword(key)
        and key not in _BASEMODEL
        and not key.startswith("model_")
    )


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: pydantic cannot name it
        return False
    return True


def _literal(text: str) -> str:
    """A Python string literal for any text, ASCII only (``\\U0001f600``, ``\\ud800``, ``\\n``)."""
    return ascii(text)


class _Writer:
    def __init__(self, roots: set[str]) -> None:
        self.classes = Names(_RESERVED_CLASSES | roots)
        self.blocks: list[str] = []
        self.class_names: set[str] = set(roots)
        # Each model's field named "type" on the wire: its attribute, when it took one string.
        self.tags: dict[str, str] = {}

    def type_of(self, node: Node, name: str) -> str:
        parts: list[str] = []
        for kind in node.types:
            if kind == OBJECT:
                part = self.object_type(node, name)
            elif kind == ARRAY:
                item = self.type_of(node.items, name + "Item") if node.items else "_t.Any"
                part = f"_t.List[{item}]"
            elif kind == STRING and node.values is not None:
                # Strings of a value set are literals (numbers and booleans keep their strict
                # types: pydantic's Literal would take true for 1).
                # A value holding a lone surrogate cannot be a literal (pydantic refuses to build
                # the model): such a set is any string.
                texts = [v for v in node.values if isinstance(v, str)]
                if all(_utf8(t) for t in texts):
                    part = f"_t.Literal[{', '.join(_literal(t) for t in texts)}]"
                else:
                    part = _SCALARS[STRING]
            else:
                part = _SCALARS[kind]
            if part not in parts:
                parts.append(part)
        return " | ".join(parts) if parts else "_t.Any"

    def object_type(self, node: Node, name: str) -> str:
        if not node.props:
            if node.map_values is not None and not node.open:
                return f"_t.Dict[str, {self.type_of(node.map_values, name + 'Value')}]"
            if node.map_values is None:
                return "_t.Dict[str, _t.Any]"
        return self.model(node, name)

    def model(self, node: Node, wanted: str, *, exact: bool = False) -> str:
        name = wanted if exact else self.classes.claim(wanted)
        self.class_names.add(name)
        fields: list[str] = []
        # pydantic takes only names that are UTF-8 text: one holding a lone surrogate (a JSON
        # escape such as "\ud800") is left out, and the model ignores what it does not name.
        props = [(key, kid) for key, kid in node.props if _utf8(key)]
        # Every class this one's annotations name is claimed first, so no field can shadow one.
        kid_types = [self.type_of(kid, name + (pascal(key) or "Field")) for key, kid in props]
        attributes = Names(self.classes.taken | _BASEMODEL)
        for (key, kid), kid_type in zip(props, kid_types, strict=True):
            if _safe_attribute(key) and key not in attributes.taken:
                attribute = attributes.claim(key)
                alias = None
            else:
                plain = re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_") or "x"
                attribute = attributes.claim("field_" + plain)
                alias = key
            args = [] if kid.required else ["default=None"]
            if alias is not None:
                args.append(f"alias={_literal(alias)}")
            nullable = kid.required or "None" in kid_type.split(" | ")
            annotation = kid_type if nullable else f"{kid_type} | None"
            if (
                key == "type"
                and kid.required
                and kid_type.startswith("_t.Literal[")
                and (kid.values is not None and len(kid.values) == 1)
            ):
                self.tags[name] = attribute
            if args:
                fields.append(f"    {attribute}: {annotation} = _pd.Field({', '.join(args)})")
            else:
                fields.append(f"    {attribute}: {annotation}")
        keeps = (node.open or node.map_values is not None) and len(props) == len(node.props)
        extra = "allow" if keeps else "ignore"
        lines = [
            f"class {name}(_pd.BaseModel):",
            f'    model_config = _pd.ConfigDict(extra="{extra}")',
            "",
            *fields,
        ]
        self.blocks.append("\n".join(lines))
        return name


def model_name(key: GroupKey) -> str:
    """The root model's name: the topic in PascalCase (``None`` and the like get ``Model``)."""
    name = root_name(key)
    return name + "Model" if name in _RESERVED_CLASSES else name


HEADER = (
    '"""Learned from {samples} verified samples by walletpass-tui."""\n\n'
    "import typing as _t\n\nimport pydantic as _pd\n"
)


def _root(writer: _Writer, group: GroupSchema, name: str) -> None:
    root = tree(group)
    if root.types == [OBJECT]:
        writer.model(root, name, exact=True)
    else:
        inner = writer.type_of(root, name + "Object")
        writer.blocks.append(f"class {name}(_pd.RootModel[{inner}]):\n    pass")


def render(group: GroupSchema) -> str:
    name = model_name(group.key)
    writer = _Writer({name})
    _root(writer, group, name)
    return HEADER.format(samples=group.samples) + "\n\n" + "\n\n\n".join(writer.blocks) + "\n"


def render_all(groups: Sequence[GroupSchema]) -> str:
    """Every topic's models, and ``WalletPassEvent``: their union, discriminated by ``type``
    when each topic's ``type`` took one string (validate with ``_pd.TypeAdapter``)."""
    names = Names(set(_RESERVED_CLASSES))
    union = names.claim("WalletPassEvent")
    roots = [names.claim(model_name(group.key)) for group in groups]
    writer = _Writer({union, *roots})
    for group, name in zip(groups, roots, strict=True):
        _root(writer, group, name)
    tags = {writer.tags.get(name) for name in roots}
    if len(roots) == 1:
        alias = f"{union} = {roots[0]}"
    elif len(tags) == 1 and None not in tags:
        members = ", ".join(roots)
        (tag,) = tags
        alias = f"{union} = _t.Annotated[_t.Union[{members}], _pd.Field(discriminator={tag!r})]"
    else:
        alias = f"{union} = _t.Union[{', '.join(roots)}]" if roots else f"{union} = _t.Any"
    samples = sum(group.samples for group in groups)
    blocks = [*writer.blocks, alias]
    return HEADER.format(samples=samples) + "\n\n" + "\n\n\n".join(blocks) + "\n"
