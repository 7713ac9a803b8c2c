"""Search: what a person types finds the deliveries that contain it.

Every word of the query must appear, case-insensitively, as part of the webhook-id, the topic or
the body (its first 64 KiB): ``forged`` finds ``msg_forged00036``, ``0042`` finds ``pass_0042``.
Words of three characters or more go through an FTS5 index with the trigram tokenizer, so a search
stays fast over 100,000 deliveries; shorter words are matched in the webhook-id and topic only.

The index is contentless and filled after the commit, on the writer's thread, in bounded chunks
(``INSERT ... SELECT`` entirely inside SQLite, so the event loop never waits for the GIL meanwhile);
a high-water mark in ``meta`` says how far it got, so a restart indexes whatever a crash left out.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from walletpass_tui.webhooks.models import Attempt

INDEX_BODY_BYTES = 64 * 1024  # of each body, searchable
INDEX_CHUNK = 256  # rows per indexing transaction: what a delivery may have to wait behind
MIN_INDEXED_WORD = 3  # the trigram tokenizer cannot find anything shorter

# The values indexed for a row, computed by SQLite (the same expressions delete it again).
_INDEXED = (
    "COALESCE(webhook_id, ''), COALESCE(topic, ''), "
    f"CAST(substr(body, 1, {INDEX_BODY_BYTES}) AS TEXT)"
)


def indexed_upto(db: sqlite3.Connection) -> int:
    row = db.execute(
        "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_indexed_upto'"
    ).fetchone()
    return int(row[0]) if row else 0


def index_chunk(db: sqlite3.Connection, limit: int = INDEX_CHUNK) -> int:
    """Add up to ``limit`` committed rows the index has not seen; returns how many (writer thread).

    Rows are read back past the high-water mark inside the transaction, so two processes on one
    database never index a row twice, and a row pruned before it was indexed is never indexed. No
    fsync of its own (synchronous=NORMAL): the index can be rebuilt from the rows, and the next
    delivery's commit syncs it anyway.
    """
    db.execute("PRAGMA synchronous = NORMAL")
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            upto = indexed_upto(db)
            row = db.execute(
                "SELECT COUNT(*), MAX(id) FROM "
                "(SELECT id FROM attempts WHERE id > ? ORDER BY id LIMIT ?)",
                (upto, limit),
            ).fetchone()
            count, last = int(row[0]), row[1]
            if count:
                db.execute(
                    "INSERT INTO attempts_fts(rowid, webhook_id, topic, body) "
                    f"SELECT id, {_INDEXED} FROM attempts WHERE id > ? AND id <= ? ORDER BY id",
                    (upto, last),
                )
                db.execute("UPDATE meta SET value = ? WHERE key = 'fts_indexed_upto'", (str(last),))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    finally:
        db.execute("PRAGMA synchronous = FULL")
    return count


def unindex(db: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> None:
    """Tell the index to forget the rows ``where`` selects (inside the caller's transaction).

    A contentless index must only be told to delete what it was given, with the same values: rows
    past the high-water mark were never indexed (and never will be, once deleted).
    """
    db.execute(
        "INSERT INTO attempts_fts(attempts_fts, rowid, webhook_id, topic, body) "
        f"SELECT 'delete', id, {_INDEXED} FROM attempts WHERE ({where}) AND id <= ?",
        (*params, indexed_upto(db)),
    )


def words(text: str) -> list[str]:
    return [w for w in text.replace('"', " ").split() if w]


def fts_query(text: str) -> str | None:
    """The words the index can find, as an FTS5 query (each a quoted substring, all required)."""
    long = [w for w in words(text) if len(w) >= MIN_INDEXED_WORD]
    return " AND ".join(f'"{w}"' for w in long) if long else None


def _like(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def text_clauses(text: str, params: list[Any], *, id_column: str = "id") -> list[str]:
    """SQL conditions on ``attempts`` (its ``id`` as ``id_column``) for the user's text."""
    clauses: list[str] = []
    query = fts_query(text)
    if query:
        clauses.append(
            f"{id_column} IN (SELECT rowid FROM attempts_fts WHERE attempts_fts MATCH ?)"
        )
        params.append(query)
    for word in words(text):
        if len(word) < MIN_INDEXED_WORD:
            clauses.append("(webhook_id LIKE ? ESCAPE '\\' OR topic LIKE ? ESCAPE '\\')")
            params.extend([_like(word)] * 2)
    return clauses


def matches_text(text: str, attempt: Attempt) -> bool:
    """Whether ``attempt`` matches ``text`` exactly as a search would find it (for live rows)."""
    haystacks = [(attempt.webhook_id or "").lower(), (attempt.topic or "").lower()]
    body = attempt.body[:INDEX_BODY_BYTES].decode("utf-8", errors="replace").lower()
    for word in words(text.lower()):
        places = haystacks if len(word) < MIN_INDEXED_WORD else [*haystacks, body]
        if not any(word in place for place in places):
            return False
    return True
