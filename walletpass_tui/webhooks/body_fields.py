"""Best-effort labels from a webhook body whose fields the service does not document.

Nothing here assumes a shape: a body that is not JSON, or JSON without such fields, simply has no
topic or pass id. Only plain strings are taken, bounded in length; they are shown escaped anyway.

Valid JSON that Python's parser refuses (nested deeper than its recursion allows, or an integer
longer than its 4,300-digit limit) still has its labels near the top: such a body is parsed again
with integers kept as written, and, when too deep, read by ``scan``, an iterative scanner that
checks the whole text is JSON and reads the few keys wanted near the top, bounded by a number of
tokens.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_TOPIC_KEYS = ("type", "topic", "event", "eventType", "event_type")
_PASS_ID_KEY = re.compile(r"^pass_?id$", re.IGNORECASE)
_MAX_LABEL = 120
_MAX_DEPTH = 4


def parse_json(body: bytes) -> Any | None:
    """The body as JSON, or None when it is not UTF-8 JSON (or too deep for Python's parser:
    ``labels`` still reads those)."""
    doc, _deep = _load(body)
    return doc


_TOO_DEEP = object()


def _load(body: bytes) -> tuple[Any | None, str | None]:
    """(the body as JSON or None, and its text when it is None only for its depth)."""
    if not body or body[:1] not in b'{["0123456789-tfn \t\r\n':
        return None, None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: no fields, as documented
        return None, None
    try:
        return json.loads(text), None
    except json.JSONDecodeError:  # not JSON: no fields, as documented
        return None, None
    except ValueError:  # an integer beyond Python's digit limit: valid JSON, kept as written
        try:
            return json.loads(text, parse_int=_int_or_literal), None
        except RecursionError:  # nested too deep: no fields, the text kept
            return None, text
        except ValueError:  # not JSON: no fields, as documented
            return None, None
    except RecursionError:  # nested too deep: no fields, the text kept
        return None, text


class LongInteger(str):
    """An integer too long for ``int()`` (Python's digit limit), kept as the text it was."""


_INT_DIGITS = 4000  # below sys.get_int_max_str_digits()'s default of 4300


def _int_or_literal(text: str) -> int | LongInteger:
    return int(text) if len(text) <= _INT_DIGITS else LongInteger(text)


def _label(value: Any) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= _MAX_LABEL:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate from a JSON escape: not storable text
                return None
        return value
    return None


def extract_topic(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    for key in _TOPIC_KEYS:
        found = _label(doc.get(key))
        if found:
            return found
    return None


def extract_pass_id(doc: Any, depth: int = 0) -> str | None:
    """A ``passId``/``pass_id`` string anywhere near the top, or ``pass: {"id": ...}``."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(doc, dict):
        for key, value in doc.items():
            if isinstance(key, str) and _PASS_ID_KEY.match(key):
                found = _label(value)
                if found:
                    return found
        nested = doc.get("pass")
        if isinstance(nested, dict):
            found = _label(nested.get("id"))
            if found:
                return found
        for value in doc.values():
            if isinstance(value, dict | list):
                found = extract_pass_id(value, depth + 1)
                if found:
                    return found
    elif isinstance(doc, list):
        for item in doc[:20]:
            found = extract_pass_id(item, depth + 1)
            if found:
                return found
    return None


def labels(body: bytes) -> tuple[str | None, str | None]:
    """(topic, pass id) found in the body, each None when absent."""
    doc, deep = _load(body)
    if deep is not None:
        found = scan(deep, LABEL_SCAN_STEPS)
        if found is not None and found.valid:
            return found.topic, found.pass_id
    return extract_topic(doc), extract_pass_id(doc)


def too_deep(body: bytes) -> str | None:
    """The body's text when it is valid JSON only Python's parser cannot read, for its depth;
    else None (``scan`` it to know it is JSON)."""
    return _load(body)[1]


# -- JSON too deep for Python's parser ---------------------------------------------------------

# Steps ``labels`` gives the scanner (it runs on the event loop, for every delivery so deep):
# a run of brackets, or an object's opening with its first key, is one step. Beyond it the body
# has no labels, as if it were not JSON.
LABEL_SCAN_STEPS = 20_000


@dataclass(frozen=True)
class Scan:
    """What ``scan`` learnt: whether the text is JSON, and the labels near its top."""

    valid: bool
    topic: str | None = None
    pass_id: str | None = None


_WS = r"[ \t\n\r]*"
_STRING = r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"'
_TOKEN = re.compile(
    _WS
    + r"(?:"
    + r"(?P<key>[{,]"
    + _WS
    + r"(?P<name>"
    + _STRING
    + r")"
    + _WS
    + r":)"  # a key and its colon
    + r"|(?P<str>"
    + _STRING
    + r")"
    + r"|(?P<arrays>\[[\[ \t\n\r]*)"  # a run of arrays opened
    + r"|(?P<empty>\{"
    + _WS
    + r"\})"
    + r"|(?P<close>[\]}][\]} \t\n\r]*)"  # a run of containers closed
    + r"|(?P<comma>,)"
    + r"|(?P<scalar>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
    + r"|true|false|null|NaN|-?Infinity)"
    + r")"
)
_TRAILING = re.compile(_WS + r"\Z")
_OPENER = str.maketrans({"]": "[", "}": "{", " ": None, "\t": None, "\n": None, "\r": None})
_NEAR_TOP = _MAX_DEPTH + 2  # containers deep within which keys are looked at


def scan(text: str, budget: int = LABEL_SCAN_STEPS) -> Scan | None:
    """Check that ``text`` is one JSON value, without recursion (a run of brackets, and an
    object's opening with its first key, cost one step each), and read the top-level topic key
    and a pass id near the top on the way, as ``extract_topic`` and ``extract_pass_id`` would.
    None when ``budget`` steps did not reach the end."""
    stack: list[str] = []  # the open containers, "[" or "{"
    keys: list[str | None] = []  # the key being read at each depth near the top (None: array)
    topics: dict[str, Any] = {}
    passes: list[tuple[int, int, str]] = []  # (depth, order, value)
    value_next = True  # a value is expected (else a comma, a key or a close)
    first_item = False  # ... right after "[": a close may come instead
    pos = 0
    for _step in range(budget):
        if not stack and not value_next:
            if _TRAILING.match(text, pos) is None:
                return Scan(False)
            return _found(topics, passes)
        match = _TOKEN.match(text, pos)
        if match is None:
            return Scan(False)
        pos = match.end()
        kind = match.lastgroup
        if kind == "key":
            opening = match.group(kind)[0] == "{"
            if opening:
                if not value_next:
                    return Scan(False)
                stack.append("{")
                if len(keys) < _NEAR_TOP:
                    keys.append(None)
            elif value_next or not stack or stack[-1] != "{":
                return Scan(False)
            depth = len(stack)
            if depth <= _NEAR_TOP:
                keys[depth - 1] = json.loads(match.group("name"))
            value_next, first_item = True, False
        elif kind == "arrays":
            if not value_next:
                return Scan(False)
            opened = match.group(kind).count("[")
            stack.extend("[" * opened)
            while len(keys) < min(len(stack), _NEAR_TOP):
                keys.append(None)
            first_item = True
        elif kind == "close":
            closed = match.group(kind).translate(_OPENER)
            if value_next and not (first_item and closed[0] == "["):
                return Scan(False)
            if len(closed) > len(stack) or "".join(stack[-len(closed) :])[::-1] != closed:
                return Scan(False)
            del stack[-len(closed) :]
            del keys[len(stack) :]
            value_next, first_item = False, False
        elif kind == "comma":
            if value_next or not stack or stack[-1] != "[":
                return Scan(False)
            value_next = True
        else:  # a string, a number, true, false, null, {} (or NaN and the infinities)
            if not value_next:
                return Scan(False)
            depth = len(stack)
            if kind == "str" and depth and depth <= _NEAR_TOP and stack[-1] == "{":
                _note(match.group(kind), depth, keys, topics, passes)
            value_next, first_item = False, False
    return None


def _note(
    token: str,
    depth: int,
    keys: list[str | None],
    topics: dict[str, Any],
    passes: list[tuple[int, int, str]],
) -> None:
    """A string value at ``depth`` under the key being read there: kept if it is a label."""
    key = keys[depth - 1]
    if key is None:
        return
    if depth == 1 and key in _TOPIC_KEYS:
        topics[key] = json.loads(token)
    parent = keys[depth - 2] if depth >= 2 else None
    if _PASS_ID_KEY.match(key) or (key == "id" and parent == "pass"):
        value = _label(json.loads(token))
        if value:
            passes.append((depth, len(passes), value))


def _found(topics: dict[str, Any], passes: list[tuple[int, int, str]]) -> Scan:
    return Scan(True, extract_topic(topics), min(passes)[2] if passes else None)
