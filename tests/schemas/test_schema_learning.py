"""Pure learning: what a group learns from verified bodies, and what never teaches it."""

from __future__ import annotations

import json

from schema_helpers import T0, activated, delivery, learned

from walletpass_tui.schemas.catalog import Catalog
from walletpass_tui.schemas.model import TEMPLATES, GroupKey
from walletpass_tui.schemas.records import FieldInfo
from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt

ACTIVATED = GroupKey.of_topic("pass.activated")


def fields(catalog: Catalog, key: GroupKey = ACTIVATED) -> dict[str, FieldInfo]:
    group = catalog.groups[key]
    return {s.path: FieldInfo.of(group, s) for s in group.tree()}


def test_every_path_with_its_types_presence_first_value_and_sightings() -> None:
    bodies = [activated(n) for n in range(10)]
    bodies[3]["data"]["serialNumber"] = 42  # an integer once
    del bodies[4]["data"]["platform"]
    del bodies[5]["data"]["platform"]
    bodies[0]["data"]["note"] = "x" * 200
    catalog = learned(bodies)
    found = fields(catalog)
    assert found["data.serialNumber"].types == {"string": 9, "integer": 1}
    assert found["data.platform"].presence == 0.8
    assert found["data.passId"].presence == 1.0
    assert found["data.note"].presence == 0.1
    assert found["data.note"].example == "x" * 80  # cut to 80 characters
    assert found["data.passId"].example == "pass_0000"  # the first value seen
    assert found["data.tags"].types == {"array": 10}
    # tags[] is held by the non-empty arrays only: n % 3 != 0 for n in 0..9 is 6 of 10.
    assert found["data.tags[]"].presence == 0.6
    assert found["data.tags[]"].types == {"string": 6}
    assert (
        found["data.passId"].first_seen_ms == T0
        and found["data.passId"].first_webhook_id == "msg_00000"
    )
    assert found["data.passId"].last_seen_ms == T0 + 9000
    assert found["data.passId"].last_webhook_id == "msg_00009"
    assert found["data.note"].last_webhook_id == "msg_00000"
    assert catalog.groups[ACTIVATED].samples == 10


def test_the_tree_lists_children_after_their_parent_in_the_order_first_seen() -> None:
    bodies = [activated(n) for n in range(3)]
    bodies.append({**activated(3), "meta": {"source": "api"}})  # a new top-level key first ...
    later = activated(4)
    later["data"]["extra"] = True  # ... then a new child of an earlier parent
    bodies.append(later)
    assert list(fields(learned(bodies))) == [
        "$",
        "type",
        "timestamp",
        "data",
        "data.passId",
        "data.serialNumber",
        "data.platform",
        "data.tags",
        "data.tags[]",
        "data.extra",
        "meta",
        "meta.source",
    ]


def test_integers_stay_integers_and_booleans_are_not_integers() -> None:
    found = fields(learned([{"a": 1, "b": 1.0, "c": True, "d": None, "e": 1e999, "f": [1, 2.5]}]))
    assert found["a"].types == {"integer": 1}
    assert found["b"].types == {"number": 1}
    assert found["c"].types == {"boolean": 1}
    assert found["d"].types == {"null": 1}
    assert found["e"].types == {"number": 1}  # inf in Python: a number
    assert found["f[]"].types == {"integer": 1, "number": 1}


def test_a_rejected_delivery_teaches_nothing() -> None:
    catalog = Catalog()
    assert catalog.learn(delivery(1, activated(1), verdict=REJECTED)) == []
    attempt = Attempt(
        received_at_ms=T0,
        method="POST",
        path="/webhooks",
        headers=(),
        body=json.dumps(activated(2)).encode(),
        verdict=REJECTED,
        reason="no signature matches",
        status=401,
        topic="pass.activated",
    )
    assert catalog.learn_attempt(attempt) == []
    assert catalog.groups == {}
    catalog.learn_attempt(Attempt(**{**attempt.__dict__, "verdict": VERIFIED}))
    assert catalog.groups[ACTIVATED].samples == 1


def test_topic_unknown_and_a_topic_named_templates_are_groups_of_their_own() -> None:
    catalog = Catalog()
    catalog.learn(delivery(1, {"a": 1}, topic=None))
    catalog.learn(delivery(2, {"b": 1}, topic="templates"))
    catalog.learn_templates([{"id": "tpl_1"}], T0)
    assert set(catalog.groups) == {
        GroupKey.of_topic(None),
        GroupKey.of_topic("templates"),
        TEMPLATES,
    }
    assert GroupKey.of_topic(None).label == "topic unknown"
    assert set(fields(catalog, TEMPLATES)) == {"$", "id"}


def test_a_verified_body_that_is_not_json_is_counted_not_learned() -> None:
    catalog = Catalog()
    catalog.learn(delivery(1, b"\xff\xfe not json"))
    catalog.learn(delivery(2, b'{"a": 1'))
    group = catalog.groups[ACTIVATED]
    assert (group.samples, group.not_json, group.paths) == (0, 2, {})


def test_the_same_templates_listed_again_teach_nothing_new() -> None:
    catalog = Catalog()
    templates = [{"id": f"tpl_{n}", "name": "Gold"} for n in range(5)]
    catalog.learn_templates(templates, T0)
    catalog.learn_templates(templates, T0 + 1000)
    assert catalog.groups[TEMPLATES].samples == 5
    catalog.learn_templates([{"id": "tpl_0", "name": "Gold", "updatedAt": "2026"}], T0 + 2000)
    assert catalog.groups[TEMPLATES].samples == 6


def test_an_object_used_as_a_map_is_folded_into_one_path() -> None:
    def body(n: int, keys: int) -> dict[str, object]:
        balances = {f"pass_{n}_{k:03d}": {"points": k} for k in range(keys)}
        return {"data": {"balances": {**balances, "currency": "EUR"}}}

    fifty = fields(learned([body(0, 50)]))
    assert "data.balances.pass_0_049.points" in fifty  # 50 keys: not more than 50, still named
    assert "data.balances{*}" not in fifty
    folded = fields(learned([body(0, 30), body(1, 30)]))  # 60 distinct id-like keys over two
    assert "data.balances{*}" in folded and "data.balances{*}.points" in folded
    assert not [p for p in folded if "pass_" in p]
    assert folded["data.balances{*}.points"].types == {"integer": 60}
    assert folded["data.balances.currency"].presence == 1.0  # not id-like: stays named


def test_quoted_keys_never_share_a_path() -> None:
    found = fields(learned([{"a.b": 1, "a": {"b": "x"}, "[]": 2, "{*}": 3, "$": 4}]))
    assert found['["a.b"]'].types == {"integer": 1}
    assert found["a.b"].types == {"string": 1}
    assert {'["[]"]', '["{*}"]', '["$"]'} <= set(found)
