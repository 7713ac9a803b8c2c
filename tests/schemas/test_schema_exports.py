"""Exports: the JSON Schema validates every sample (jsonschema), the TypeScript compiles under
``tsc --strict`` with every sample assigned to it, the pydantic module validates every sample, and
field names from the wire never break or inject code."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import jsonschema
import pydantic
import pytest
from genson import SchemaBuilder
from schema_helpers import activated, learned

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


def compile_ts(
    tsc: list[str], tmp_path: Path, files: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return subprocess.run(
        [*tsc, "--strict", "--noEmit", "--target", "es2020", "--module", "commonjs", *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def samples_ts(name: str, bodies: list[Any]) -> str:
    lines = [f'import type {{ {name} }} from "./schema";']
    for n, body in enumerate(bodies):
        lines.append(f"export const sample{n}: {name} = {json.dumps(body)};")
    return "\n".join(lines) + "\n"


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


def load_module(text: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module  # pydantic resolves the models' names through it
    try:
        exec(compile(text, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - the code under test
    finally:
        del sys.modules[name]
    return module


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
