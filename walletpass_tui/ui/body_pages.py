"""A delivery's body in bounded pages, prepared off the event loop.

Bodies reach a megabyte. Pretty-printing, escaping, highlighting and drawing all of one would
hold the event loop (which the receiver shares) for seconds, so the detail shows one page at a
time: ``PAGE_CHARS`` characters of the pretty JSON (or of the raw text), the next page on request.
``body_page`` is pure and thread-safe (no Textual widgets, no styles): the detail pane runs it in a
worker thread and only draws what it returns. Each page costs in proportion to the page and to
how far into the body it starts, never to the body's full size (pretty JSON is encoded
incrementally and stops at the end of the page).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from textual.content import Content
from textual.highlight import highlight

from walletpass_tui.text import format_size, visible

PAGE_CHARS = 16 * 1024  # characters shown at once in the Body and Raw tabs
HIGHLIGHT_CHARS = 16 * 1024  # a page up to this size is coloured; bigger ones stay plain
NOTE_STYLE = "italic"  # where a page sits in the body, and the keys that turn it

NOT_JSON = "Not JSON; shown as received.\n\n"


@dataclass(frozen=True)
class BodyPage:
    """One page of a body, ready to draw (with a line saying which part it is when paged)."""

    content: Content
    index: int  # 0-based
    more: bool  # another page follows
    shown_from: int  # characters of the (pretty or raw) text before this page
    shown_to: int
    json: bool  # the pretty JSON of the body (else the raw text)

    @property
    def paged(self) -> bool:
        return self.index > 0 or self.more


_NOT_JSON = object()


def _parse(body: bytes) -> Any:
    """The body as JSON (``null`` included), or ``_NOT_JSON``."""
    if not body.strip():
        return _NOT_JSON
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _NOT_JSON


def _pretty_chunks(doc: Any) -> Any:
    return json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(doc)


def _slice_pretty(doc: Any, start: int, size: int) -> tuple[str, bool]:
    """Characters ``start`` to ``start + size`` of ``doc`` pretty-printed, and whether more
    follow; encodes only as far as needed."""
    out: list[str] = []
    seen = 0
    wanted_end = start + size
    for chunk in _pretty_chunks(doc):
        end = seen + len(chunk)
        if end > start:
            out.append(chunk[max(0, start - seen) : wanted_end - seen])
        seen = end
        if seen > wanted_end:
            return "".join(out), True
    # Exactly at the end: nothing more (the encoder is exhausted).
    return "".join(out), False


def _slice_raw(body: bytes, start: int, size: int) -> tuple[str, bool]:
    text = body.decode("utf-8", errors="backslashreplace")
    return text[start : start + size], len(text) > start + size


def body_page(
    body: bytes,
    index: int = 0,
    *,
    raw: bool = False,
    size: int = PAGE_CHARS,
    highlight_limit: int = HIGHLIGHT_CHARS,
) -> BodyPage:
    """Page ``index`` of ``body``: pretty JSON when it parses (unless ``raw``), else the raw text
    with every control character escaped. Untrusted text is never read as markup: it becomes
    ``Content`` as plain text (or as highlighted JSON tokens), never parsed."""
    index = max(0, index)
    start = index * size
    doc = _NOT_JSON if raw else _parse(body)
    if doc is not _NOT_JSON:
        text, more = _slice_pretty(doc, start, size)
        shown = visible(text, keep_newlines=True)
        content = (
            highlight(shown, language="json") if len(shown) <= highlight_limit else Content(shown)
        )
        page = BodyPage(content, index, more, start, start + len(text), json=True)
        return _with_note(page, None)
    text, more = _slice_raw(body, start, size)
    content = Content(visible(text, keep_newlines=True))
    if not raw and body.strip():
        content = Content.assemble(Content.styled(NOT_JSON, "dim"), content)
    page = BodyPage(content, index, more, start, start + len(text), json=False)
    return _with_note(page, len(body))


def page_note(page: BodyPage, total: int | None) -> str:
    """Which part of the body ``page`` is, and the keys that turn it ("" when not paged)."""
    if not page.paged:
        return ""
    of = f" of a {format_size(total)} body" if total is not None else ""
    keys = []
    if page.more:
        keys.append("]: next part")
    if page.index:
        keys.append("[: previous part")
    where = f"characters {page.shown_from:,}-{page.shown_to:,}{of}"
    return f"\n… part {page.index + 1} ({where}); {', '.join(keys)}"


def _with_note(page: BodyPage, total: int | None) -> BodyPage:
    note = page_note(page, total)
    if not note:
        return page
    content = Content.assemble(page.content, Content.styled(note, NOTE_STYLE))
    return BodyPage(content, page.index, page.more, page.shown_from, page.shown_to, page.json)
