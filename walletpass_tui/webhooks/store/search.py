"""Search: what a person types finds the deliveries that contain it.

Every word of the query must appear, case-insensitively, as part of the webhook-id, the topic or
the body (its first 64 KiB): ``forged`` finds ``msg_forged00036``, ``0042`` finds ``pass_0042``.
Words of three characters or more go through an FTS5 index with the trigram tokenizer, so a search
stays fast over 100,000 deliveries; shorter words are matched in the webhook-id and topic only.

A query of any length is answered (a pasted body of thousands of words too): the index is asked
for at most INDEX_GRAMS trigrams and SQL checks at most SQL_WORDS words (the longest), so the
statement stays small; any further word is confirmed in each remaining row by ``wp_has_words``, a
function the reading connection registers (``has_words``). The rules are the same for every word.

The index is contentless, in a file of its own next to the history, filled after each commit by
a thread of its own (indexer.py), never on the delivery's commit path. Reads attach it as ``idx``
and read how far it goes before they search (``indexer.INDEXED_UPTO_SQL``): rows committed since
are looked at one by one (queries.py), so a search finds the newest deliveries while the index
catches up, and every row is when the index is of another history.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from walletpass_tui.webhooks.models import Attempt

INDEX_BODY_BYTES = 64 * 1024  # of each body, searchable
MIN_INDEXED_WORD = 3  # the trigram tokenizer cannot find anything shorter
SQL_WORDS = 16  # words checked by SQL itself; the rest by has_words()
INDEX_GRAMS = 64  # trigrams asked of the index: any of them narrow the rows, the words confirm
HAS_WORDS = "wp_has_words"  # the row check's name on a reading connection
_SEPARATOR = "\n"  # never part of a word (words are split at whitespace)
_MANY_WORDS = 32  # from this many words on, a row's body is split into its words once

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def words(text: str) -> list[str]:
    """The query's words, each once (LIKE folds ASCII letters only: so does the comparison)."""
    seen: dict[str, str] = {}
    for word in text.replace('"', " ").split():
        seen.setdefault(word.translate(_ASCII_LOWER), word)
    return list(seen.values())


def _split(text: str) -> tuple[list[str], list[str]]:
    """(the words SQL checks: the longest SQL_WORDS, the words left to ``has_words``)."""
    found = words(text)
    if len(found) <= SQL_WORDS:
        return found, []
    longest = sorted(found, key=len, reverse=True)
    return longest[:SQL_WORDS], longest[SQL_WORDS:]


def fts_query(text: str) -> str | None:
    """The candidates for ``text``: trigrams of its (longest) words, at most INDEX_GRAMS.

    The index keeps no positions (``detail=none``: a third of the size), so it answers "has all
    these trigrams"; ``word_clauses`` then keep only rows that really contain each word.
    """
    grams: dict[str, None] = {}
    for word in _split(text)[0]:
        for i in range(len(word) - MIN_INDEXED_WORD + 1):
            if len(grams) >= INDEX_GRAMS:
                break
            gram = word[i : i + MIN_INDEXED_WORD]
            if "\x00" in gram:
                continue  # FTS5 cannot take a NUL in a query: the word itself is still checked
            # As typed: the tokenizer folds case itself, one character to one (str.lower may not).
            grams.setdefault(gram, None)
    return " AND ".join(f'"{g}"' for g in grams) if grams else None


def _like(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_IN_NAMES = "({a}webhook_id LIKE ? ESCAPE '\\' OR {a}topic LIKE ? ESCAPE '\\')"
_IN_ROW = (
    "({a}webhook_id LIKE ? ESCAPE '\\' OR {a}topic LIKE ? ESCAPE '\\' OR "
    f"CAST(substr({{a}}body, 1, {INDEX_BODY_BYTES}) AS TEXT) LIKE ? ESCAPE '\\')"
)
_IN_ROW_LATER = (
    f"{HAS_WORDS}({{a}}webhook_id, {{a}}topic, substr({{a}}body, 1, {INDEX_BODY_BYTES}), ?)"
)


@dataclass(frozen=True)
class IndexUse:
    """Whether a reading connection has the search index attached as ``idx`` (a read-only look
    may find none it can open: every row is then looked at)."""

    attached: bool = True


KEPT_UP = IndexUse()
NO_INDEX = IndexUse(attached=False)

# The index drives a search in rowid order, so the newest matches of a common word come at once.
JOINED = "idx.attempts_fts f JOIN attempts a ON a.id = f.rowid"


def index_query(text: str, index: IndexUse = KEPT_UP) -> str | None:
    """What to ask the index for ``text`` (None: no index, or no word it can find)."""
    return fts_query(text) if index.attached else None


def word_clauses(text: str, params: list[Any]) -> list[str]:
    """A condition per word on ``attempts`` (as ``a``), checked in each row (the index only
    narrows the rows down); their values appended to ``params``."""
    clauses: list[str] = []
    in_sql, later = _split(text)
    for word in in_sql:
        pattern = _like(word)
        if len(word) < MIN_INDEXED_WORD:
            clauses.append(_IN_NAMES.format(a="a."))
            params.extend([pattern] * 2)
        else:
            clauses.append(_IN_ROW.format(a="a."))
            params.extend([pattern] * 3)
    if later:  # last: SQLite looks at it only for rows every other condition kept
        clauses.append(_IN_ROW_LATER.format(a="a."))
        params.append(_SEPARATOR.join(later))
    return clauses


@functools.lru_cache(maxsize=8)
def _lowered(joined: str) -> tuple[str, ...]:
    return tuple(word.translate(_ASCII_LOWER) for word in joined.split(_SEPARATOR))


def _has_all(
    lowered: tuple[str, ...] | list[str], webhook_id: str | None, topic: str | None, body: bytes
) -> bool:
    names = [(webhook_id or "").translate(_ASCII_LOWER), (topic or "").translate(_ASCII_LOWER)]
    text: str | None = None
    tokens: set[str] = set()  # the body's own words: most words of a pasted body are one
    for word in lowered:
        if any(word in name for name in names):
            continue
        if len(word) < MIN_INDEXED_WORD:
            return False
        if text is None:
            raw = body[:INDEX_BODY_BYTES].decode("utf-8", errors="replace")
            text = raw.translate(_ASCII_LOWER)
            if len(lowered) > _MANY_WORDS:
                tokens = set(text.replace('"', " ").split())
        if word not in tokens and word not in text:
            return False
    return True


def has_words(
    webhook_id: str | None, topic: str | None, body: bytes | str | None, joined: str
) -> int:
    """``wp_has_words``: whether a row has every word of ``joined`` (words joined by newlines),
    by the rules of a search. Registered on every reading connection."""
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    return int(_has_all(_lowered(joined), webhook_id, topic, body or b""))


def matches_text(text: str, attempt: Attempt) -> bool:
    """Whether ``attempt`` matches ``text`` exactly as a search would find it (for live rows):
    every word a part of the webhook-id, topic or body, ASCII letters in any case."""
    lowered = [word.translate(_ASCII_LOWER) for word in words(text)]
    return _has_all(lowered, attempt.webhook_id, attempt.topic, attempt.body)
