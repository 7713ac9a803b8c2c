"""What a parsed field query is (``language.parse`` makes one): its nodes (a word, a key term, a
field term, a negation, a group), ``Parsed`` (the tree and the problems of the terms left out),
the tree written back in the language's syntax (``write``), and its field terms in order.

``QueryProblem`` is the error of a term that cannot be read, wherever it is read
(``language.py``, ``path_reading.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from walletpass_tui.errors import UsageError
from walletpass_tui.webhooks.models import Source, StoredVerdict

Op = Literal[":", "!=", ">", ">=", "<", "<="]
OPS = ("!=", ">=", "<=", "==", ":", "=", ">", "<")  # longest first; = and == are :

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = ("true", "false", "null")


class QueryProblem(UsageError):
    """A term that cannot be read; ``str()`` says what to type instead."""


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
