"""The learner's JSON reader: the same events as json.loads for every document, the same verdict
on every text, and integers kept apart from numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from walletpass_tui.schemas import drift
from walletpass_tui.schemas.jsonscan import NotJson, read, scan, walk
from walletpass_tui.schemas.learn import Observer, observe
from walletpass_tui.schemas.model import GroupKey, GroupSchema, Source
from walletpass_tui.schemas.sample import Sample


class Events:
    def __init__(self) -> None:
        self.out: list[Any] = []

    def begin_object(self) -> None:
        self.out.append("{")

    def key(self, name: str) -> None:
        self.out.append(("key", name))

    def end_object(self) -> None:
        self.out.append("}")

    def begin_array(self) -> None:
        self.out.append("[")

    def end_array(self) -> None:
        self.out.append("]")

    def scalar(self, kind: str, value: Any) -> None:
        self.out.append((kind, value if kind == "string" else None))


def scanned(text: str) -> list[Any]:
    sink = Events()
    scan(text, sink)
    return sink.out


def walked(text: str) -> list[Any]:
    sink = Events()
    walk(json.loads(text), sink)
    return sink.out


def has_repeated_key(text: str) -> bool:
    """json.loads keeps the last of a repeated key; the scanner reports each one, as sent."""
    repeated = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        repeated = repeated or len({k for k, _ in items}) < len(items)
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)
    return repeated


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(doc=JSON, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_the_scanner_tells_what_json_loads_finds(
    doc: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_only)
    assert scanned(text) == walked(text)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(doc=JSON, cut=st.integers(0, 400), junk=st.sampled_from(list(',:[]{}"\\ 0-eE.tfnxN\x00')))
@example(doc=[{"0": None, "": None}], cut=3, junk=",")  # cutting makes a repeated key
def test_the_scanner_refuses_exactly_what_json_loads_refuses(doc: Any, cut: int, junk: str) -> None:
    text = json.dumps(doc)
    cut = min(cut, len(text))
    for candidate in (text[:cut], text[:cut] + junk + text[cut:], text[:cut] + text[cut + 1 :]):
        try:
            json.loads(candidate)
        except ValueError:
            with pytest.raises(NotJson):
                scanned(candidate)
        else:
            if has_repeated_key(candidate):
                assert scanned(candidate).count("{") == walked(candidate).count("{")
            else:
                assert scanned(candidate) == walked(candidate)


def test_a_repeated_key_is_reported_each_time_it_is_sent() -> None:
    assert scanned('{"a": 1, "a": "x"}') == [
        "{",
        ("key", "a"),
        ("integer", None),
        ("key", "a"),
        ("string", "x"),
        "}",
    ]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("1", "integer"),
        ("-0", "integer"),
        ("12345678901234567890123456789", "integer"),
        ("1.0", "number"),
        ("1e2", "number"),
        ("1e999", "number"),
        ("-Infinity", "number"),
        ("NaN", "number"),
        ("true", "boolean"),
        ("null", "null"),
        ('"1"', "string"),
    ],
)
def test_each_value_keeps_its_json_type(text: str, kind: str) -> None:
    for body in (text, f"[{text}]"):
        fast, slow = Events(), Events()
        read(body.encode(), fast)
        scan(body, slow)
        assert kind in {e[0] for e in fast.out if isinstance(e, tuple)}
        assert kind in {e[0] for e in slow.out if isinstance(e, tuple)}


def test_an_integer_too_long_for_json_loads_is_still_an_integer() -> None:
    sink = Events()
    read(b"[" + b"7" * 5000 + b"]", sink)  # json.loads refuses over 4,300 digits
    assert sink.out == ["[", ("integer", None), "]"]


@pytest.mark.parametrize(
    "body", [b"", b"   ", b"\xff{}", b"{'a': 1}", b"[1,]", b"{} {}", b"\xef\xbb\xbf{}", b'"\x01"']
)
def test_what_is_not_utf8_json_is_refused(body: bytes) -> None:
    with pytest.raises(NotJson):
        read(body, Events())


def learned_from(first: Any) -> GroupSchema:
    """A group that has learned ``first`` (read by the reader, as a large body would be)."""
    group = GroupSchema(GroupKey.of_topic("t"))
    obs = observe(json.dumps(first).encode(), group)
    assert obs is not None
    sample = Sample(group)
    sample.take_observation(obs)
    drift.take(sample, Source(1))
    return group


def observed(text: str, group: GroupSchema, *, scanned_text: bool) -> list[Any]:
    """What a body shows at each path: read by the reader (a large body), or walked after
    json.loads (a small one)."""
    if scanned_text:
        observer = Observer(group)
        scan(text, observer)
        return [
            (s.path, s.types, s.seen, s.holders, s.objects, s.arrays, s.example, s.open)
            for s in observer.result().paths.values()
        ]
    sample = Sample(group)
    sample.take_doc(json.loads(text))
    return [
        (s.path, s.s_types, s.s_seen, s.s_holders, s.s_objects, s.s_arrays, s.example, s.open)
        for s in sample.touched
    ]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(first=JSON, doc=JSON)
def test_a_parsed_body_is_observed_as_its_scanned_text_is(first: Any, doc: Any) -> None:
    """Bodies up to 64 KiB are walked after json.loads, larger ones scanned: the same paths."""
    text = json.dumps(doc)
    scanned = observed(text, learned_from(first), scanned_text=True)
    assert scanned == observed(text, learned_from(first), scanned_text=False)


@pytest.mark.parametrize(
    "doc",
    [
        {"m": {f"pass_{n:03d}": {"v": n, "w": [n, "x"]} for n in range(60)}, "name": "n"},
        [{"m": {f"id{n}": n for n in range(30)}}, {"m": {f"id{n}": str(n) for n in range(25, 60)}}],
        {"a" * 200: 1, "b": [[], [[]], [{}], [{"c": None}]]},
    ],
)
def test_maps_long_keys_and_nested_arrays_are_observed_alike(doc: Any) -> None:
    text = json.dumps(doc)
    scanned = observed(text, GroupSchema(GroupKey.of_topic("t")), scanned_text=True)
    assert scanned == observed(text, GroupSchema(GroupKey.of_topic("t")), scanned_text=False)
