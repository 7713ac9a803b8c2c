"""Field paths as a person reads them, and the bounds on what is learned.

A path names where a value sits in a body: ``data.passId``, ``data.tags[]`` (every item of an
array), ``data.balances{*}`` (every value of an object used as a map, keyed by ids), and ``$`` for
the body itself. A key that is not a plain identifier is quoted as JSON: ``data["a.b"]``,
``["__proto__"]``, so two different keys never share a path.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import Enum

# Bounds: what one group (a topic, or the pass templates) learns, whatever arrives.
MAX_DEPTH = 64  # path segments below the body; deeper values are not learned
MAX_PATHS = 2_000  # paths per group; the rest are counted as not tracked
MAP_KEYS = 50  # more id-like keys than this at one path fold them into `{*}`
MAX_KEY_CHARS = 128  # a longer key is not learned (its object is marked open)
EXAMPLE_CHARS = 80  # of the first value seen at a path
# Value sets: the values of a path are counted while it has taken at most MAX_VALUES distinct
# ones (strings up to VALUE_CHARS characters, integers up to VALUE_INT, booleans, null); once
# VALUE_SAMPLES values are counted they are its set (a number, a longer string or one more
# value ends the counting for good).
MAX_VALUES = 12
VALUE_SAMPLES = 50
VALUE_CHARS = 200
VALUE_INT = 2**53
UNTRACKED_CAP = 4_096  # distinct untracked paths counted exactly per group, then "or more"

ROOT = "$"
ITEM = "[]"
MAP = "{*}"


class Segment(Enum):
    """How a path continues its parent: a key of an object, any item of an array, any id-like
    key of an object used as a map (the body itself is the root)."""

    ROOT = "root"
    KEY = "key"
    ITEM = "item"
    MAP = "map"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A key that looks like an id: a UUID or hex run, or a word of id characters with a digit in it
# (pass_0042, tpl_7HqYb2LmN4, 1042). The same text is used as an ECMA-262 pattern in the JSON Schema
# export, so it keeps to the syntax both engines share.
ID_PATTERN = (
    r"^(?=.{1,128}$)(?:[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    r"|[0-9A-Fa-f]{8,}|[A-Za-z0-9_.:-]*[0-9][A-Za-z0-9_.:-]*)$"
)
_ID = re.compile(ID_PATTERN)


def looks_like_id(key: str) -> bool:
    """Whether ``key`` reads like an identifier a map would be keyed by."""
    return _ID.fullmatch(key) is not None


# The word an id of a family starts with: ``acct_`` of ``acct_Xq4T``, ``tpl-`` of ``tpl-7HqY``.
_FAMILY = re.compile(r"([A-Za-z]{1,16}[_:.-])[A-Za-z0-9]{4,}")


def family(key: str) -> str | None:
    """The prefix ``key`` shares with the other ids of its family (``acct_``), if any."""
    found = _FAMILY.fullmatch(key)
    return found.group(1) if found is not None else None


def map_member(key: str, ids: list[str]) -> bool:
    """Whether ``key`` is one of the keys of a map whose id-like keys are ``ids``: it looks like
    an id itself, or it is of the family most of them are of (``acct_XqTbLmNa`` beside
    ``acct_1Nv0FGQ9``: a random id without a digit in it)."""
    if looks_like_id(key):
        return True
    prefix = family(key)
    if prefix is None:
        return False
    same = sum(1 for i in ids if i.startswith(prefix))
    return same * 2 > len(ids)


def quote(key: str) -> str:
    """A key as a JSON string: quotes, backslashes and control characters escaped, a lone
    surrogate kept as the text ``\\udXXX``."""
    return storable(json.dumps(key, ensure_ascii=False))


def child(parent: str, kind: Segment, key: str = "") -> str:
    """The path of a child of ``parent``: a key, any item, or any map value."""
    base = "" if parent == ROOT else parent
    if kind is Segment.ITEM:
        return base + ITEM
    if kind is Segment.MAP:
        return base + MAP
    if _IDENTIFIER.fullmatch(key):
        return f"{base}.{key}" if base else key
    return f"{base}[{quote(key)}]"


def digest(text: str) -> bytes:
    """A short, stable digest of a path (untracked paths are counted by it)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def storable(text: str) -> str:
    """``text`` as valid UTF-8 (a lone surrogate from a JSON escape is kept as ``\\udXXX``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: kept escaped, as documented
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def example(text: str) -> str:
    """The first value seen, as stored: storable and cut to EXAMPLE_CHARS characters."""
    return storable(text[:EXAMPLE_CHARS])
