"""A sample of the same shape as the last one learned is counted without being walked again: the
catalog learned that way is the same as the one learned by walking every sample, whatever the
sequence (steady runs, drift, arrays, id-like keys folded into a map, duplicate keys, bodies that
are not JSON)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from schema_helpers import activated, delivery

from walletpass_tui.schemas.catalog import Catalog
from walletpass_tui.schemas.learn import shape_of
from walletpass_tui.schemas.model import GroupKey, learned_fields

ACTIVATED = GroupKey.of_topic("pass.activated")


def state(catalog: Catalog) -> dict[str, Any]:
    """Everything a catalog learned, as plain data."""
    out: dict[str, Any] = {"topics_not_learned": catalog.topics_not_learned}
    for key, group in sorted(catalog.groups.items()):
        out[key.label] = {
            "samples": group.samples,
            "not_json": group.not_json,
            "next_seq": group.next_seq,
            "untracked": sorted(group.untracked),
            "more": group.untracked_more,
            "seen": (group.first_seen_ms, group.last_seen_ms, group.last_webhook_id),
            "paths": {p: learned_fields(s) for p, s in sorted(group.paths.items())},
            "findings": sorted(
                (f.path, f.kind.value, f.was, f.now, f.count, f.last_seen_ms, f.source.attempt_id)
                for f in group.findings.values()
            ),
        }
    return out


# A few shapes, each a body maker; the sequences below mix them.
SHAPES: list[Any] = [
    lambda n: activated(n),
    lambda n: activated(n),  # the steady shape, twice as likely
    lambda n: activated(n, serialNumber=n),  # type_changed
    lambda n: activated(n, channel="web"),  # field_added
    lambda n: activated(n, platform=None),  # field_missing
    lambda n: activated(n, tags=["a", "b", "c"][: n % 4]),  # arrays of other lengths
    lambda n: activated(n, tags=[1, "x", None]),  # items of several types
    lambda n: activated(n, balances={f"pass_{n % 70:04d}": {"points": n}}),  # an id-keyed map
    lambda n: {"deactivated": True, "data": {"passId": f"p{n}"}},  # another topic
    lambda n: b'{"a": 1, "a": "dup"}',  # a repeated key
    lambda n: b"not json",
    lambda n: activated(n, nested={"x": {"y": [{"z": n}]}}),
]


REPEATED_KEY = 9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(SHAPES) - 1), st.integers(1, 6)), max_size=30))
def test_learning_by_shape_gives_the_catalog_walking_gives(runs: list[tuple[int, int]]) -> None:
    bodies: list[Any] = []
    for shape, times in [(0, 21), *runs]:  # past 20 samples, so drift is looked for
        bodies += [SHAPES[shape](len(bodies)) for _ in range(times)]
    repeated_keys = any(shape == REPEATED_KEY for shape, _ in runs)
    walked, remembered, batched = Catalog(remember_shapes=False), Catalog(), Catalog()
    scanned = Catalog(scan_all=True)  # every body read as a large one is
    with batched.batch():  # runs of one shape counted together, as the learner's steps do
        for n, body in enumerate(bodies):
            deactivated = isinstance(body, dict) and "deactivated" in body
            d = delivery(n, body, topic="pass.deactivated" if deactivated else "pass.activated")
            found_walked = [(f.path, f.kind) for f in walked.learn(d)]
            assert [(f.path, f.kind) for f in remembered.learn(d)] == found_walked, n
            assert [(f.path, f.kind) for f in batched.learn(d)] == found_walked, n
            found_scanned = [(f.path, f.kind) for f in scanned.learn(d)]
            assert repeated_keys or found_scanned == found_walked, n
    assert state(remembered) == state(walked)
    assert state(batched) == state(walked)
    # The reader counts each value of a repeated key, as sent; json.loads keeps the last.
    assert repeated_keys or state(scanned) == state(walked)


def test_a_map_folded_after_a_repeat_is_learned_the_same() -> None:
    """Id-like keys turn an object into a map after the 50th: a shape remembered before the fold
    must not be used after it."""
    bodies: list[Any] = []
    for n in range(60):
        bodies += [activated(n, balances={f"pass_{n:04d}": 1})] * 3
    walked, remembered = Catalog(remember_shapes=False), Catalog()
    with remembered.batch():
        for n, body in enumerate(bodies):
            walked.learn(delivery(n, body))
            remembered.learn(delivery(n, body))
    assert "data.balances{*}" in remembered.groups[ACTIVATED].paths
    assert state(remembered) == state(walked)


def test_a_body_whose_own_keys_fold_the_map_is_walked_again() -> None:
    """A body whose id-like keys make its object a map is seen one way before it is learned and
    another after (its keys folded): only a body that changed no path is remembered."""
    bodies: list[Any] = [activated(n, balances={f"pass_{n:04d}": 1}) for n in range(49)]
    three = {f"pass_{k:04d}": 1 for k in range(900, 903)}
    bodies += [activated(99, balances=three)] * 3
    walked, remembered = Catalog(remember_shapes=False), Catalog()
    for n, body in enumerate(bodies):
        walked.learn(delivery(n, body))
        remembered.learn(delivery(n, body))
    assert state(remembered) == state(walked)


def test_the_shape_tells_types_keys_order_and_lengths_apart() -> None:
    def shape(text: str) -> Any:
        return shape_of(json.loads(text))

    assert shape('{"a": 1, "b": "x"}') == shape('{"a": 2, "b": "y"}')
    assert shape('{"a": "\\u0041"}') == shape('{"a": "B"}')
    for one, other in [
        ('{"a": 1}', '{"a": 1.0}'),
        ('{"a": 1}', '{"a": true}'),
        ('{"a": null}', '{"a": "null"}'),
        ('{"a": 1, "b": 2}', '{"b": 2, "a": 1}'),
        ('{"a": [1]}', '{"a": [1, 2]}'),
        ('{"a": {}}', '{"a": []}'),
        ('{"a": {"b": 1}}', '{"a": [["b", 1]]}'),
        ('[{"a": 1}]', '{"a": 1}'),
    ]:
        assert shape(one) != shape(other), (one, other)
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert shape_of(deep) is None  # too deep to tell: the sample is walked
