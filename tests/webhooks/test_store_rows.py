"""How an attempt's headers are stored: exactly the JSON ``json.dumps`` would write, for any text a
sender can put in a header (read back by ``events show``, export and replay)."""

from __future__ import annotations

import json

import pytest
from factories import attempt
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.webhooks.models import evolve
from walletpass_tui.webhooks.store.rows import attempt_from_row, attempt_values, headers_json

header_text = st.text(
    st.characters(codec="utf-8", exclude_categories=()) | st.sampled_from('"\\\x00\x7f\u2028')
)
# Lone surrogates included: aiohttp hands bytes that are not UTF-8 over that way.
any_text = st.text() | st.text(
    st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010, exclude_categories=())
)


@given(st.lists(st.tuples(any_text, any_text), max_size=8))
def test_headers_are_stored_as_json_dumps_would(headers: list[tuple[str, str]]) -> None:
    assert headers_json(tuple(headers)) == json.dumps(tuple(headers))


@given(st.lists(st.tuples(header_text, header_text), max_size=8))
def test_stored_headers_read_back_unchanged(headers: list[tuple[str, str]]) -> None:
    row = attempt_values(attempt("msg_h", headers=tuple(headers)))
    assert attempt_from_row(row).headers == tuple(headers)


def test_evolve_changes_fields_and_refuses_names_that_are_not_fields() -> None:
    """A misspelt field would otherwise ride along unseen on the frozen attempt and never be
    stored; like ``dataclasses.replace``, evolve names it."""
    original = attempt("msg_e")
    changed = evolve(original, note="kept", attempt_no=3)
    assert (changed.note, changed.attempt_no, changed.webhook_id) == ("kept", 3, "msg_e")
    assert original.note is None  # the original is untouched
    with pytest.raises(TypeError, match=r"unexpected Attempt field\(s\): notes, verdikt"):
        evolve(original, verdikt="verified", notes="lost", status=200)
