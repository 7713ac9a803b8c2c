"""Reading a field path as the query language writes it, the learned schema's syntax
(``schemas/paths.py``): ``data.passId``, ``data.tags[]``, ``data.balances{*}``, ``data["a.b"]``,
``$``. ``read_path`` finds one inside a term, ``parse_path`` reads a whole text as one; a path
that starts well but goes wrong is a ``QueryProblem`` that says how to write it.
"""

from __future__ import annotations

import re

from walletpass_tui.query.tree import FieldPath, QueryProblem
from walletpass_tui.schemas.paths import ITEM, MAP, ROOT, Segment, child
from walletpass_tui.text import printable

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
                    f"{shown(text[: pos + 1])} ends in a dot: a key with other characters is "
                    'quoted, e.g. data["a-b"]'
                )
            path, pos = child(path, Segment.KEY, found.group()), found.end()
        elif text.startswith(ITEM, pos):
            path, pos = child(path, Segment.ITEM), pos + 2
        elif text.startswith(MAP, pos):
            path, pos, any_key = child(path, Segment.MAP), pos + 3, True
        elif text.startswith('["', pos):
            key, after = quoted(text, pos + 1)
            if not text.startswith("]", after):
                raise QueryProblem(f'{shown(text[:after])}: a quoted key ends with "]')
            path, pos = child(path, Segment.KEY, key), after + 1
        elif c == "[":
            raise QueryProblem(
                f"{shown(text[: pos + 1])}...: array items are written [] (any item), "
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
            f"{shown(text)} is not a field path: write it as the schema does, e.g. "
            'data.passId, data.tags[], data["a-b"]'
        )
    return found[0]


# What a backslash and the letter after it stand for: JSON's escapes (a learned path's quoted key
# is a JSON string) and what ``text.visible`` writes for a character it does not show (``\x7f``,
# ``\u2028``, ``\U000f0000``), so a path is typed as the schema and the dashboard print it.
_SHORT = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_HEX = re.compile(r"[0-9A-Fa-f]+")


def quoted(text: str, pos: int) -> tuple[str, int]:
    r"""The string starting with the quote at ``pos`` and where it ends; QueryProblem when it is
    not closed or an escape is not whole. A backslash escapes a quote or a backslash, and
    reads ``\n``, ``\t``, ``\r``, ``\b``, ``\f``, ``\xNN``, ``\uNNNN`` and ``\UNNNNNNNN``
    as one character each (``\udc80``, a lone surrogate, is how the schema prints one: a
    character outside the Basic Plane is printed as itself, or as ``\U...``); before any other
    character it stands for that character."""
    out: list[str] = []
    i = pos + 1
    end = len(text)
    while i < end:
        c = text[i]
        if c == "\\" and i + 1 < end:
            letter = text[i + 1]
            digits = _HEX_DIGITS.get(letter)
            if digits is None:
                out.append(_SHORT.get(letter, letter))
                i += 2
                continue
            out.append(chr(_code_point(text, i, digits)))
            i += 2 + digits
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise QueryProblem(f"{shown(text[pos:])}: a quote is not closed")


def _code_point(text: str, at: int, digits: int) -> int:
    """The code point of the escape at ``at`` (a backslash, a letter, ``digits`` hex digits)."""
    found = _HEX.match(text, at + 2, at + 2 + digits)
    code = int(found.group(), 16) if found and len(found.group()) == digits else None
    if code is None or code > 0x10FFFF:
        escape = text[at : at + 2]
        example = {"\\x": "\\x7f", "\\u": "\\u2028", "\\U": "\\U0001f600"}[escape]
        raise QueryProblem(
            f"{shown(text[at : at + 2 + digits])}: {escape} is followed by {digits} hex digits "
            f"(a character up to U+10FFFF), e.g. {example}; a backslash itself is written \\\\"
        )
    return code


def shown(text: str) -> str:
    return printable(text, 60)
