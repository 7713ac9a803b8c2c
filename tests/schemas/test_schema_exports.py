"""Exports: the JSON Schema validates every sample (jsonschema), the TypeScript compiles under
``tsc --strict`` with every sample assigned to it, the pydantic module validates every sample, and
field names from the wire never break or inject code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pydantic
import pytest
from genson import SchemaBuilder
from hypothesis import example, given, settings
from hypothesis import strategies as st
from schema_helpers import activated, compile_ts, learned, load_module, samples_ts

from walletpass_tui.schemas.export import export
from walletpass_tui.schemas.export.json_schema import to_json_schema
from walletpass_tui.schemas.export.pydantic_code import model_name
from walletpass_tui.schemas.export.shape import pascal
from walletpass_tui.schemas.model import GroupKey

ACTIVATED = GroupKey.of_topic("pass.activated")

HOSTILE_KEYS = [
    "__proto__",
    "constructor",
    "class",
    "def",
    "None",
    "*/",
    "/* x */",
    'quo"te',
    "it's",
    "back\\slash",
    "new\nline",
    "\u2028",
    "\u202e",
    "emoji \U0001f600",
    "",
    "123",
    "a.b",
    "$ref",
    "json",
    "copy",
    "model_config",
    "model_dump",
    "_private",
    "__class__",
    "${x}`",
    "</script>",
    "BadKeysNested",
    "type",
    "toString",
    "valueOf",
]


def varied() -> list[Any]:
    """Samples with optional fields, mixed types, nested arrays of objects, and a map."""
    bodies: list[Any] = []
    for n in range(30):
        body = activated(n)
        body["data"]["score"] = n if n % 2 else n + 0.5
        body["data"]["items"] = [{"sku": f"s{n}", "qty": n}] + ([{"sku": "x"}] if n % 4 else [])
        body["data"]["balances"] = {f"pass_{n}_{k}": {"points": k} for k in range(3)}
        if n % 5 == 0:
            body["data"]["note"] = None if n % 10 else "hello"
        bodies.append(body)
    bodies.append([1, 2])  # once, the whole body was an array
    return bodies


def hostile() -> list[Any]:
    nested = {key: {key: n} for n, key in enumerate(HOSTILE_KEYS)}
    return [
        {"nested": nested, **{key: f"v{n}" for n, key in enumerate(HOSTILE_KEYS)}},
        {"nested": nested, **{key: n for n, key in enumerate(HOSTILE_KEYS[::2])}},
        {"nested": {}, **{key: [n] for n, key in enumerate(HOSTILE_KEYS[1::2])}},
    ]


def plain() -> list[Any]:
    return [{"value": n, "list": [True]} for n in range(3)]


CASES = {
    "varied": ("pass.activated", varied),
    "hostile": ("bad.keys*/", hostile),
    "none": ("none", plain),  # a topic whose name is a keyword once capitalised
    "object": ("object", plain),  # ... or a global type of TypeScript's
}


def group_of(case: str) -> tuple[Any, list[Any]]:
    topic, make = CASES[case]
    bodies = make()
    catalog = learned(bodies, topic=topic)
    return catalog.groups[GroupKey.of_topic(topic)], bodies


# -- JSON Schema ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES))
def test_the_json_schema_validates_every_sample(case: str) -> None:
    group, bodies = group_of(case)
    schema = json.loads(export(group, "jsonschema"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    validator = jsonschema.Draft202012Validator(schema)
    jsonschema.Draft202012Validator.check_schema(schema)
    for body in bodies:
        validator.validate(body)


def test_the_json_schema_requires_what_every_sample_has_and_keeps_integers() -> None:
    bodies = [activated(n) for n in range(10)]
    del bodies[3]["data"]["platform"]
    bodies[4]["data"]["count"] = 3
    schema = to_json_schema(learned(bodies).groups[ACTIVATED])
    data = schema["properties"]["data"]
    assert data["required"] == ["passId", "serialNumber", "tags"]
    assert data["properties"]["count"] == {
        "type": "integer",
        "description": "present in 10% of its parents",
    }
    # The same answer as genson, a library made for inferring schemas, given the same samples.
    builder = SchemaBuilder()
    for body in bodies:
        builder.add_object(body)
    genson = builder.to_schema()
    assert sorted(genson["properties"]["data"]["required"]) == sorted(data["required"])
    assert sorted(genson["required"]) == sorted(schema["required"])
    # And it says no to what it never saw: an integer where only strings came.
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(activated(99, serialNumber=5), schema)


# -- TypeScript -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_typescript_compiles_strictly_with_every_sample_assigned(
    tsc: list[str], tmp_path: Path
) -> None:
    files: dict[str, str] = {}
    for case in CASES:
        group, bodies = group_of(case)
        name = pascal(group.key.label)
        (tmp_path / case).mkdir()
        files[f"{case}/schema.ts"] = export(group, "typescript")
        files[f"{case}/samples.ts"] = samples_ts(name, bodies)
    # Once the body was an array: the name is a union then.
    assert (
        "export type PassActivated = PassActivatedObject | number[];" in files["varied/schema.ts"]
    )
    assert "export interface BadKeys {" in files["hostile/schema.ts"]
    assert "export interface None {" in files["none/schema.ts"]
    done = compile_ts(tsc, tmp_path, files)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_tsc_rejects_a_sample_of_another_shape(tsc: list[str], tmp_path: Path) -> None:
    group = learned([activated(n) for n in range(5)]).groups[ACTIVATED]
    wrong = activated(9, serialNumber=9)
    done = compile_ts(
        tsc,
        tmp_path,
        {
            "schema.ts": export(group, "typescript"),
            "samples.ts": samples_ts("PassActivated", [wrong]),
        },
    )
    assert done.returncode != 0 and "TS2322" in done.stdout  # number is not string


# -- pydantic -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES))
def test_the_pydantic_models_validate_every_sample(case: str) -> None:
    group, bodies = group_of(case)
    text = export(group, "pydantic")
    module = load_module(text, f"learned_{case}")
    model = getattr(module, model_name(group.key))
    assert issubclass(model, pydantic.BaseModel)
    for body in bodies:
        model.model_validate(body)


def test_the_pydantic_models_keep_wire_names_as_aliases() -> None:
    group, bodies = group_of("hostile")
    module = load_module(export(group, "pydantic"), "learned_aliases")
    parsed = module.BadKeys.model_validate(bodies[0])
    dumped = parsed.model_dump(by_alias=True)
    for key in HOSTILE_KEYS:
        assert dumped[key] == bodies[0][key]


def test_pydantic_rejects_a_sample_of_another_shape() -> None:
    group = learned([activated(n) for n in range(5)]).groups[ACTIVATED]
    module = load_module(export(group, "pydantic"), "learned_strict")
    with pytest.raises(pydantic.ValidationError):
        module.PassActivated.model_validate(activated(9, serialNumber=9))
    with pytest.raises(pydantic.ValidationError):
        module.PassActivated.model_validate(activated(9, passId=True))


# -- any field name ---------------------------------------------------------------------------------

# Every name a JSON key can be: any code point, lone surrogates (``"\\ud800"``) included, and the
# names each target language or library gives a meaning to.
MEANINGFUL = [
    *HOSTILE_KEYS,
    "Config",
    "model_fields",
    "model_validate",
    "fields",
    "schema_json",
    "from_orm",
    "BaseModel",
    "Field",
    "_pd",
    "_t",
    "typing",
    "pydantic",
    "self",
    "match",
    "case",
    "_",
    "__init__",
    "__dict__",
    "__root__",
    "root",
    "interface",
    "export",
    "any",
    "unknown",
    "never",
    "string",
    "number",
    "readonly",
    "declare",
    "keyof",
    "enum",
    "hasOwnProperty",
    "__defineGetter__",
    "Array",
    "Record",
    "Object",
    "Function",
    "T1",
    "TData",
]
KEYS = st.text(st.characters(exclude_categories=()), max_size=12) | st.sampled_from(MEANINGFUL)
NAMES = st.lists(KEYS, min_size=1, max_size=6, unique=True)


def in_utf8(value: Any) -> Any:
    """``value`` without the keys UTF-8 cannot hold (a lone surrogate): pydantic cannot name them."""
    if isinstance(value, dict):
        return {
            k: in_utf8(v) for k, v in value.items() if k.encode("utf-8", "replace").decode() == k
        }
    return value


def bodies_named(names: list[str]) -> list[Any]:
    """Every name at the top and in a nested object (required there), the first one also with
    a second type, the others optional at the top."""
    return [
        {
            **{n: f"v{i}" for i, n in enumerate(names)},
            "nested": {n: [i] for i, n in enumerate(names)},
        },
        {names[0]: 7, "nested": {n: [] for n in names}},
    ]


@settings(max_examples=60, deadline=None)
@given(names=NAMES)
@example(names=["Config"])
@example(names=["model_config", "Config", "BaseModel", "_pd"])
@example(names=["\ud800", "\udfff\U0001f600", "\x00", "\u2028"])
def test_the_pydantic_and_json_schema_exports_take_any_field_names(names: list[str]) -> None:
    bodies = bodies_named(names)
    group = learned(bodies, topic="any.names").groups[GroupKey.of_topic("any.names")]
    module = load_module(export(group, "pydantic"), "learned_any_names")
    model = getattr(module, model_name(group.key))
    for body in bodies:
        dumped = model.model_validate(body).model_dump(by_alias=True, exclude_unset=True)
        assert dumped == in_utf8(body)  # every name pydantic can hold, with its value
    schema = json.loads(export(group, "jsonschema"))
    jsonschema.Draft202012Validator.check_schema(schema)
    for body in bodies:
        jsonschema.Draft202012Validator(schema).validate(body)


@pytest.mark.slow
def test_the_typescript_export_compiles_for_any_field_names(tsc: list[str], tmp_path: Path) -> None:
    drawn: list[list[str]] = [MEANINGFUL[i : i + 6] for i in range(0, len(MEANINGFUL), 6)]

    @settings(max_examples=60, deadline=None)
    @given(names=NAMES)
    def draw(names: list[str]) -> None:
        drawn.append(names)

    draw()
    files: dict[str, str] = {}
    for n, names in enumerate(drawn):
        topic = f"any.names{n}"
        group = learned(bodies_named(names), topic=topic).groups[GroupKey.of_topic(topic)]
        (tmp_path / f"case{n}").mkdir()
        files[f"case{n}/schema.ts"] = export(group, "typescript")
        files[f"case{n}/samples.ts"] = samples_ts(pascal(topic), bodies_named(names))
    done = compile_ts(tsc, tmp_path, files)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
