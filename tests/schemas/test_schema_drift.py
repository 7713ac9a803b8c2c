"""Drift: each kind found once per path, counted on repeats, and never from a steady shape."""

from __future__ import annotations

from schema_helpers import activated, delivery, learned

from walletpass_tui.schemas.catalog import Catalog
from walletpass_tui.schemas.drift import DRIFT_AFTER, WARM_UP_REPORTED
from walletpass_tui.schemas.model import GroupKey
from walletpass_tui.schemas.records import DriftRecord
from walletpass_tui.webhooks.models import REJECTED

ACTIVATED = GroupKey.of_topic("pass.activated")


def steady(count: int = DRIFT_AFTER) -> Catalog:
    return learned([activated(n) for n in range(count)])


def summary(catalog: Catalog) -> dict[tuple[str, str], tuple[str | None, str | None, int]]:
    """The first finding of each path and kind (the earliest, for several type changes)."""
    group = catalog.groups[ACTIVATED]
    out: dict[tuple[str, str], tuple[str | None, str | None, int]] = {}
    for f in sorted(group.findings.values(), key=lambda f: f.source.seen_at_ms, reverse=True):
        out[(f.path, f.kind.value)] = (f.was, f.now, f.count)
    return out


def test_a_steady_shape_shows_no_drift() -> None:
    catalog = steady(200)  # optional tags[] and alternating values included
    assert catalog.groups[ACTIVATED].findings == {}


def test_no_drift_before_20_samples() -> None:
    catalog = steady(DRIFT_AFTER - 2)
    assert catalog.learn(delivery(98, activated(98, serialNumber=1, platform=None, extra=1))) == []
    # The 20th says what the first 20 disagreed on: not drift from what they agreed on.
    found = catalog.learn(delivery(99, activated(99)))
    assert {f.kind.value for f in found} == {"warm_up_optional", "warm_up_types"}
    assert sorted(f.path for f in found) == ["data.extra", "data.platform", "data.serialNumber"]


def test_each_kind_is_found_once_and_counted_on_repeats() -> None:
    catalog = steady()
    odd = activated(100, serialNumber=12345, platform=None, channel="web")
    found = catalog.learn(delivery(100, odd))
    assert sorted((f.kind.value, f.path, f.was, f.now) for f in found) == [
        ("field_added", "data.channel", None, "string"),
        ("field_missing", "data.platform", "string", None),
        ("type_changed", "data.serialNumber", "string", "integer"),
    ]
    assert {f.kind.severity for f in found} == {"info", "warning", "breaking"}
    assert {(f.source.attempt_id, f.source.webhook_id) for f in found} == {(100, "msg_00100")}
    for n in range(101, 104):  # the same change again: counted, not reported again
        assert (
            catalog.learn(delivery(n, activated(n, serialNumber=n, platform=None, channel="x")))
            == []
        )
    assert summary(catalog) == {
        ("data.channel", "field_added"): (None, "string", 4),
        ("data.platform", "field_missing"): ("string", None, 4),
        ("data.serialNumber", "type_changed"): ("string", "integer", 4),
    }
    # A steady body again shows none of them, so counts stay.
    catalog.learn(delivery(200, activated(200)))
    assert summary(catalog)[("data.serialNumber", "type_changed")][2] == 4
    # Another type at the same path is a change of its own, reported once, then counted.
    null = activated(201)
    null["data"]["serialNumber"] = None
    (second,) = catalog.learn(delivery(201, null))
    assert (second.kind.value, second.was, second.now) == ("type_changed", "string|integer", "null")
    assert catalog.learn(delivery(202, null)) == []
    assert summary(catalog)[("data.serialNumber", "type_changed")][2] == 4  # integer's stays


def test_a_second_different_type_change_at_one_path_is_its_own_finding() -> None:
    catalog = steady()
    (added,) = catalog.learn(delivery(100, activated(100, x="a")))
    assert (added.kind.value, added.path) == ("field_added", "data.x")
    for n in range(101, 125):
        catalog.learn(delivery(n, activated(n, x="b")))
    found = catalog.learn(delivery(200, activated(200, x=5)))
    assert [DriftRecord.of(f).describe() for f in found] == [
        "pass.activated data.x: string -> integer"
    ]
    found = catalog.learn(delivery(201, activated(201, x={"nested": True})))
    assert [DriftRecord.of(f).describe() for f in found] == [
        "pass.activated data.x: string|integer -> object"
    ]
    catalog.learn(delivery(202, activated(202, x=6)))  # each is counted on its own
    counts = {(f.path, f.now): f.count for f in catalog.groups[ACTIVATED].findings.values()}
    assert counts[("data.x", "integer")] == 2 and counts[("data.x", "object")] == 1


def test_the_record_reads_as_one_line_and_one_json_shape() -> None:
    catalog = steady()
    (finding,) = catalog.learn(delivery(100, activated(100, serialNumber=7)))
    record = DriftRecord.of(finding)
    assert record.describe() == "pass.activated data.serialNumber: string -> integer"
    assert set(record.to_json()) >= {
        "topic",
        "path",
        "kind",
        "was",
        "now",
        "webhook_id",
        "seen_at",
        "count",
    }
    assert record.to_json()["topic"] == "pass.activated"


def test_an_integer_where_numbers_were_seen_is_no_drift_but_a_number_where_integers_were_is() -> (
    None
):
    catalog = learned([{"price": 1.5 + n, "count": n} for n in range(DRIFT_AFTER)])
    assert catalog.learn(delivery(50, {"price": 2, "count": 1})) == []
    (finding,) = catalog.learn(delivery(51, {"price": 2.5, "count": 1.5}))
    assert (finding.path, finding.was, finding.now) == ("count", "integer", "number")


def test_a_new_object_is_one_finding_not_one_per_field() -> None:
    catalog = steady()
    found = catalog.learn(delivery(100, {**activated(100), "meta": {"a": 1, "b": {"c": 2}}}))
    assert [(f.kind.value, f.path) for f in found] == [("field_added", "meta")]
    # A field that became an object: its type changed; its new children are not listed apart.
    found = catalog.learn(delivery(101, activated(101, passId={"id": "pass_1", "v": 2})))
    assert [(f.kind.value, f.path) for f in found] == [("type_changed", "data.passId")]


def test_missing_counts_only_where_the_parent_was_present() -> None:
    bodies = [activated(n) for n in range(DRIFT_AFTER)]
    for n, body in enumerate(bodies):
        if n % 2:
            body["meta"] = {"source": "api"}  # meta optional, source always in it
    catalog = learned(bodies)
    assert catalog.learn(delivery(100, activated(100))) == []  # no meta: nothing missing
    found = catalog.learn(delivery(101, {**activated(101), "meta": {"other": 1}}))
    assert sorted((f.kind.value, f.path) for f in found) == [
        ("field_added", "meta.other"),
        ("field_missing", "meta.source"),
    ]


def test_an_item_missing_from_every_array_is_missing_once_arrays_always_had_one() -> None:
    catalog = learned([{"tags": ["a", "b"]} for _ in range(DRIFT_AFTER)])
    (finding,) = catalog.learn(delivery(100, {"tags": []}))
    assert (finding.kind.value, finding.path) == ("field_missing", "tags[]")


def test_a_rejected_delivery_shows_no_drift_and_changes_no_count() -> None:
    catalog = steady()
    assert catalog.learn(delivery(100, activated(100, serialNumber=1), verdict=REJECTED)) == []
    assert catalog.groups[ACTIVATED].findings == {}
    assert catalog.groups[ACTIVATED].samples == DRIFT_AFTER


def test_when_drift_begins_to_be_looked_for_what_the_first_samples_disagreed_on_is_told() -> None:
    bodies = [activated(n) for n in range(DRIFT_AFTER)]
    bodies[3]["data"]["serialNumber"] = 3  # an integer once
    bodies[7]["data"]["customer"] = {"tier": "gold"}  # an object once
    bodies[14]["data"]["channel"] = "web"  # a field that came during the warm-up, and went
    catalog = Catalog()
    for n in range(DRIFT_AFTER - 1):
        assert catalog.learn(delivery(n, bodies[n])) == []
    found = catalog.learn(delivery(DRIFT_AFTER - 1, bodies[-1]))
    assert [(DriftRecord.of(f).describe(), f.kind.severity) for f in found] == [
        (
            "pass.activated data.serialNumber: string 19, integer 1 in the first 20 samples",
            "warning",
        ),
        ("pass.activated data.customer: present in 1 of the first 20 samples", "info"),
        ("pass.activated data.channel: present in 1 of the first 20 samples", "info"),
    ]
    assert {f.source.attempt_id for f in found} == {DRIFT_AFTER - 1}  # the 20th
    record = DriftRecord.of(found[2]).to_json()
    assert (record["kind"], record["was"], record["now"]) == ("warm_up_optional", None, "string")
    assert record["note"] == "present in 1 of the first 20 samples"
    # Said once: later samples like them add nothing to it, and drift is looked for as usual.
    later = activated(40)
    later["data"]["channel"] = "app"
    assert catalog.learn(delivery(40, later)) == []
    assert [f.count for f in found] == [1, 1, 1]
    (added,) = catalog.learn(delivery(41, activated(41, extra=True)))
    assert (added.kind.value, added.path) == ("field_added", "data.extra")


def test_steady_first_samples_disagree_on_nothing() -> None:
    catalog = Catalog()
    found = [f for n in range(DRIFT_AFTER) for f in catalog.learn(delivery(n, activated(n)))]
    assert found == []


def test_what_the_first_samples_disagreed_on_is_told_at_most_50_times() -> None:
    catalog = Catalog()
    found = []
    for n in range(DRIFT_AFTER):  # each sample with fields of its own
        body = activated(n)
        body["data"].update({f"extra{chr(97 + n)}{chr(97 + k)}": k for k in range(5)})
        found += catalog.learn(delivery(n, body))
    assert len(found) == WARM_UP_REPORTED
    assert {f.kind.value for f in found} == {"warm_up_optional"}
