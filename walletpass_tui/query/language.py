"""The query language of the dashboard's filter and ``events list/export/tail --where``.

::

    pass_0042                      a word: part of the webhook-id, the topic or the body
    topic:activated  verdict:rejected  source:received      as before (type:, is:, from: too)
    data.platform:google           a field equals a value (text in any case; = works too)
    data.balance>10  >=  <  <=     a number (or, quoted or not a number, text) compared
    data.tier!=gold                the field is there with another value
    data.passId:pass_7*            text that starts with pass_7
    has:data.loyaltyTier           the field is there;  -has:...  it is not
    -data.platform:google          any term negated (missing fields included)
    data.note:"two words"          a value with spaces, quotes or parentheses, quoted
    a b  /  a AND b                both;  (a OR b)  either

Paths are the learned schema's (``schemas/paths.py``): ``data.passId``, ``data.tags[]`` (any
item), ``data.balances{*}`` (any key), ``data["a.b"]`` (a key that is not a plain name), ``$``
(the body). Values are compared by ``values.comparable``: a number literal (``10``, ``-2.5e3``)
matches a number equal to it or the same text; ``true``, ``false``, ``null`` the JSON value or that
text; anything else text, ignoring case.

A query is user input: at most MAX_QUERY_CHARS characters, MAX_TERMS terms besides the words
that stand alone (those are a search, unbounded in number: a pasted body is one), and MAX_NESTING
groups and negations inside each other. Nothing here touches a database: ``parse`` gives a tree
(``tree.py``) and the problems found (a term it could not read is left out and named; a path is
read by ``path_reading.py``), and ``condition.py`` turns the tree into parameters, never into
text of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from walletpass_tui.api.topics import TopicError, parse_topic
from walletpass_tui.query.path_reading import parse_path, quoted, read_path, shown
from walletpass_tui.query.tree import (
    OPS,
    All,
    AnyOf,
    Compare,
    Has,
    Node,
    Not,
    Op,
    Parsed,
    QueryProblem,
    SourceIs,
    TopicIs,
    Value,
    VerdictIs,
    Word,
)
from walletpass_tui.webhooks.models import (
    CHECK,
    RECEIVED,
    REJECTED,
    VERIFIED,
    Source,
    StoredVerdict,
)

MAX_QUERY_CHARS = 256 * 1024
MAX_TERMS = 64
MAX_NESTING = 8

_VERDICT_WORDS: dict[str, StoredVerdict] = {
    "verified": VERIFIED,
    "ok": VERIFIED,
    "good": VERIFIED,
    "valid": VERIFIED,
    "rejected": REJECTED,
    "bad": REJECTED,
    "invalid": REJECTED,
    "failed": REJECTED,
}
_SOURCE_WORDS: dict[str, Source] = {
    "received": RECEIVED,
    "service": RECEIVED,
    "sender": RECEIVED,
    "delivery": RECEIVED,
    "deliveries": RECEIVED,
    "check": CHECK,
    "checks": CHECK,
}
_TOPIC_KEYS = ("topic", "type")
_VERDICT_KEYS = ("verdict", "is")
_SOURCE_KEYS = ("source", "from")
_HAS_KEY = "has"


# -- tokens -----------------------------------------------------------------------------------

_OPEN, _CLOSE, _OR, _AND, _NOT = "(", ")", "OR", "AND", "-"


@dataclass
class _Token:
    kind: str  # "(" ")" "OR" "AND" "-" or "term"
    text: str = ""


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    depth = 0
    pos, end = 0, len(text)
    while pos < end:
        c = text[pos]
        if c.isspace():
            pos += 1
            continue
        if c == "(":
            out.append(_Token(_OPEN))
            depth += 1
            pos += 1
            continue
        if c == ")" and depth > 0:
            out.append(_Token(_CLOSE))
            depth -= 1
            pos += 1
            continue
        if c == "-" and pos + 1 < end and _negates(text, pos + 1):
            out.append(_Token(_NOT))
            pos += 1
            continue
        start = pos
        while pos < end:
            c = text[pos]
            if c.isspace() or (c == ")" and depth > 0):
                break
            if c == '"':
                close = text.find('"', pos + 1)
                while close != -1 and _escaped(text, close):
                    close = text.find('"', close + 1)
                pos = end if close == -1 else close + 1
                continue
            pos += 1
        word = text[start:pos]
        out.append(_Token(word if word in (_OR, _AND) else "term", word))
    return out


def _closed(quoted: str) -> bool:
    """Whether the quote that ``quoted`` starts with is closed."""
    close = quoted.find('"', 1)
    while close != -1 and _escaped(quoted, close):
        close = quoted.find('"', close + 1)
    return close != -1


def _escaped(text: str, pos: int) -> bool:
    slashes = 0
    while pos - slashes - 1 >= 0 and text[pos - slashes - 1] == "\\":
        slashes += 1
    return slashes % 2 == 1


def _negates(text: str, pos: int) -> bool:
    """Whether a ``-`` before ``pos`` negates what follows: a group, a key term or a field
    term. Before a plain word it is part of the word (``-1`` is searched as it is)."""
    if text[pos] == "(":
        return True
    rest = text[pos : pos + 300]
    key = rest.split(":", 1)[0].lower()
    if ":" in rest and key in (*_TOPIC_KEYS, *_VERDICT_KEYS, *_SOURCE_KEYS, _HAS_KEY):
        return True
    try:
        found = read_path(rest)
    except QueryProblem:  # not a path: the dash is part of a word, the term says the rest
        return False
    return found is not None and rest.startswith(OPS, found[1])


# -- the parser -------------------------------------------------------------------------------


@dataclass
class _Parser:
    tokens: list[_Token]
    pos: int = 0
    problems: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def any_of(self, depth: int) -> Node | None:
        parts = [self.all_of(depth)]
        while (token := self.peek()) is not None and token.kind == _OR:
            self.pos += 1
            parts.append(self.all_of(depth))
        kept = tuple(p for p in parts if p is not None)
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else AnyOf(kept)

    def all_of(self, depth: int) -> Node | None:
        parts: list[Node] = []
        while (token := self.peek()) is not None and token.kind not in (_OR, _CLOSE):
            if token.kind == _AND:
                self.pos += 1
                continue
            part = self.unary(depth)
            if part is not None:
                parts.append(part)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def unary(self, depth: int) -> Node | None:
        token = self.tokens[self.pos]
        if token.kind in (_NOT, _OPEN):
            if depth >= MAX_NESTING:
                self.problems.append(
                    f"The query nests groups and negations more than {MAX_NESTING} deep; "
                    "write it flatter."
                )
                self.pos = len(self.tokens)
                return None
            self.pos += 1
            if token.kind == _NOT:
                if self.peek() is None:
                    return None
                inner = self.unary(depth + 1)
                return None if inner is None else Not(inner)
            inner = self.any_of(depth + 1)
            closing = self.peek()
            if closing is not None and closing.kind == _CLOSE:
                self.pos += 1
            elif not self.problems and "a ( is not closed" not in self.unfinished:
                self.unfinished.append("a ( is not closed")
            return inner
        self.pos += 1
        if token.kind != "term":  # a stray OR/AND where a term belongs: a word then
            return Word(token.text)
        try:
            return self.term(token.text)
        except QueryProblem as problem:  # said: the term is left out and named
            self.problems.append(str(problem))
            return None

    def term(self, text: str) -> Node | None:
        key, sep, value = text.partition(":")
        lowered = key.lower()
        if sep and lowered in _TOPIC_KEYS:
            if not value:
                return None
            try:
                return TopicIs(parse_topic(value.lower()))
            except TopicError as error:
                raise QueryProblem(str(error)) from None
        if sep and lowered in _VERDICT_KEYS:
            if not value:
                return None
            verdict = _VERDICT_WORDS.get(value.lower())
            if verdict is None:
                raise QueryProblem(f"unknown verdict {shown(value)!r}: use verified or rejected")
            return VerdictIs(verdict)
        if sep and lowered in _SOURCE_KEYS:
            if not value:
                return None
            source = _SOURCE_WORDS.get(value.lower())
            if source is None:
                raise QueryProblem(f"unknown source {shown(value)!r}: use received or check")
            return SourceIs(source)
        if sep and lowered == _HAS_KEY:
            if not value:
                self.unfinished.append("has: needs a field path, e.g. has:data.loyaltyTier")
                return None
            return Has(parse_path(value))
        if text.startswith('"'):
            return Word(text)
        found = read_path(text)
        if found is None:
            return Word(text)
        path, end = found
        op = next((o for o in OPS if text.startswith(o, end)), None)
        if op is None:
            if end == len(text):
                return Word(text)  # a word that reads as a path (data.platform): searched
            rest = text[end:]
            if any(o in rest for o in OPS):
                raise QueryProblem(
                    f"{shown(text)} is not a field term: a key with other characters is "
                    'quoted, e.g. data["a-b"]:x'
                )
            return Word(text)
        raw = text[end + len(op) :]
        op = ":" if op in ("=", "==") else op
        if op == ":" and raw.startswith("//"):
            return Word(text)  # a URL (https://...): searched as a word
        if not raw:
            self.unfinished.append(f"{shown(text)} needs a value, e.g. {path.text}{op}x")
            return None
        if raw.startswith('"'):
            if not _closed(raw):
                self.unfinished.append(f"{shown(text)}: the quote is not closed yet")
                return None
            value_text, after = quoted(raw, 0)
            if after != len(raw):
                raise QueryProblem(f"{shown(text)}: text after the closing quote")
            val = Value(value_text, quoted=True)
        else:
            val = Value(raw)
        if op in (">", ">=", "<", "<=") and (val.literal is not None or val.prefix is not None):
            raise QueryProblem(f"{shown(text)}: {op} compares numbers or text, not {shown(raw)}")
        return Compare(path, cast(Op, op), val)


def parse(text: str) -> Parsed:
    """``text`` as a tree, with the problems of the terms left out."""
    if len(text) > MAX_QUERY_CHARS:
        return Parsed(
            None,
            (
                f"The query is {len(text):,} characters long; at most {MAX_QUERY_CHARS:,} are "
                "read. Shorten it.",
            ),
        )
    parser = _Parser(_tokens(text))
    node = parser.any_of(0)
    while parser.peek() is not None:  # a ) with nothing open is a word (see _tokens)
        parser.pos += 1
        more = parser.any_of(0)
        if more is not None:
            node = more if node is None else All((node, more))
    if node is not None and _terms(node) > MAX_TERMS:
        problem = (
            f"The query has more than {MAX_TERMS} terms besides its words; split it or write fewer."
        )
        return Parsed(None, (*parser.problems, problem), tuple(parser.unfinished))
    return Parsed(node, tuple(parser.problems), tuple(parser.unfinished))


def _terms(node: Node) -> int:
    """The terms that are not words standing alone (those are a search of their own)."""
    parts = node.parts if isinstance(node, All) else (node,)
    return sum(_leaves(p) for p in parts if not isinstance(p, Word))


def _leaves(node: Node) -> int:
    if isinstance(node, Not):
        return _leaves(node.part)
    if isinstance(node, All | AnyOf):
        return sum(_leaves(p) for p in node.parts)
    return 1
