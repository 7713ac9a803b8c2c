"""Labels from bodies whose fields the service does not document: best effort, never a failure."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.webhooks.body_fields import extract_pass_id, labels, parse_json


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"type": "pass.activated", "data": {"passId": "pass_1"}}', ("pass.activated", "pass_1")),
        (b'{"topic": "pass.deactivated", "pass_id": "p2"}', ("pass.deactivated", "p2")),
        (b'{"event": "pass.activated", "pass": {"id": "p3"}}', ("pass.activated", "p3")),
        (b'{"eventType": "x", "items": [{"PassID": "p4"}]}', ("x", "p4")),
        (b'  \n{"type": 5, "topic": "pass.activated"}', ("pass.activated", None)),
        (b'{"type": ""}', (None, None)),
        (b'{"type": "' + b"a" * 121 + b'"}', (None, None)),
    ],
)
def test_labels_found(body: bytes, expected: tuple[str | None, str | None]) -> None:
    assert labels(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xff\xfe{\x00",
        b'{"type": "pass.activated"',  # cut short
        b'["pass.activated"]',
        b'"pass.activated"',
        b"1" * 5000,  # beyond Python's int digit limit: a ValueError, not a crash
        b"[" * 100_000 + b"]" * 100_000,  # recursion
        b"\xef\xbb\xbf" + b'{"type": "pass.activated"}',  # a BOM: not JSON by the RFC
        b"NaN",
    ],
)
def test_bodies_that_are_not_usable_json_have_no_labels(body: bytes) -> None:
    assert labels(body) == (None, None)


def test_non_utf8_json_is_not_parsed() -> None:
    assert parse_json(b'{"type": "caf\xe9"}') is None


def test_labels_that_cannot_be_stored_as_text_are_dropped() -> None:
    # Valid JSON may escape a lone surrogate: such a string cannot be written as UTF-8 text.
    body = b'{"type": "\\ud800", "passId": "\\udcff"}'
    assert json.loads(body)["type"] == "\ud800"
    assert labels(body) == (None, None)


def test_control_characters_are_kept_for_escaping_at_display() -> None:
    assert labels(b'{"type": "pass\\u001b[31m"}') == ("pass\x1b[31m", None)


def test_pass_id_search_is_bounded_in_depth() -> None:
    deep: object = {"passId": "too-deep"}
    for _ in range(10):
        deep = {"wrap": deep}
    assert extract_pass_id(deep) is None
    assert extract_pass_id({"a": {"b": {"passId": "ok"}}}) == "ok"


@given(st.binary(max_size=300))
def test_labels_never_raise_on_arbitrary_bytes(body: bytes) -> None:
    topic, pass_id = labels(body)
    for value in (topic, pass_id):
        assert value is None or (isinstance(value, str) and 0 < len(value) <= 120)


@given(
    st.recursive(
        st.none() | st.booleans() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_labels_never_raise_on_arbitrary_json(doc: object) -> None:
    topic, pass_id = labels(json.dumps(doc).encode())
    for value in (topic, pass_id):
        if value is not None:
            value.encode("utf-8")  # storable as text
