"""Value sets: a field that took at most 12 values over at least 50 is shown with each value's
share, a value outside its set is a finding of its own (``new_value``), and the exports write the
set as literals (JSON Schema ``enum``/``const``, TypeScript unions, pydantic ``Literal``), with
every topic in one document as a union discriminated by ``type``, and an OpenAPI 3.1 document a
real validator accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pydantic
import pytest
from openapi_spec_validator import validate
from schema_helpers import activated, compile_ts, delivery, learned, load_module, samples_ts

from walletpass_tui.schemas.catalog import Catalog
from walletpass_tui.schemas.export import export, export_all
from walletpass_tui.schemas.model import GroupKey, GroupSchema
from walletpass_tui.schemas.paths import MAX_VALUES, VALUE_SAMPLES
from walletpass_tui.schemas.records import DriftRecord, FieldInfo

ACTIVATED = GroupKey.of_topic("pass.activated")
DEACTIVATED = GroupKey.of_topic("pass.deactivated")


def fields(group: GroupSchema) -> dict[str, FieldInfo]:
    return {s.path: FieldInfo.of(group, s) for s in group.tree()}


def steady(count: int) -> Catalog:
    return learned([activated(n) for n in range(count)])


# Values made to break generated code: each must stay a literal.
HOSTILE_VALUES = ["*/", '"q', "back\\slash", "new\nline", "\u2028", "${x}`", "</script>", "it's"]
HOSTILE_VALUES += ["emoji \U0001f600", "", "'''", "\x00"]


def deactivated(n: int) -> dict[str, Any]:
    reason = ("expired", "revoked")[n % 2]
    data = {"passId": f"pass_{n:04d}", "reason": reason, "label": HOSTILE_VALUES[n % 12]}
    return {"type": "pass.deactivated", "data": data}


def both(count: int = 60) -> Catalog:
    catalog = Catalog()
    for n in range(count):
        catalog.learn(delivery(2 * n, activated(n)))
        catalog.learn(delivery(2 * n + 1, deactivated(n), topic="pass.deactivated"))
    return catalog


# -- learning and showing them --------------------------------------------------------------------


def test_a_small_stable_set_of_values_is_learned_with_each_values_share() -> None:
    found = fields(steady(VALUE_SAMPLES - 1).groups[ACTIVATED])
    assert found["data.platform"].values is None  # 49 values: not a set yet
    found = fields(steady(60).groups[ACTIVATED])
    assert found["type"].values == (("pass.activated", 60),)
    assert found["data.platform"].values == (("apple", 30), ("google", 30))
    assert found["data.platform"].shares() == [('"apple"', 0.5), ('"google"', 0.5)]
    assert found["data.passId"].values is None  # 60 different ids: no set
    assert found["data.tags[]"].values is None  # 40 values so far
    assert found["data.platform"].to_json()["values"] == [
        {"value": "apple", "count": 30, "share": 0.5},
        {"value": "google", "count": 30, "share": 0.5},
    ]


def test_a_value_outside_the_set_is_a_finding_of_its_own_counted_again() -> None:
    catalog = steady(60)
    (found,) = catalog.learn(delivery(100, activated(100, platform="huawei")))
    record = DriftRecord.of(found)
    assert record.describe() == (
        'pass.activated data.platform: new value "huawei" (was one of "apple"|"google")'
    )
    assert (record.kind, record.severity, record.was, record.now) == (
        "new_value",
        "warning",
        '"apple"|"google"',
        '"huawei"',
    )
    assert catalog.learn(delivery(101, activated(101, platform="huawei"))) == []
    assert found.count == 2
    (other,) = catalog.learn(delivery(102, activated(102, platform="samsung")))
    assert other.now == '"samsung"' and other.was == '"apple"|"google"|"huawei"'


def test_the_set_ends_past_12_values_or_at_a_number_and_says_nothing_more() -> None:
    catalog = steady(60)
    findings = []
    for n in range(MAX_VALUES):  # apple, google and these: 14 values
        findings += catalog.learn(delivery(200 + n, activated(200 + n, platform=f"brand{n}")))
    # Each one outside the set is told, the 13th too; then there is no set to be outside of.
    assert [f.now for f in findings] == [f'"brand{n}"' for n in range(MAX_VALUES - 1)]
    group = catalog.groups[ACTIVATED]
    assert group.paths["data.platform"].values is None
    assert catalog.learn(delivery(300, activated(300, platform="another"))) == []
    # A number (not an integer) where a set of strings was: a change of type, and no set after.
    (changed,) = catalog.learn(delivery(301, {**activated(301), "type": 7.5}))
    assert (changed.kind.value, changed.path) == ("type_changed", "type")
    assert group.paths["type"].values is None


def test_values_keep_their_json_type() -> None:
    bodies = [{"flag": n % 2 == 0, "code": n % 3, "text": str(n % 3)} for n in range(60)]
    group = learned(bodies, topic="t").groups[GroupKey.of_topic("t")]
    found = fields(group)
    assert found["flag"].values == ((False, 30), (True, 30))
    assert found["code"].values == ((0, 20), (1, 20), (2, 20))
    assert found["text"].values == (("0", 20), ("1", 20), ("2", 20))
    catalog = Catalog()
    for n, body in enumerate(bodies):
        catalog.learn(delivery(n, body, topic="t"))
    (found_text,) = catalog.learn(delivery(99, {"flag": True, "code": 1, "text": 1}, topic="t"))
    assert found_text.kind.value == "type_changed"  # 1 is no "1"


# -- exports --------------------------------------------------------------------------------------


def test_the_json_schema_takes_a_set_as_enum_or_const() -> None:
    group = steady(60).groups[ACTIVATED]
    schema = json.loads(export(group, "jsonschema"))
    assert schema["properties"]["type"] == {"const": "pass.activated"}
    assert schema["properties"]["data"]["properties"]["platform"] == {"enum": ["apple", "google"]}
    validator = jsonschema.Draft202012Validator(schema)
    for n in range(60):
        validator.validate(activated(n))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(activated(99, platform="huawei"))


def test_the_pydantic_models_take_a_set_of_strings_as_literal() -> None:
    group = steady(60).groups[ACTIVATED]
    text = export(group, "pydantic")
    assert "_t.Literal['apple', 'google']" in text
    module = load_module(text, "learned_values")
    for n in range(60):
        module.PassActivated.model_validate(activated(n))
    with pytest.raises(pydantic.ValidationError):
        module.PassActivated.model_validate(activated(99, platform="huawei"))


def test_every_topic_in_one_document_is_a_union_discriminated_by_type() -> None:
    catalog = both()
    groups = [catalog.groups[ACTIVATED], catalog.groups[DEACTIVATED]]
    module = load_module(export_all(groups, "pydantic"), "learned_all")
    adapter = pydantic.TypeAdapter(module.WalletPassEvent)
    assert type(adapter.validate_python(activated(1))).__name__ == "PassActivated"
    assert type(adapter.validate_python(deactivated(1))).__name__ == "PassDeactivated"
    with pytest.raises(pydantic.ValidationError, match="does not match any of the expected tags"):
        adapter.validate_python({**deactivated(1), "type": "pass.expired"})
    for n in range(60):  # each hostile value is one of its literals
        assert adapter.validate_python(deactivated(n)).data.label == HOSTILE_VALUES[n % 12]
    with pytest.raises(pydantic.ValidationError):
        adapter.validate_python(
            {**deactivated(1), "data": {**deactivated(1)["data"], "label": "x"}}
        )
    schema = json.loads(export_all(groups, "jsonschema"))
    assert set(schema["$defs"]) == {"PassActivated", "PassDeactivated"}
    label = schema["$defs"]["PassDeactivated"]["properties"]["data"]["properties"]["label"]
    assert sorted(label["enum"]) == sorted(HOSTILE_VALUES)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(activated(1))
    validator.validate(deactivated(1))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**deactivated(1), "type": "pass.expired"})


@pytest.mark.slow
def test_the_typescript_union_is_discriminated_by_type(tsc: list[str], tmp_path: Path) -> None:
    catalog = both()
    groups = [catalog.groups[ACTIVATED], catalog.groups[DEACTIVATED]]
    schema = export_all(groups, "typescript")
    assert "export type WalletPassEvent = PassActivated | PassDeactivated;" in schema
    assert '  type: "pass.activated";' in schema and '"apple" | "google"' in schema
    narrowing = (
        'import type { WalletPassEvent } from "./schema";\n'
        "export function reason(event: WalletPassEvent): string {\n"
        '  return event.type === "pass.deactivated" ? event.data.reason : event.data.platform;\n'
        "}\n"
    )
    samples = samples_ts("WalletPassEvent", [activated(1), *(deactivated(n) for n in range(12))])
    done = compile_ts(
        tsc, tmp_path, {"schema.ts": schema, "samples.ts": samples, "narrowing.ts": narrowing}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    outside = samples_ts("WalletPassEvent", [activated(2, platform="huawei")])
    done = compile_ts(tsc, tmp_path, {"schema.ts": schema, "outside.ts": outside})
    assert done.returncode != 0 and "huawei" in done.stdout


def test_the_openapi_document_is_valid_with_a_webhook_per_topic() -> None:
    catalog = both()
    hostile = "evil\"topic'</script>\n"
    for n in range(3):
        catalog.learn(delivery(500 + n, {"a": n}, topic=hostile))
    groups = [catalog.groups[k] for k in sorted(catalog.groups)]
    doc = json.loads(export_all(groups, "openapi"))
    validate(doc)  # openapi-spec-validator: an OpenAPI 3.1 document
    assert doc["openapi"] == "3.1.0"
    assert set(doc["webhooks"]) == {"pass.activated", "pass.deactivated", hostile}
    post = doc["webhooks"]["pass.activated"]["post"]
    assert [(p["name"], p["in"], p["required"]) for p in post["parameters"]] == [
        ("webhook-id", "header", True),
        ("webhook-timestamp", "header", True),
        ("webhook-signature", "header", True),
    ]
    assert list(post["responses"]) == ["2XX"]
    ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/PassActivated"
    body = doc["components"]["schemas"]["PassActivated"]
    for n in range(60):
        jsonschema.Draft202012Validator(body).validate(activated(n))
    one = json.loads(export(catalog.groups[DEACTIVATED], "openapi"))
    validate(one)
    assert list(one["webhooks"]) == ["pass.deactivated"]
