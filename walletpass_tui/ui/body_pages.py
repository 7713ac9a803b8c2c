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
import math
from dataclasses import dataclass
from typing import Any

from textual.content import Content

from walletpass_tui.text import format_size, visible

PAGE_CHARS = 16 * 1024  # characters shown at once in the Body and Raw tabs
HIGHLIGHT_CHARS = 16 * 1024  # a page up to this size is coloured; bigger ones stay plain
NOTE_STYLE = "italic"  # where a page sits in the body, and the keys that turn it

NOT_JSON = "Not JSON; shown as received.\n\n"
TOO_DEEP = "JSON, too deep to show as a tree; shown as received.\n\n"


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
_TOO_DEEP = object()  # valid JSON nested deeper than the parser (or the pretty printer) goes


class NumberLiteral(float):
    """A number of the body as it was written (``1e999``, ``1.0``, ``-0``, a 5,000-digit
    integer), shown so rather than as Python reads it (``Infinity``, ``0``)."""

    text: str

    def __new__(cls, text: str) -> NumberLiteral:
        number = super().__new__(cls, float(text))
        number.text = text
        return number


def _int(text: str) -> int | NumberLiteral:
    """An integer as Python reads it when that writes it back the same, else as written."""
    if len(text) > 4000 or text == "-0":
        return NumberLiteral(text)
    return int(text)


def _parse(body: bytes) -> Any:
    """The body as JSON (``null`` included, every number kept as written), ``_TOO_DEEP`` or
    ``_NOT_JSON``."""
    if not body.strip():
        return _NOT_JSON
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: shown as bytes
        return _NOT_JSON
    try:
        return json.loads(text, parse_float=NumberLiteral, parse_int=_int)
    except RecursionError:  # nested too deep: shown as text
        return _too_deep(text)
    except ValueError:  # not JSON: shown as text
        return _NOT_JSON


def _too_deep(text: str) -> Any:
    """``_TOO_DEEP`` when ``text`` is JSON after all (scanned whole), else ``_NOT_JSON``."""
    from walletpass_tui.webhooks.body_fields import scan  # for such bodies only

    found = scan(text, budget=len(text) + 1)
    return _TOO_DEEP if found is not None and found.valid else _NOT_JSON


def _float_text(value: float) -> str:
    """A float as the body wrote it, else as ``json.dumps`` writes it (``allow_nan``: NaN and
    the infinities by name)."""
    if isinstance(value, NumberLiteral):
        return value.text
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _pretty_chunks(doc: Any, limit: int) -> Any:
    """``doc`` pretty-printed, in pieces, with every string longer than ``limit`` characters
    encoded only up to it. Such a string's encoding alone then reaches past character ``limit``
    of the document, so the first ``limit`` characters are exactly those of the whole
    (escaping is character by character), and a megabyte string is not escaped whole in one
    call that holds the interpreter's lock while the event loop waits for it."""
    escape = json.encoder.encode_basestring

    def encode(text: str) -> str:
        return escape(text[:limit] if len(text) > limit else text)

    make = json.encoder._make_iterencode  # type: ignore[attr-defined]  # json's, not in typeshed
    iterencode = make({}, _no_default, encode, 2, _float_text, ": ", ",", False, False, False)
    return iterencode(doc, 0)


def _no_default(value: Any) -> Any:
    raise TypeError(f"not JSON: {type(value).__name__}")  # never: the doc came from json.loads


def _slice_pretty(doc: Any, start: int, size: int) -> tuple[str, bool]:
    """Characters ``start`` to ``start + size`` of ``doc`` pretty-printed, and whether more
    follow; encodes only as far as needed."""
    out: list[str] = []
    seen = 0
    wanted_end = start + size
    for chunk in _pretty_chunks(doc, wanted_end + 1):
        end = seen + len(chunk)
        if end > start:
            out.append(chunk[max(0, start - seen) : wanted_end - seen])
        seen = end
        if seen > wanted_end:
            return "".join(out), True
    # Exactly at the end: nothing more (the encoder is exhausted).
    return "".join(out), False


def _slice_raw(body: bytes, start: int, size: int) -> tuple[str, bool]:
    """Characters ``start`` to ``start + size`` of the body decoded (bad bytes escaped), and
    whether more follow; decodes only the bytes that can hold them (a character is at most 4
    bytes, and a cut inside one only changes characters after the page)."""
    end = start + size
    head = body[: 4 * end + 4]
    text = head.decode("utf-8", errors="backslashreplace")
    more = len(text) > end if len(head) == len(body) else True
    return text[start:end], more


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
    from textual.highlight import highlight  # pygments: loaded with the first body shown

    index = max(0, index)
    start = index * size
    doc = _NOT_JSON if raw else _parse(body)
    if doc is not _NOT_JSON and doc is not _TOO_DEEP:
        try:
            text, more = _slice_pretty(doc, start, size)
        except RecursionError:  # within the parser's depth, beyond the pretty printer's
            doc = _TOO_DEEP
    if doc is not _NOT_JSON and doc is not _TOO_DEEP:
        shown = visible(text, keep_newlines=True)
        content = (
            highlight(shown, language="json") if len(shown) <= highlight_limit else Content(shown)
        )
        page = BodyPage(content, index, more, start, start + len(text), json=True)
        return _with_note(page, None)
    text, more = _slice_raw(body, start, size)
    content = Content(visible(text, keep_newlines=True))
    if not raw and body.strip():
        label = TOO_DEEP if doc is _TOO_DEEP else NOT_JSON
        content = Content.assemble(Content.styled(label, "dim"), content)
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
