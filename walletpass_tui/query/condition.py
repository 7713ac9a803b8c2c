"""A parsed query as the store's ``RowCondition``: SQL over the history and the field index, and
the same test on one attempt in memory (a live row, a row the index does not hold yet).

Each field term is one ``EXISTS`` over the index's entries of the row (``fv``: path, row id,
value; the path's id found by its text), or, for a row past the index's mark, ``wp_field``: the
term tested on the body by ``match_term`` below, the rules the in-memory match uses. Every value
is a parameter; the SQL text is made of this module's own words only.

Values are compared as ``values.comparable`` makes them, in SQL and here alike: text folded to
lower case (SQLite compares its UTF-8 bytes, Python its code points: the same order), numbers as
integers or floats (both compare them exactly), a container as an empty blob (equal to nothing,
found by ``has:``), NaN as a blob equal to nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from walletpass_tui.query import index as field_index
from walletpass_tui.query.language import parse
from walletpass_tui.query.tree import (
    All,
    AnyOf,
    Compare,
    FieldPath,
    Has,
    Node,
    Not,
    SourceIs,
    TopicIs,
    VerdictIs,
    Word,
    write,
)
from walletpass_tui.query.values import (
    CONTAINER,
    BodyFields,
    Comparable,
    body_fields,
    fold,
    text_value,
)
from walletpass_tui.webhooks.models import (
    CHECK,
    CHECK_NOTE_PREFIXES,
    CHECK_NOTE_SQL,
    VERIFIED,
    Attempt,
    RowDriver,
    is_check_note,
)
from walletpass_tui.webhooks.store import search

FIELD_FUNCTION = "wp_field"  # (body, term) -> whether the row's body matches the term
PATH_FUNCTION = "wp_path_like"  # (path, pattern with {*}) -> whether the path is one it stands for
_NUMERIC = "typeof({c}) IN ('integer', 'real')"
_CHECK_ROW = CHECK_NOTE_SQL.format(note="a.note")


# -- one term on one body ---------------------------------------------------------------------


def _equal(term: Compare) -> Callable[[Comparable], bool]:
    value = term.value
    prefix = value.prefix
    if prefix is not None:
        start = text_value(prefix)
        return lambda v: isinstance(v, str) and isinstance(start, str) and v.startswith(start)
    number = value.number
    if number is not None:
        text = text_value(value.text)
        return lambda v: (type(v) in (int, float) and v == number) or v == text
    wanted = value.literal or text_value(value.text)
    return lambda v: v == wanted


def _ordered(term: Compare) -> Callable[[Comparable], bool]:
    op = term.op
    number = term.value.number
    if number is not None:
        bound: int | float | str = number
        kinds: tuple[type, ...] = (int, float)
    else:
        bound = fold(term.value.text)
        kinds = (str,)

    def test(v: Comparable) -> bool:
        if type(v) not in kinds:
            return False
        if op == ">":
            return v > bound  # type: ignore[operator]  # same kind, checked above
        if op == ">=":
            return v >= bound  # type: ignore[operator]  # same kind, checked above
        if op == "<":
            return v < bound  # type: ignore[operator]  # same kind, checked above
        return v <= bound  # type: ignore[operator]  # same kind, checked above

    return test


@functools.lru_cache(maxsize=256)
def _value_test(term: Compare) -> Callable[[Comparable], bool]:
    if term.op == ":":
        return _equal(term)
    if term.op == "!=":
        equal = _equal(term)
        return lambda v: v != CONTAINER and not equal(v)
    return _ordered(term)


def _values(fields: BodyFields, path: FieldPath) -> list[Comparable]:
    if not path.any_key:
        return fields.values.get(path.text, [])
    out: list[Comparable] = []
    for found, values in fields.values.items():
        if path_like(found, path.text):
            out.extend(values)
    return out


def match_term(term: Has | Compare, fields: BodyFields) -> bool:
    """Whether a body's fields match one field term (any value at the path will do)."""
    values = _values(fields, term.path)
    if isinstance(term, Has):
        return bool(values)
    test = _value_test(term)
    return any(test(v) for v in values)


_KEY = r'(?:\.[A-Za-z_][A-Za-z0-9_]*|\["(?:[^"\\]|\\.)*"\]|\{\*\})'
_FIRST_KEY = r'(?:[A-Za-z_][A-Za-z0-9_]*|\["(?:[^"\\]|\\.)*"\]|\{\*\})'


@functools.lru_cache(maxsize=64)
def _pattern(pattern: str) -> re.Pattern[str]:
    pieces = pattern.split("{*}")
    out = [re.escape(pieces[0])]
    for i, piece in enumerate(pieces[1:]):
        first = i == 0 and pieces[0] == ""
        out.append(_FIRST_KEY if first else _KEY)
        out.append(re.escape(piece))
    return re.compile("".join(out))


def path_like(path: str, pattern: str) -> bool:
    """Whether ``path`` is one that ``pattern`` (a path with ``{*}``: any one key) stands for."""
    return _pattern(pattern).fullmatch(path) is not None


# -- the SQL functions ------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _term(text: str) -> Has | Compare | None:
    node = parse(text).node
    return node if isinstance(node, Has | Compare) else None


@functools.lru_cache(maxsize=16)
def fields_of(body: bytes) -> BodyFields:
    """``body_fields``, remembered for the last few bodies: a row's terms, and the same rows
    asked again (the next page, the count), share one reading. Never changed by a caller."""
    return body_fields(body)


def field_function(body: bytes | str | None, term_text: str) -> int:
    """``wp_field``: whether the row's body matches the term written ``term_text``."""
    term = _term(term_text)
    if term is None:
        return 0
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    return int(match_term(term, fields_of(body or b"")))


def path_function(path: str | None, pattern: str) -> int:
    return int(path is not None and path_like(path, pattern))


# -- the condition ----------------------------------------------------------------------------


def _value_sql(term: Compare, column: str, params: list[Any]) -> str:
    """The test of one indexed value (``column``) against the term."""
    if term.op in (":", "!="):
        value = term.value
        prefix = value.prefix
        if prefix is not None:
            start = text_value(prefix)
            if not isinstance(start, str):  # too long to be a prefix of anything indexed as text
                equal = "0"
            else:
                equal = f"(typeof({column}) = 'text' AND substr({column}, 1, ?) = ?)"
                params.extend([len(start), start])
        elif value.number is not None:
            equal = f"({column} = ? OR {column} = ?)"
            params.extend([value.number, text_value(value.text)])
        else:
            equal = f"{column} = ?"
            params.append(value.literal or text_value(value.text))
        if term.op == ":":
            return equal
        return f"({column} != x'' AND NOT {equal})"
    number = term.value.number
    kind = _NUMERIC.format(c=column) if number is not None else f"typeof({column}) = 'text'"
    params.append(number if number is not None else fold(term.value.text))
    return f"({kind} AND {column} {term.op} ?)"


def _path_sql(path: FieldPath, column: str, params: list[Any]) -> str:
    params.append(path.text)
    if path.any_key:
        return f"{column} IN (SELECT id FROM fx.paths WHERE {PATH_FUNCTION}(text, ?))"
    return f"{column} = (SELECT id FROM fx.paths WHERE text = ?)"


def _term_sql(term: Has | Compare, params: list[Any], upto: int | None) -> str:
    # The body is read for a row past the mark only: the rows' scan can then read their ids
    # alone (an index of them), never the whole table, to test the others.
    later = f"{FIELD_FUNCTION}((SELECT b.body FROM attempts b WHERE b.id = a.id), ?)"
    if upto is None:
        params.append(write(term))
        return later
    params.append(upto)
    params.append(write(term))
    inner: list[Any] = []
    where = [_path_sql(term.path, "v.path", inner), "v.id = a.id"]
    if isinstance(term, Compare):
        where.append(_value_sql(term, "v.value", inner))
    params.extend(inner)
    exists = f"EXISTS (SELECT 1 FROM fx.fv v WHERE {' AND '.join(where)})"
    return f"(CASE WHEN a.id > ? THEN {later} ELSE {exists} END)"


def _words_sql(words: Sequence[Word], params: list[Any]) -> str:
    text = " ".join(w.text for w in words)
    clauses = search.word_clauses(text, params)
    return "(" + " AND ".join(clauses) + ")" if clauses else "1"


def _node_sql(node: Node, params: list[Any], upto: int | None) -> str:
    if isinstance(node, Has | Compare):
        return _term_sql(node, params, upto)
    if isinstance(node, Word):
        return _words_sql([node], params)
    if isinstance(node, TopicIs):
        params.append(node.topic)
        return "a.topic IS ?"
    if isinstance(node, VerdictIs):
        params.append(VERIFIED)
        return "a.verdict = ?" if node.verdict == VERIFIED else "a.verdict != ?"
    if isinstance(node, SourceIs):
        params.extend(CHECK_NOTE_PREFIXES)
        return _CHECK_ROW if node.source == CHECK else f"NOT {_CHECK_ROW}"
    if isinstance(node, Not):
        return f"NOT {_node_sql(node.part, params, upto)}"
    if isinstance(node, All):
        words = [p for p in node.parts if isinstance(p, Word)]
        parts = [_words_sql(words, params)] if words else []
        parts.extend(_node_sql(p, params, upto) for p in node.parts if not isinstance(p, Word))
        return "(" + " AND ".join(parts) + ")"
    return "(" + " OR ".join(_node_sql(p, params, upto) for p in node.parts) + ")"


def _node_matches(node: Node, attempt: Attempt, fields: list[BodyFields]) -> bool:
    if isinstance(node, Has | Compare):
        if not fields:
            fields.append(fields_of(attempt.body))
        return match_term(node, fields[0])
    if isinstance(node, Word):
        return search.matches_text(node.text, attempt)
    if isinstance(node, TopicIs):
        return attempt.topic == node.topic
    if isinstance(node, VerdictIs):
        return (attempt.verdict == VERIFIED) == (node.verdict == VERIFIED)
    if isinstance(node, SourceIs):
        return is_check_note(attempt.note) == (node.source == CHECK)
    if isinstance(node, Not):
        return not _node_matches(node.part, attempt, fields)
    if isinstance(node, All):
        return all(_node_matches(p, attempt, fields) for p in node.parts)
    return any(_node_matches(p, attempt, fields) for p in node.parts)


def _single(node: Node) -> bool:
    return isinstance(node, Has | Compare) and not node.path.any_key


def _driver_part(node: Node, *, counting: bool) -> Node | None:
    """The part whose index entries list the rows: one every match must have (not negated), of
    one path; an equality first (its matches are fewest, usually), then another comparison, then
    has:. To count, an OR of such terms too (its entries are gathered and grouped: quick to
    count, but a first page of a common OR comes sooner from the newest rows, one by one)."""
    parts = node.parts if isinstance(node, All) else (node,)
    terms = [p for p in parts if isinstance(p, Has | Compare) and _single(p)]
    compares = [t for t in terms if isinstance(t, Compare)]
    ranked: list[Node] = [t for t in compares if t.op == ":"]
    ranked += [t for t in compares if t.op != ":"]
    ranked += [t for t in terms if isinstance(t, Has)]
    if counting:
        ranked += [p for p in parts if isinstance(p, AnyOf) and all(map(_single, p.parts))]
    return ranked[0] if ranked else None


def _entries_sql(term: Has | Compare, params: list[Any]) -> str:
    """The index entries (``d``) of one term."""
    clauses = [_path_sql(term.path, "d.path", params)]
    if isinstance(term, Compare):
        clauses.append(_value_sql(term, "d.value", params))
    return " AND ".join(clauses)


@dataclass(frozen=True)
class FieldCondition:
    """A query's terms beyond the log filter's columns, as the store runs them."""

    node: Node

    def index_file(self, history: Path) -> Path:
        return field_index.index_path(history)

    def index_mark(self) -> str:
        return field_index.MARK_SQL

    def functions(self) -> Sequence[tuple[str, int, Callable[..., Any]]]:
        return ((FIELD_FUNCTION, 2, field_function), (PATH_FUNCTION, 2, path_function))

    def sql(self, params: list[Any], upto: int | None) -> str:
        return _node_sql(self.node, params, upto)

    def driven(
        self, upto: int, *, counting: bool = False
    ) -> tuple[RowDriver, FieldCondition | None] | None:
        part = _driver_part(self.node, counting=counting)
        if part is None:
            return None
        params: list[Any] = []
        if isinstance(part, AnyOf):
            branches = [_entries_sql(t, params) for t in part.parts if isinstance(t, Has | Compare)]
            entries = "(" + " OR ".join(f"({b})" for b in branches) + ")"
        else:
            assert isinstance(part, Has | Compare)
            entries = _entries_sql(part, params)
        source = "fx.fv d JOIN attempts a ON a.id = d.id"
        driver = RowDriver(source, "d.id", (entries,), tuple(params))
        rest: Node | None = None
        if isinstance(self.node, All):
            left = tuple(p for p in self.node.parts if p is not part)
            rest = None if not left else left[0] if len(left) == 1 else All(left)
        return driver, (FieldCondition(rest) if rest is not None else None)

    def complement(self) -> FieldCondition | None:
        """``-has:x`` or ``-x:v`` alone: what it negates (its rows are listed by the index)."""
        node = self.node
        if isinstance(node, Not) and _driver_part(node.part, counting=True) is node.part:
            return FieldCondition(node.part)
        return None

    def matches(self, attempt: Attempt) -> bool:
        return _node_matches(self.node, attempt, [])

    def text(self) -> str:
        return write(self.node)
