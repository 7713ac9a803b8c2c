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
groups and negations inside each other. Nothing here touches a database: ``parse`` gives a tree and the problems found (a
term it could not read is left out and named), ``to_sql`` (``sql.py``) turns the tree into
parameters, never into text of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, cast

from walletpass_tui.api.topics import TopicError, parse_topic
from walletpass_tui.errors import UsageError
from walletpass_tui.schemas.paths import ITEM, MAP, ROOT, Segment, child, quote
from walletpass_tui.text import printable
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

Op = Literal[":", "!=", ">", ">=", "<", "<="]
OPS = ("!=", ">=", "<=", "==", ":", "=", ">", "<")  # longest first; = and == are :

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

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = ("true", "false", "null")


class QueryProblem(UsageError):
    """A term that cannot be read; ``str()`` says what to type instead."""


# -- the tree ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldPath:
    """A path in the learned schema's syntax; ``text`` is how the schema writes it."""

    text: str
    any_key: bool = False  # holds {*}: every known path it stands for is looked at

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Value:
    """What a field is compared with: ``text`` as typed (unquoted), and how it reads."""

    text: str
    quoted: bool = False

    @property
    def number(self) -> int | float | None:
        if self.quoted or not _NUMBER.fullmatch(self.text):
            return None
        if re.fullmatch(r"-?[0-9]+", self.text) and len(self.text.lstrip("-")) <= 18:
            return int(self.text)
        return float(self.text)

    @property
    def literal(self) -> str | None:
        return self.text if not self.quoted and self.text in _LITERALS else None

    @property
    def prefix(self) -> str | None:
        """The text before a trailing ``*`` (unquoted only): ``pass_7*`` starts with pass_7."""
        if self.quoted or not self.text.endswith("*") or len(self.text) < 2:
            return None
        return self.text[:-1]

    def written(self) -> str:
        if self.quoted or not self.text or re.search(r'[\s"()\\]', self.text):
            escaped = self.text.replace("\\", "\\\\").replace('"', '\\"')
            return f'"{escaped}"'
        return self.text


@dataclass(frozen=True)
class Word:
    text: str  # as typed (quotes and all: the search reads it as before)


@dataclass(frozen=True)
class TopicIs:
    topic: str


@dataclass(frozen=True)
class VerdictIs:
    verdict: StoredVerdict


@dataclass(frozen=True)
class SourceIs:
    source: Source


@dataclass(frozen=True)
class Has:
    path: FieldPath


@dataclass(frozen=True)
class Compare:
    path: FieldPath
    op: Op
    value: Value


@dataclass(frozen=True)
class Not:
    part: Node


@dataclass(frozen=True)
class All:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Node, ...]


Node = Word | TopicIs | VerdictIs | SourceIs | Has | Compare | Not | All | AnyOf
FieldTerm = Has | Compare


@dataclass(frozen=True)
class Parsed:
    """The tree (None: nothing to filter on), the problems of terms left out, and the terms
    still being typed (a field with no value yet: left out quietly on screen)."""

    node: Node | None
    problems: tuple[str, ...] = ()
    unfinished: tuple[str, ...] = ()

    @property
    def problem(self) -> str | None:
        return self.problems[0] if self.problems else None


# -- writing a tree back ----------------------------------------------------------------------


def write(node: Node | None, top: bool = True) -> str:
    """The tree in the syntax above (the filter box, the pane's title, the SQL function's key)."""
    if node is None:
        return ""
    if isinstance(node, Word):
        return node.text
    if isinstance(node, TopicIs):
        return f"topic:{node.topic}"
    if isinstance(node, VerdictIs):
        return f"verdict:{node.verdict}"
    if isinstance(node, SourceIs):
        return f"source:{node.source}"
    if isinstance(node, Has):
        return f"has:{node.path.text}"
    if isinstance(node, Compare):
        return f"{node.path.text}{node.op}{node.value.written()}"
    if isinstance(node, Not):
        inner = write(node.part, top=False)
        return f"-({inner})" if isinstance(node.part, Word) else f"-{inner}"
    if isinstance(node, All):
        text = " ".join(write(p, top=False) for p in node.parts)
        return text if top else f"({text})"
    text = " OR ".join(write(p, top=False) for p in node.parts)
    return text if top else f"({text})"


def field_terms(node: Node | None) -> Iterator[FieldTerm]:
    """Every field term of the tree, in order."""
    if node is None:
        return
    if isinstance(node, Has | Compare):
        yield node
    elif isinstance(node, Not):
        yield from field_terms(node.part)
    elif isinstance(node, All | AnyOf):
        for part in node.parts:
            yield from field_terms(part)


# -- paths ------------------------------------------------------------------------------------


def read_path(text: str, pos: int = 0) -> tuple[FieldPath, int] | None:
    """A path at ``pos`` (None: none starts there) and where it ends; QueryProblem for one that
    starts as a path but goes wrong (``data.tags[0]``)."""
    path = ROOT
    any_key = False
    end = len(text)
    if text.startswith("$", pos):
        pos += 1
        if text.startswith(".", pos):
            found = _IDENTIFIER.match(text, pos + 1)
            if found is None:
                return None
            path, pos = child(path, Segment.KEY, found.group()), found.end()
    else:
        found = _IDENTIFIER.match(text, pos)
        if found is not None:
            path, pos = child(path, Segment.KEY, found.group()), found.end()
        elif not text.startswith(("[", "{*}"), pos):
            return None
    while pos < end:
        c = text[pos]
        if c == "." and path != ROOT:
            found = _IDENTIFIER.match(text, pos + 1)
            if found is None:
                raise QueryProblem(
                    f"{_shown(text[: pos + 1])} ends in a dot: a key with other characters is "
                    'quoted, e.g. data["a-b"]'
                )
            path, pos = child(path, Segment.KEY, found.group()), found.end()
        elif text.startswith(ITEM, pos):
            path, pos = child(path, Segment.ITEM), pos + 2
        elif text.startswith(MAP, pos):
            path, pos, any_key = child(path, Segment.MAP), pos + 3, True
        elif text.startswith('["', pos):
            key, after = _quoted(text, pos + 1)
            if not text.startswith("]", after):
                raise QueryProblem(f'{_shown(text[:after])}: a quoted key ends with "]')
            path, pos = child(path, Segment.KEY, key), after + 1
        elif c == "[":
            raise QueryProblem(
                f"{_shown(text[: pos + 1])}...: array items are written [] (any item), "
                'a key as ["name"]'
            )
        else:
            break
    return FieldPath(path, any_key), pos


def parse_path(text: str) -> FieldPath:
    """The whole of ``text`` as a path, or QueryProblem."""
    found = read_path(text.strip())
    if found is None or found[1] != len(text.strip()):
        raise QueryProblem(
            f"{_shown(text)} is not a field path: write it as the schema does, e.g. "
            'data.passId, data.tags[], data["a-b"]'
        )
    return found[0]


def _quoted(text: str, pos: int) -> tuple[str, int]:
    """The string starting with the quote at ``pos`` (backslash escapes a quote or a
    backslash) and where it ends; QueryProblem when it is not closed."""
    out: list[str] = []
    i = pos + 1
    end = len(text)
    while i < end:
        c = text[i]
        if c == "\\" and i + 1 < end:
            out.append(text[i + 1])
            i += 2
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise QueryProblem(f"{_shown(text[pos:])}: a quote is not closed")


def _shown(text: str) -> str:
    return printable(text, 60)


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
                raise QueryProblem(f"unknown verdict {_shown(value)!r}: use verified or rejected")
            return VerdictIs(verdict)
        if sep and lowered in _SOURCE_KEYS:
            if not value:
                return None
            source = _SOURCE_WORDS.get(value.lower())
            if source is None:
                raise QueryProblem(f"unknown source {_shown(value)!r}: use received or check")
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
                    f"{_shown(text)} is not a field term: a key with other characters is "
                    'quoted, e.g. data["a-b"]:x'
                )
            return Word(text)
        raw = text[end + len(op) :]
        op = ":" if op in ("=", "==") else op
        if op == ":" and raw.startswith("//"):
            return Word(text)  # a URL (https://...): searched as a word
        if not raw:
            self.unfinished.append(f"{_shown(text)} needs a value, e.g. {path.text}{op}x")
            return None
        if raw.startswith('"'):
            if not _closed(raw):
                self.unfinished.append(f"{_shown(text)}: the quote is not closed yet")
                return None
            value_text, after = _quoted(raw, 0)
            if after != len(raw):
                raise QueryProblem(f"{_shown(text)}: text after the closing quote")
            val = Value(value_text, quoted=True)
        else:
            val = Value(raw)
        if op in (">", ">=", "<", "<=") and (val.literal is not None or val.prefix is not None):
            raise QueryProblem(f"{_shown(text)}: {op} compares numbers or text, not {_shown(raw)}")
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


def quote_key(key: str) -> str:
    """A key as a path segment would spell it (``["a-b"]``)."""
    return f"[{quote(key)}]"
