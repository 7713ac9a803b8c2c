"""Search: what a person types finds the deliveries that contain it.

Every word of the query must appear, case-insensitively, as part of the webhook-id, the topic or
the body (its first 64 KiB): ``forged`` finds ``msg_forged00036``, ``0042`` finds ``pass_0042``.
Words of three characters or more go through an FTS5 index with the trigram tokenizer, so a search
stays fast over 100,000 deliveries; shorter words are matched in the webhook-id and topic only.

The index is contentless, in a file of its own next to the history, filled after each commit by
a thread of its own (indexer.py), never on the delivery's commit path. Reads attach it as ``idx``.
"""

from __future__ import annotations

from typing import Any

from walletpass_tui.webhooks.models import Attempt

INDEX_BODY_BYTES = 64 * 1024  # of each body, searchable
MIN_INDEXED_WORD = 3  # the trigram tokenizer cannot find anything shorter


def words(text: str) -> list[str]:
    return [w for w in text.replace('"', " ").split() if w]


def fts_query(text: str) -> str | None:
    """The candidates for ``text``: every trigram of every word of three characters or more.

    The index keeps no positions (``detail=none``: a third of the size), so it answers "has all
    these trigrams"; ``text_clauses`` then keeps only rows that really contain each word.
    """
    grams: dict[str, None] = {}
    for word in words(text):
        for i in range(len(word) - MIN_INDEXED_WORD + 1):
            # As typed: the tokenizer folds case itself, one character to one (str.lower may not).
            grams.setdefault(word[i : i + MIN_INDEXED_WORD], None)
    return " AND ".join(f'"{g}"' for g in grams) if grams else None


def _like(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_IN_NAMES = "({a}webhook_id LIKE ? ESCAPE '\\' OR {a}topic LIKE ? ESCAPE '\\')"
_IN_ROW = (
    "({a}webhook_id LIKE ? ESCAPE '\\' OR {a}topic LIKE ? ESCAPE '\\' OR "
    f"CAST(substr({{a}}body, 1, {INDEX_BODY_BYTES}) AS TEXT) LIKE ? ESCAPE '\\')"
)


def text_clauses(text: str, params: list[Any], alias: str = "a") -> tuple[bool, list[str]]:
    """Conditions on ``attempts`` (as ``alias``) for the user's text, and whether they need the
    index joined as ``f`` (``FROM idx.attempts_fts f JOIN attempts a ON a.id = f.rowid``)."""
    a = f"{alias}." if alias else ""
    query = fts_query(text)
    clauses: list[str] = []
    if query:
        clauses.append("f.attempts_fts MATCH ?")
        params.append(query)
    for word in words(text):
        pattern = _like(word)
        if len(word) < MIN_INDEXED_WORD:
            clauses.append(_IN_NAMES.format(a=a))
            params.extend([pattern] * 2)
        else:
            clauses.append(_IN_ROW.format(a=a))
            params.extend([pattern] * 3)
    return query is not None, clauses


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def matches_text(text: str, attempt: Attempt) -> bool:
    """Whether ``attempt`` matches ``text`` exactly as a search would find it (for live rows):
    every word a part of the webhook-id, topic or body, ASCII letters in any case."""
    names = [
        (attempt.webhook_id or "").translate(_ASCII_LOWER),
        (attempt.topic or "").translate(_ASCII_LOWER),
    ]
    body: str | None = None
    for word in words(text.translate(_ASCII_LOWER)):
        if any(word in name for name in names):
            continue
        if len(word) < MIN_INDEXED_WORD:
            return False
        if body is None:
            raw = attempt.body[:INDEX_BODY_BYTES].decode("utf-8", errors="replace")
            body = raw.translate(_ASCII_LOWER)
        if word not in body:
            return False
    return True
