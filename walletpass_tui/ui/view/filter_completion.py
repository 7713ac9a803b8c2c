"""What the filter box offers as the user types: the known field paths that start with the word
at the cursor (each with its type and how often it is there), and, after ``path:``, the values of
a field that took few.

Pure: the text, the cursor and the known paths in; the span to replace and the choices out. The
paths and values come from bodies (untrusted): the pane shows them as plain ``Text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from walletpass_tui.query.known import KnownPaths, PathInfo
from walletpass_tui.query.path_reading import read_path
from walletpass_tui.query.tree import OPS, QueryProblem, Value

LIMIT = 8  # choices shown at once
_STOPS = " \t()"
_PATH_START = re.compile(r"[A-Za-z_$\[{]")


@dataclass(frozen=True)
class Choice:
    label: str  # the path or the value, as it is inserted
    detail: str  # its type and presence, or how often the value was seen


@dataclass(frozen=True)
class Completion:
    """Replace ``text[start:end]`` by a choice's label."""

    start: int
    end: int
    choices: tuple[Choice, ...]


def _token_start(text: str, cursor: int) -> int:
    start = cursor
    quoted = False
    while start > 0:
        c = text[start - 1]
        if c == '"':
            quoted = not quoted
        elif c in _STOPS and not quoted:
            break
        start -= 1
    return start


def presence_text(info: PathInfo) -> str:
    """How often the field is there: among the objects that could hold it (the learned
    schema's), else in how many deliveries the field index found it."""
    if info.presence is None:
        rows = info.rows or 0
        return f"in {rows:,} deliver{'y' if rows == 1 else 'ies'}"
    percent = info.presence * 100
    return f"{percent:.0f}%" if percent >= 1 or percent == 0 else "<1%"


def value_text(value: str | int | float) -> str:
    """A value as typed after ``path:`` (text quoted when it would read otherwise)."""
    if isinstance(value, str):
        return Value(value, quoted=not _plain(value)).written()
    return repr(value)


def path_detail(info: PathInfo) -> str:
    parts = [info.type_text, presence_text(info)] if info.types else [presence_text(info)]
    if info.values:
        shown = " | ".join(value_text(v) for v in info.values[:4])
        parts.append(shown + (" …" if len(info.values) > 4 else ""))
    return " · ".join(parts)


def complete(text: str, cursor: int, known: KnownPaths, limit: int = LIMIT) -> Completion | None:
    """What to offer for the word that ends at ``cursor`` (None: nothing)."""
    if known.empty or text[cursor : cursor + 1] not in ("", " ", ")"):
        return None  # the cursor is inside a word
    start = _token_start(text, cursor)
    token = text[start:cursor]
    if token.startswith("-"):
        token, start = token[1:], start + 1
    if token.lower().startswith("has:"):
        token, start = token[4:], start + 4
        return _paths(token, start, cursor, known, limit, always=True)
    if not token or not _PATH_START.match(token):
        return None
    try:
        found = read_path(token)
    except QueryProblem:  # a path still being typed (data.tags[, data.): offer by its prefix
        found = None
    if found is not None:
        path, end = found
        op = next((o for o in OPS if token.startswith(o, end)), None)
        if op is not None:
            return _values(path.text, token[end + len(op) :], start + end + len(op), cursor, known)
    return _paths(token, start, cursor, known, limit, always=False)


def _paths(
    prefix: str, start: int, cursor: int, known: KnownPaths, limit: int, *, always: bool
) -> Completion | None:
    infos = known.completions(prefix)
    if not always and (not prefix or [i.path for i in infos] == [prefix]):
        return None  # nothing typed, or exactly a known path: nothing to offer
    choices = tuple(Choice(i.path, path_detail(i)) for i in infos[:limit])
    return Completion(start, cursor, choices) if choices else None


def _values(path: str, typed: str, start: int, cursor: int, known: KnownPaths) -> Completion | None:
    info = known.paths.get(path)
    if info is None or not info.values:
        return None
    low = typed.strip('"').lower()
    counts = info.counts if len(info.counts) == len(info.values) else (0,) * len(info.values)
    choices = tuple(
        Choice(value_text(v), f"seen {n:,} time{'' if n == 1 else 's'}" if n else "seen")
        for v, n in zip(info.values, counts, strict=True)
        if value_text(v).strip('"').lower().startswith(low)
        and value_text(v).strip('"').lower() != low
    )
    return Completion(start, cursor, choices) if choices else None


def _plain(value: str) -> bool:
    """A value that reads back as the same text unquoted (not a number, literal or pattern)."""
    unquoted = Value(value)
    return unquoted.number is None and unquoted.literal is None and unquoted.prefix is None
