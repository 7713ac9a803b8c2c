"""Change one field of a JSON body: ``data.passId=pass_1``, ``items[0].name="x"``.

A path is keys separated by dots, each optionally followed by ``[N]`` for an item of a list
(``data.tags[2]``). The value is read as JSON where it parses (``3``, ``true``, ``null``,
``{"a": 1}``, ``"quoted"``) and taken as a string otherwise (``pass_1``). Missing keys are created
as objects on the way; everything else must already be there: a path never goes into a string, a
number or ``null``, never uses a key on a list or an index on an object, and an index must name an
existing item. Each refusal is a BodyEditError naming the path and what is in the way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from walletpass_tui.errors import UsageError

__all__ = [
    "Assignment",
    "BodyEditError",
    "apply",
    "format_path",
    "parse_assignment",
    "parse_path",
    "parse_value",
]

MAX_DEPTH = 32  # keys and indexes in one path
MAX_INDEX = 100_000

Path = tuple[str | int, ...]

# [0-9], never \d: an index is written in ASCII digits (\d takes every script's).
_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[[0-9]+\])*)")
_INDEX = re.compile(r"\[([0-9]+)\]")


class BodyEditError(UsageError, ValueError):
    """A path or an assignment that cannot be applied; ``str()`` says why."""


@dataclass(frozen=True)
class Assignment:
    path: Path
    value: Any

    def __str__(self) -> str:
        return f"{format_path(self.path)}={json.dumps(self.value, ensure_ascii=False)}"


def format_path(path: Path) -> str:
    out = ""
    for token in path:
        if isinstance(token, int):
            out += f"[{token}]"
        else:
            out += f".{token}" if out else token
    return out


def parse_path(text: str) -> Path:
    """``data.items[0].name`` -> ``("data", "items", 0, "name")``."""
    if not text:
        raise BodyEditError("The path is empty; give one like data.passId.")
    tokens: list[str | int] = []
    for part in text.split("."):
        match = _SEGMENT.fullmatch(part)
        if match is None:
            raise BodyEditError(
                f"{text!r} is not a path: use keys separated by dots, each optionally followed "
                "by [N] for a list item, e.g. data.passId or data.tags[0]."
            )
        tokens.append(match.group(1))
        for index in _INDEX.findall(match.group(2)):
            if len(index) > 6 or int(index) > MAX_INDEX:
                raise BodyEditError(f"{text!r}: the index {index} is too large.")
            tokens.append(int(index))
    if len(tokens) > MAX_DEPTH:
        raise BodyEditError(f"{text!r} is {len(tokens)} levels deep; at most {MAX_DEPTH}.")
    return tuple(tokens)


def parse_value(text: str) -> Any:
    """JSON where ``text`` parses as a JSON value JSON can write back; else the text itself."""
    try:
        value = json.loads(text)
        json.dumps(value, allow_nan=False)  # NaN, Infinity, 1e999: not JSON, kept as text
    except (ValueError, RecursionError):  # not JSON: sent as the text typed
        return text
    return value


def parse_assignment(text: str) -> Assignment:
    """``PATH=VALUE``; the value after the first ``=`` (it may hold more)."""
    path, sep, value = text.partition("=")
    if not sep:
        raise BodyEditError(f"{text!r} has no '='; give PATH=VALUE, e.g. data.passId=pass_1.")
    return Assignment(parse_path(path.strip()), parse_value(value))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    return "an object"


def apply(body: Any, path: Path, value: Any) -> Any:
    """Set the field at ``path`` of ``body`` (changed in place) to ``value``; returns ``body``."""
    if not path:
        raise BodyEditError("The path is empty; give one like data.passId.")
    container = body
    for depth, token in enumerate(path):
        here = format_path(path[:depth]) or "the body"
        last = depth == len(path) - 1
        if isinstance(token, str):
            if not isinstance(container, dict):
                raise BodyEditError(
                    f"{format_path(path)}: {here} is {_kind(container)}, not an object, so it has "
                    f"no field {token!r}."
                )
            if last:
                container[token] = value
                return body
            if token not in container:
                if isinstance(path[depth + 1], int):
                    raise BodyEditError(
                        f"{format_path(path)}: {format_path(path[: depth + 1])} does not exist, "
                        "and only objects are created on the way, not lists."
                    )
                container[token] = {}
            container = container[token]
        else:
            if not isinstance(container, list):
                raise BodyEditError(
                    f"{format_path(path)}: {here} is {_kind(container)}, not a list, so it has no "
                    f"item [{token}]."
                )
            if token >= len(container):
                raise BodyEditError(
                    f"{format_path(path)}: {here} is {_kind(container)}; there is no item "
                    f"[{token}] (items are numbered from 0)."
                )
            if last:
                container[token] = value
                return body
            container = container[token]
    return body
