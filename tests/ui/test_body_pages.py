"""Bodies in bounded pages: every character shown once across the pages, nothing raw reaches the
terminal, a page's size never depends on the body's."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from walletpass_tui.text import visible
from walletpass_tui.ui.body_pages import PAGE_CHARS, BodyPage, body_page, page_note


def plain(page: BodyPage, total: int | None = None) -> str:
    """The page's text without the line saying which part it is (checked on its own)."""
    text = page.content.plain
    note = page_note(page, total)
    assert text.endswith(note)
    return text.removesuffix(note) if note else text


@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=3000), size=st.integers(min_value=1, max_value=700))
def test_raw_pages_cover_the_body_exactly_and_escape_it(body: bytes, size: int) -> None:
    decoded = body.decode("utf-8", errors="backslashreplace")
    pages = []
    index = 0
    while True:
        page = body_page(body, index, raw=True, size=size)
        pages.append(plain(page, len(body)))
        if not page.more:
            break
        index += 1
    # Cut on characters of the decoded text, each page escaped: nothing lost, nothing raw.
    assert pages == [
        visible(decoded[i * size : (i + 1) * size], keep_newlines=True) for i in range(len(pages))
    ]
    assert len(pages) == max(1, -(-len(decoded) // size))
    joined = "".join(pages)
    assert all(ch.isprintable() or ch in "\n\t" for ch in joined)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=150, deadline=None)
@given(doc=json_values, size=st.integers(min_value=1, max_value=400))
def test_pretty_pages_join_into_the_whole_pretty_document(doc: object, size: int) -> None:
    body = json.dumps(doc).encode()
    whole = json.dumps(doc, indent=2, ensure_ascii=False)
    pages = []
    index = 0
    while True:
        page = body_page(body, index, size=size, highlight_limit=0)
        assert page.json
        pages.append(plain(page))
        assert page.shown_to - page.shown_from <= size
        if not page.more:
            break
        index += 1
    assert "".join(pages) == visible(whole, keep_newlines=True)


def test_a_megabyte_body_gives_one_bounded_page() -> None:
    body = json.dumps({"type": "pass.activated", "blob": "x" * (1024 * 1024)}).encode()
    first = body_page(body)
    assert first.json and first.more and first.index == 0
    assert first.shown_to == PAGE_CHARS
    assert len(first.content.plain) < PAGE_CHARS + 200  # the page and a line saying which
    assert "]: next part" in first.content.plain
    last = body_page(body, (len(body) + 20) // PAGE_CHARS)
    assert not last.more and "[: previous part" in last.content.plain


def test_a_megabyte_string_is_escaped_only_as_far_as_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted, not timed: the longest text escaped in one call (which holds the interpreter's
    lock) for a page of a body that is one megabyte string, and the raw bytes decoded."""
    escaped: list[int] = []
    escape = json.encoder.encode_basestring  # type: ignore[attr-defined]

    def counting(text: str) -> str:
        escaped.append(len(text))
        return escape(text)

    blob = 'é\\"\n' * (256 * 1024)
    body = json.dumps({"type": "pass.activated", "blob": blob}, ensure_ascii=False).encode()
    whole = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    monkeypatch.setattr(json.encoder, "encode_basestring", counting)
    first = body_page(body)
    assert max(escaped) <= PAGE_CHARS + 1
    assert plain(first) == visible(whole[:PAGE_CHARS], keep_newlines=True)
    escaped.clear()
    second = body_page(body, 1)
    assert max(escaped) <= 2 * PAGE_CHARS + 1
    assert plain(second, None) == visible(whole[PAGE_CHARS : 2 * PAGE_CHARS], keep_newlines=True)
    raw = body_page(body, raw=True)
    assert raw.more and plain(raw, len(body)) == visible(
        body.decode()[:PAGE_CHARS], keep_newlines=True
    )


def test_markup_and_escapes_stay_literal() -> None:
    body = b'{"n": "[b]bold[/b] \\u001b[2J"}'
    page = body_page(body)
    text = plain(page)
    assert "[b]bold[/b]" in text and "\\u001b[2J" in text and "\x1b" not in text
