"""A body's fields as field queries see them: every value at its path, read the way the schema
learner reads a body (``schemas.jsonscan``), bounded whatever the body holds.

``body_fields(body)`` returns the paths (the learned schema's syntax: ``data.passId``,
``data.tags[]`` for every item, ``data["a.b"]``, ``$`` the body itself) each with the values found
there, in document order. The same function feeds the field index, the live log's match and
``events diff``, so a stored delivery and a live one match the same queries.

The learner's rules, and so these:

* a body up to 64 KiB is read by ``json.loads``, a larger one by the scanner: a key given twice in a
  small body keeps its last value (as ``json.loads`` does), in a large one both values count;
* a body that is not UTF-8 JSON has no fields at all (``has:$`` finds only JSON bodies);
* values deeper than 64 levels and keys longer than 128 characters are not read (nor anything
  below them);
* ``1`` is an integer, ``1.0`` and ``1e999`` numbers (the latter infinite); an integer beyond 64
  bits is compared as a 64-bit float, as are numbers; ``NaN`` equals nothing.

Bounds of their own: at most MAX_VALUES values per body (the rest are not read: a body of a
million items costs a pass over its text, not a million index entries).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from walletpass_tui.schemas.jsonscan import (
    BOOLEAN,
    INTEGER,
    NULL,
    NUMBER,
    STRING,
    NotJson,
    read,
    text_of,
)
from walletpass_tui.schemas.paths import MAX_DEPTH, MAX_KEY_CHARS, ROOT, Segment, child, storable

MAX_VALUES = 4_096  # values read per body (containers count: has: finds them)
MAX_TEXT_CHARS = 256  # a longer string is compared for equality only, by its digest
INT64 = 2**63

# What the index stores for a value that has no comparable value of its own.
CONTAINER = b""  # an object or an array: found by has:, equal to nothing
OBJECT_TEXT, ARRAY_TEXT = "{…}", "[…]"  # a container, as ``written_fields`` shows it
NAN = b"nan"  # NaN: unequal to everything


class _Cut(Exception):
    """MAX_VALUES reached: the rest of the body is not read."""


@dataclass
class BodyFields:
    """Each path's values in document order (``Comparable`` values, see ``comparable``), and
    whether the body was JSON at all."""

    json: bool
    values: dict[str, list[Comparable]] = field(default_factory=dict)
    cut: bool = False  # more than MAX_VALUES: the rest was not read
    # A value deeper than MAX_DEPTH or under a key longer than MAX_KEY_CHARS was not read.
    skipped: bool = False
    count: int = 0
    # A string's text as written, where its folded (compared) form differs: to show it.
    written: dict[str, str] = field(default_factory=dict)

    def has(self, path: str) -> bool:
        return path in self.values


Comparable = str | int | float | bytes


def comparable(kind: str, value: Any) -> Comparable:
    """How a JSON scalar is compared (and stored in the index): a string folded to lower case
    (a long one by its digest), a number as an int within 64 bits else a float, ``true``,
    ``false`` and ``null`` as those words (so ``:true`` finds the string "true" too)."""
    if kind == INTEGER:
        return _integer(value)
    if kind == NUMBER:
        number = float(value)  # the scanner gives text: "1e999", "NaN", "-Infinity" parse too
        return NAN if math.isnan(number) else number
    if kind == BOOLEAN:
        return "true" if value in (True, "true") else "false"
    if kind == NULL:
        return "null"
    return text_value(str(value))


def fold(text: str) -> str:
    """Text as compared and ordered: storable (a lone surrogate escaped), lower case."""
    return storable(text).lower()


def text_value(text: str) -> str | bytes:
    """A string as compared for equality: ``fold``; longer than MAX_TEXT_CHARS, its digest."""
    folded = fold(text)
    if len(folded) > MAX_TEXT_CHARS:
        return b"#" + hashlib.blake2b(folded.encode("utf-8"), digest_size=16).digest()
    return folded


def _integer(value: Any) -> int | float:
    if isinstance(value, str):  # the scanner's text: any number of digits
        if len(value.lstrip("-")) <= 18:
            return int(value)
        return float(value)  # "1" * 400 is inf, as json.loads makes such a number
    if -INT64 <= value < INT64:
        return int(value)
    try:
        return float(value)
    except OverflowError:  # beyond a float: infinite, as json.loads makes 1e999
        return math.inf if value > 0 else -math.inf


class _Reader:
    """``jsonscan``'s sink: the path of each value, within the bounds (``exact``: each value as
    JSON text, as written, instead of as compared)."""

    def __init__(self, found: BodyFields, *, exact: bool = False) -> None:
        self.found = found
        self.exact = exact
        # One frame per open container: its path (None: not read), whether it is an object, and
        # the path of the value about to come (a key's, or the array's item path).
        self.frames: list[list[Any]] = []

    def _next_path(self) -> str | None:
        if not self.frames:
            return ROOT
        return self.frames[-1][2]

    def _add(self, path: str, value: Comparable) -> None:
        found = self.found
        if found.count >= MAX_VALUES:
            found.cut = True
            raise _Cut
        found.count += 1
        found.values.setdefault(path, []).append(value)

    def _open(self, is_object: bool) -> None:
        path = self._next_path()
        if path is not None:
            self._add(path, (OBJECT_TEXT if is_object else ARRAY_TEXT) if self.exact else CONTAINER)
        depth = len(self.frames)
        item = None
        if path is not None and not is_object:
            if depth < MAX_DEPTH:
                item = child(path, Segment.ITEM)
            else:
                self.found.skipped = True
        self.frames.append([path, is_object, item])

    def begin_object(self) -> None:
        self._open(True)

    def begin_array(self) -> None:
        self._open(False)

    def end_object(self) -> None:
        self.frames.pop()

    def end_array(self) -> None:
        self.frames.pop()

    def key(self, name: str) -> None:
        frame = self.frames[-1]
        parent = frame[0]
        if parent is None:
            frame[2] = None
        elif len(self.frames) > MAX_DEPTH or len(name) > MAX_KEY_CHARS:
            frame[2] = None
            self.found.skipped = True
        else:
            frame[2] = child(parent, Segment.KEY, name)

    def scalar(self, kind: str, value: Any) -> None:
        path = self._next_path()
        if path is not None and self.exact:
            self._add(
                path,
                storable(json.dumps(value, ensure_ascii=False))
                if kind == STRING
                else text_of(value),
            )
        elif path is not None:
            found = comparable(kind, value)
            self._add(path, found)
            if kind == STRING and isinstance(found, str) and found != value:
                self.found.written.setdefault(found, storable(str(value)))


def body_fields(body: bytes) -> BodyFields:
    """Every value of ``body`` at its path (see the module's rules); never raises."""
    found = BodyFields(json=True)
    try:
        read(body, _Reader(found))
    except _Cut:
        pass  # bounded: what was read stays, ``cut`` says so
    except (NotJson, RecursionError):  # not JSON: no fields
        return BodyFields(json=False)
    return found


@dataclass(frozen=True)
class WrittenFields:
    """A JSON body's values at their paths as JSON text, as written; ``whole``: every value was
    read (none past the depth, key length or count bounds)."""

    values: dict[str, list[str]]
    whole: bool


def written_fields(body: bytes) -> WrittenFields | None:
    """Every value of ``body`` at its path as JSON text, as written (a string quoted, a number
    as its digits, ``1e999`` and ``1e2`` included, an object ``{…}``, an array ``[…]``), by the
    same rules as ``body_fields``; None: not JSON."""
    found = BodyFields(json=True)
    try:
        read(body, _Reader(found, exact=True), numbers_as_written=True)
    except _Cut:
        pass  # bounded: what was read stays, ``whole`` says so
    except (NotJson, RecursionError):  # not JSON: no fields
        return None
    values = {path: [str(v) for v in values] for path, values in found.values.items()}
    return WrittenFields(values, not (found.cut or found.skipped))
