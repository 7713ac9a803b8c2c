"""Reading a body for the learner: every value's JSON type and position, in document order, told
to a sink, in time and memory bounded by the body's size, never raising anything but ``NotJson``.

``read(body, sink)`` takes one of two roads to the same events:

* a body up to FAST_BYTES goes through ``json.loads`` (C, quick) and an iterative walk of the
  result;
* a larger body, or one ``json.loads`` gives up on (nested past the interpreter's recursion limit,
  an integer of thousands of digits), goes through ``scan``: a reader that never recurses and never
  builds values, so a body nested 100,000 deep or holding a million keys costs a pass over its
  text and a stack of one entry per open container.

Both accept what ``json.loads`` accepts for a UTF-8 text (``NaN`` and ``Infinity`` included,
control characters in strings refused). Integers stay integers: ``1`` is an integer, ``1.0`` and
``1e999`` are numbers, ``true`` is a boolean. The scanner tells a number as its text; the first road
tells it as Python reads it (``1e999`` infinite, ``1e2`` 100.0) unless asked for
``numbers_as_written``, when it too tells the text (``1e999``, ``1e2``, ``-0``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]  # json's, not in typeshed
from typing import Any, Protocol, cast

STRING = "string"
INTEGER = "integer"
NUMBER = "number"
BOOLEAN = "boolean"
NULL = "null"
OBJECT = "object"
ARRAY = "array"
TYPES = (STRING, INTEGER, NUMBER, BOOLEAN, NULL, OBJECT, ARRAY)

_WS = re.compile(r"[ \t\n\r]*")
# It matches the empty string too, so it never returns None.
_ws_match = cast(Callable[[str, int], re.Match[str]], _WS.match)
# A string without escapes (most of them), read in one match; others go through scanstring.
_PLAIN_STRING = re.compile(r'"([^"\\\x00-\x1f]*)"')
_PLAIN_KEY = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {
    "t": ("true", BOOLEAN),
    "f": ("false", BOOLEAN),
    "n": ("null", NULL),
    "N": ("NaN", NUMBER),
    "I": ("Infinity", NUMBER),
}


class NotJson(ValueError):
    """The body is not UTF-8 JSON."""


FAST_BYTES = 64 * 1024  # bodies up to this size are parsed by json.loads, larger ones scanned


class Sink(Protocol):
    """What a reader tells. ``scalar``'s value is its text, or the parsed value (``text_of``)."""

    def begin_object(self) -> None: ...
    def key(self, name: str) -> None: ...
    def end_object(self) -> None: ...
    def begin_array(self) -> None: ...
    def end_array(self) -> None: ...
    def scalar(self, kind: str, value: Any) -> None: ...


def text_of(value: Any) -> str:
    """A scalar as JSON text (a string as itself)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return json.dumps(value)
    return str(value)


class Written:
    """A number as the body wrote it (``json.loads``'s hooks make one with
    ``numbers_as_written``): its kind (INTEGER or NUMBER) and its text."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text


def _written_integer(text: str) -> Written:
    return Written(INTEGER, text)


def _written_number(text: str) -> Written:
    return Written(NUMBER, text)


def read(body: bytes, sink: Sink, *, numbers_as_written: bool = False) -> None:
    """Tell ``sink`` every value of ``body``; NotJson when it is not UTF-8 JSON.
    ``numbers_as_written``: every number told as its text, whichever road reads it."""
    text = decode(body)
    if len(body) <= FAST_BYTES:
        try:
            if numbers_as_written:
                doc = json.loads(
                    text,
                    parse_int=_written_integer,
                    parse_float=_written_number,
                    parse_constant=_written_number,
                )
            else:
                doc = json.loads(text)
        except (ValueError, RecursionError):
            pass  # not JSON, or more than json.loads takes: the scanner decides
        else:
            walk(doc, sink)
            return
    scan(text, sink)


def walk(doc: Any, sink: Sink) -> None:
    """Tell ``sink`` every value of a parsed document, without recursion."""
    stack: list[Any] = [iter((doc,))]
    ends: list[Any] = [None]
    while stack:
        for value in stack[-1]:
            if isinstance(value, tuple):  # (key, value) of an object
                sink.key(value[0])
                value = value[1]
            if isinstance(value, dict):
                sink.begin_object()
                stack.append(iter(value.items()))
                ends.append(sink.end_object)
                break
            if isinstance(value, list):
                sink.begin_array()
                stack.append(iter(value))
                ends.append(sink.end_array)
                break
            if isinstance(value, str):
                sink.scalar(STRING, value)
            elif value is None:
                sink.scalar(NULL, None)
            elif isinstance(value, bool):
                sink.scalar(BOOLEAN, value)
            elif isinstance(value, int):
                sink.scalar(INTEGER, value)
            elif isinstance(value, Written):
                sink.scalar(value.kind, value.text)
            else:
                sink.scalar(NUMBER, value)
        else:
            stack.pop()
            end = ends.pop()
            if end is not None:
                end()


def decode(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise NotJson("not UTF-8") from None


def scan(text: str, sink: Sink) -> None:
    """Tell ``sink`` every value of the JSON document ``text``; NotJson when it is not one."""
    ws = _ws_match
    number = _NUMBER.match
    plain_string = _PLAIN_STRING.match
    stack: list[bool] = []  # True: inside an object; False: inside an array
    push, pop = stack.append, stack.pop
    end = len(text)
    pos = ws(text, 0).end()
    try:
        while True:
            # -- one value at pos ------------------------------------------------------------
            c = text[pos] if pos < end else ""
            if c == '"':
                plain = plain_string(text, pos)
                if plain is not None:
                    value, pos = plain.group(1), plain.end()
                else:
                    value, pos = scanstring(text, pos + 1, True)
                sink.scalar(STRING, value)
            elif c == "{":
                sink.begin_object()
                pos = ws(text, pos + 1).end()
                if text.startswith("}", pos):
                    sink.end_object()
                    pos += 1
                else:
                    pos = _key(text, pos, sink)
                    push(True)
                    continue
            elif c == "[":
                sink.begin_array()
                pos = ws(text, pos + 1).end()
                if text.startswith("]", pos):
                    sink.end_array()
                    pos += 1
                else:
                    push(False)
                    continue
            elif c in _LITERALS:
                word, kind = _LITERALS[c]
                if not text.startswith(word, pos):
                    raise NotJson(f"unexpected text at {pos}")
                sink.scalar(kind, word)
                pos += len(word)
            else:
                found = number(text, pos)
                if found is not None:
                    frac, exp = found.groups()
                    sink.scalar(NUMBER if frac or exp else INTEGER, found.group())
                    pos = found.end()
                elif text.startswith("-Infinity", pos):
                    sink.scalar(NUMBER, "-Infinity")
                    pos += 9
                else:
                    raise NotJson(f"no value at {pos}")
            # -- after a value: a separator, or the end of one or more containers -----------
            while True:
                pos = ws(text, pos).end()
                if not stack:
                    if pos != end:
                        raise NotJson(f"extra data at {pos}")
                    return
                c = text[pos] if pos < end else ""
                if c == ",":
                    pos = ws(text, pos + 1).end()
                    if stack[-1]:
                        pos = _key(text, pos, sink)
                    break
                if c == "}" and stack[-1]:
                    pop()
                    sink.end_object()
                    pos += 1
                elif c == "]" and not stack[-1]:
                    pop()
                    sink.end_array()
                    pos += 1
                else:
                    raise NotJson(f"expected a separator at {pos}")
    except ValueError as exc:  # scanstring's own errors (a control character, a bad escape)
        if isinstance(exc, NotJson):
            raise
        raise NotJson(str(exc)) from None


def _key(text: str, pos: int, sink: Sink) -> int:
    """Read ``"name" :`` at ``pos`` (whitespace already skipped); returns where its value starts."""
    plain = _PLAIN_KEY.match(text, pos)
    if plain is not None:
        sink.key(plain.group(1))
        return plain.end()
    if not text.startswith('"', pos):
        raise NotJson(f"expected a key at {pos}")
    name, pos = scanstring(text, pos + 1, True)
    ws = _ws_match
    pos = ws(text, pos).end()
    if not text.startswith(":", pos):
        raise NotJson(f"expected ':' at {pos}")
    sink.key(name)
    return ws(text, pos + 1).end()
