"""Objects used as maps (keyed by ids): folded into one ``{*}`` path at any depth, whatever order
their keys arrive in; once a map is open every new key is one of its keys, never a path of its
own or a finding; and nothing nested maps hold can make learning fail."""

from __future__ import annotations

import json
import random
import string
from collections import Counter
from typing import Any

import jsonschema
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from schema_helpers import delivery

from walletpass_tui.schemas.catalog import Catalog
from walletpass_tui.schemas.drift import DRIFT_AFTER
from walletpass_tui.schemas.export import export
from walletpass_tui.schemas.model import GroupKey, GroupSchema
from walletpass_tui.schemas.paths import ITEM, MAP, MAP_KEYS, ROOT, Segment, child, looks_like_id

TOPIC = GroupKey.of_topic("pass.activated")


def learn_all(bodies: list[Any]) -> GroupSchema:
    catalog = Catalog()
    for n, body in enumerate(bodies):
        catalog.learn(delivery(n, body))
    return catalog.groups[TOPIC]


# -- a reference: the paths and type counts nested maps must end with -----------------------------


def kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", int: "integer", float: "number"}[
        type(value)
    ]


def reference(bodies: list[Any]) -> dict[str, Counter[str]]:
    """Each path with the types of the values found there, computed top down over every body at
    once: at each path, an object whose keys (over all its objects there) include more than
    MAP_KEYS id-like ones is a map, every id-like key and everything below it one ``{*}``."""
    out: dict[str, Counter[str]] = {}

    def visit(path: str, values: list[Any]) -> None:
        out[path] = Counter(kind_of(v) for v in values)
        objects = [v for v in values if isinstance(v, dict)]
        keys = {k for o in objects for k in o}
        is_map = sum(1 for k in keys if looks_like_id(k)) > MAP_KEYS
        named: dict[str, list[Any]] = {}
        folded: list[Any] = []
        for o in objects:
            for k, v in o.items():
                if is_map and looks_like_id(k):
                    folded.append(v)
                else:
                    named.setdefault(k, []).append(v)
        for k, vs in named.items():
            visit(child(path, Segment.KEY, k), vs)
        if folded:
            visit(child(path, Segment.MAP), folded)
        items = [i for v in values if isinstance(v, list) for i in v]
        if items:
            visit(child(path, Segment.ITEM), items)

    visit(ROOT, bodies)
    return out


# Bodies made from one random layout, so a path holds one kind of object: a record of a few
# named fields, or a map keyed by ids of one family (a few to 70 keys, shared or fresh per body).
IDS = [f"pass_{n:04d}" for n in range(200)] + [f"{n:08x}" for n in range(3_000_000, 3_000_200)]


def layouts(depth: int = 0) -> st.SearchStrategy[Any]:
    leaf = st.sampled_from(["int", "str", "null", "float"])
    if depth >= 3:
        return leaf
    inner = st.deferred(lambda: layouts(depth + 1))
    return st.one_of(
        leaf,
        st.tuples(st.just("map"), st.sampled_from([3, 20, 60, 70]), inner),
        st.tuples(st.just("record"), st.lists(inner, min_size=1, max_size=3)),
        st.tuples(st.just("array"), inner),
    )


def make(layout: Any, r: random.Random) -> Any:
    if layout == "int":
        return r.randrange(100)
    if layout == "str":
        return "x"
    if layout == "null":
        return None
    if layout == "float":
        return 0.5
    if layout[0] == "map":
        _, size, inner = layout
        keys = r.sample(IDS, r.randint(1, size))
        return {k: make(inner, r) for k in keys}
    if layout[0] == "record":
        return {f"f{i}": make(sub, r) for i, sub in enumerate(layout[1]) if r.random() < 0.8}
    return [make(layout[1], r) for _ in range(r.randint(0, 3))]


@settings(max_examples=80, deadline=None)
@given(layout=layouts(), seed=st.integers(0, 2**16), count=st.integers(1, 6))
def test_nested_maps_fold_at_any_depth_whatever_order_their_keys_arrive_in(
    layout: Any, seed: int, count: int
) -> None:
    r = random.Random(seed)
    bodies = [{"data": make(layout, r)} for _ in range(count)]
    group = learn_all(bodies)  # never raises
    backwards = learn_all(bodies[::-1])
    # Within the bounds (2,000 paths a group: 50 named keys of 50 named keys each is more), ...
    assume(not group.untracked and not backwards.untracked)
    found = {path: Counter(s.types) for path, s in group.paths.items()}
    assert found == reference(bodies)
    # ... and learned in another order, the same paths and counts.
    assert {p: Counter(s.types) for p, s in backwards.paths.items()} == found
    for stats in group.paths.values():  # a tree: every path under its parent
        assert stats.parent is None or stats.parent in group.paths
    # Every sample validates against what was learned.
    schema = json.loads(export(group, "jsonschema"))
    for body in bodies:
        jsonschema.Draft202012Validator(schema).validate(body)


def test_maps_inside_maps_then_another_delivery_learn_on() -> None:
    """Balances per account keyed by id, one account's per pass, each per slot: the first body
    folds the accounts' map below a map not folded yet; the next one folds that one too."""
    first = {
        "acct_0001": {
            f"pass_{p:03d}": {f"slot_{p:03d}{s}": {"points": s} for s in range(2)}
            for p in range(60)
        },
        **{f"acct_{a:04d}": {} for a in range(2, 31)},
    }
    bodies: list[Any] = [{"data": {"balances": first}}]
    bodies += [{"data": {"balances": {f"acct_{n}{a:03d}": {} for a in range(21)}}} for n in (1, 2)]
    group = learn_all(bodies)
    assert {p: Counter(s.types) for p, s in group.paths.items()} == reference(bodies)
    assert "data.balances{*}{*}{*}.points" in group.paths


# -- an open map ----------------------------------------------------------------------------------


def account(r: random.Random) -> str:
    """``acct_`` and 8 random letters and digits: about one in four has no digit in it."""
    return "acct_" + "".join(r.choice(string.ascii_letters + string.digits) for _ in range(8))


def test_once_a_map_is_open_a_new_key_is_a_sample_never_a_path_or_a_finding() -> None:
    r = random.Random(29)
    catalog = Catalog()
    after_open: list[Any] = []
    values = 0
    for n in range(300):
        balances = {account(r): {"amount": r.randrange(1000)} for _ in range(r.randint(1, 4))}
        values += len(balances)
        body = {"type": "pass.activated", "data": {"passId": f"pass_{n}", "balances": balances}}
        found = catalog.learn(delivery(n, body))
        if "data.balances{*}" in catalog.groups[TOPIC].paths:
            after_open += found
    group = catalog.groups[TOPIC]
    assert sorted(group.paths) == [
        ROOT,
        "data",
        "data.balances",
        "data.balances{*}",
        "data.balances{*}.amount",
        "data.passId",
        "type",
    ]
    assert after_open == []
    # What was found about its keys before it opened was about a map's keys: not drift.
    assert group.findings == {}
    assert group.paths["data.balances{*}.amount"].types == {"integer": values}
    assert group.samples == 300 and not group.untracked


def test_a_new_field_beside_a_maps_keys_before_it_opened_stays_a_field() -> None:
    catalog = Catalog()
    for n in range(DRIFT_AFTER + 40):
        ids = {f"pass_{n:03d}{k}": k for k in range(2)}
        catalog.learn(delivery(n, {"data": {"points": {"total": n, **ids}}}))
    group = catalog.groups[TOPIC]
    assert "data.points{*}" in group.paths and "data.points.total" in group.paths
    (finding,) = catalog.learn(delivery(999, {"data": {"points": {"total": "many"}}}))
    assert (finding.path, finding.now) == ("data.points.total", "string")
    # Keys it never had before it opened are its keys now, whatever they read like.
    assert catalog.learn(delivery(1000, {"data": {"points": {"total": 1, "grandTotal": 1}}})) == []
    assert "data.points.grandTotal" not in group.paths


def test_a_family_of_ids_without_digits_folds_with_the_rest() -> None:
    r = random.Random(3)
    keys = [account(r) for _ in range(120)]
    assert 10 < sum(1 for k in keys if not looks_like_id(k)) < 60
    group = learn_all([{"data": {"balances": {k: 1 for k in keys}}}])
    assert sorted(group.paths) == [ROOT, "data", "data.balances", "data.balances" + MAP]
    assert ITEM not in "".join(group.paths)
