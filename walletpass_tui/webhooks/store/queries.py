"""Reading the history: one aiosqlite connection (its own thread, ``query_only``), never blocked by
the writer (WAL: readers see the last commit, writers do not wait for them)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from walletpass_tui.webhooks.models import (
    PENDING,
    REJECTED,
    VERIFIED,
    Attempt,
    ForwardRow,
    LogFilter,
    LogRow,
    MessageRow,
    Stats,
    StoreError,
)
from walletpass_tui.webhooks.store import rows, schema, search
from walletpass_tui.webhooks.store.indexer import index_path

T = TypeVar("T")


class Reader:
    """Every query the dashboard and the commands run; each failure is a StoreError."""

    def __init__(
        self, path: Path, conn: aiosqlite.Connection, index: search.IndexUse = search.KEPT_UP
    ) -> None:
        self.path = path
        self._db = conn
        self._index = index

    @classmethod
    async def open(cls, path: Path, busy_timeout_ms: int) -> Reader:
        """The search index (created by the indexer before this) is attached as ``idx``."""
        conn = await aiosqlite.connect(path, isolation_level=None)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            await conn.create_function(search.HAS_WORDS, 4, search.has_words, deterministic=True)
            await conn.execute("ATTACH DATABASE ? AS idx", (str(index_path(path)),))
            await conn.execute("PRAGMA query_only = ON")
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        return cls(path, conn)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._db.close()

    async def fetch(self, sql: str, params: Sequence[Any], build: Callable[[Any], T]) -> list[T]:
        try:
            # One trip to aiosqlite's thread (iterating the cursor would take one per 64 rows,
            # each waiting for a turn of a busy event loop).
            found = await self._db.execute_fetchall(sql, params)
            return [build(row) for row in found]
        except (sqlite3.Error, ValueError) as exc:
            raise StoreError(schema.explain(exc, self.path)) from None

    async def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        found = await self.fetch(sql, params, lambda r: r[0])
        return found[0] if found else None

    async def last_relay_cursor(self, relay_url: str) -> int:
        """The newest relay cursor stored for ``relay_url`` (0: none yet)."""
        sql = "SELECT MAX(relay_cursor) FROM attempts WHERE relay_url = ? AND relay_cursor >= 0"
        found = await self.one(sql, (relay_url,))
        return int(found or 0)

    async def has_relay_cursor(self, relay_url: str, cursor: int) -> bool:
        sql = "SELECT 1 FROM attempts WHERE relay_url = ? AND relay_cursor = ?"
        return await self.one(sql, (relay_url, cursor)) is not None

    # -- the event log -----------------------------------------------------------------------

    async def log_page(
        self,
        flt: LogFilter | None,
        *,
        limit: int,
        before_id: int | None,
        after_id: int | None,
        oldest_first: bool,
    ) -> list[LogRow]:
        params: list[Any] = []
        source, key, where = _where(
            flt, params, self._index, before_id=before_id, after_id=after_id
        )
        params.append(limit)
        order = "ASC" if oldest_first else "DESC"
        sql = f"SELECT {_LOG} FROM {source}{where} ORDER BY {key} {order} LIMIT ?"
        return await self.fetch(sql, params, rows.log_row)

    async def count(self, flt: LogFilter | None) -> int:
        params: list[Any] = []
        source, _, where = _where(flt, params, self._index)
        return int(await self.one(f"SELECT COUNT(*) FROM {source}{where}", params))

    async def attempt(self, attempt_id: int) -> Attempt | None:
        found = await self.fetch(
            f"SELECT {rows.ATTEMPT_COLUMNS} FROM attempts WHERE id = ?",
            [attempt_id],
            rows.attempt_from_row,
        )
        return found[0] if found else None

    async def message_attempts(self, webhook_id: str) -> list[Attempt]:
        return await self.fetch(
            f"SELECT {rows.ATTEMPT_COLUMNS} FROM attempts WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            rows.attempt_from_row,
        )

    async def message_attempts_without_bodies(self, webhook_id: str) -> list[Attempt]:
        """Every attempt of one message, oldest first, each with an empty ``body`` (its size
        in ``body_size``): an attempt list costs no body reads, however large they are."""
        return await self.fetch(
            f"SELECT {_NO_BODY} FROM attempts WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            rows.attempt_from_row,
        )

    async def list_messages(
        self,
        *,
        limit: int,
        topic: str | None,
        verdict: str | None,
        since_ms: int | None,
        text: str | None,
    ) -> list[MessageRow]:
        clauses: list[str] = []
        params: list[Any] = []
        if topic:
            clauses.append("topic = ?")
            params.append(topic)
        if verdict == VERIFIED:
            clauses.append("verified_attempts > 0")
        elif verdict == REJECTED:
            clauses.append("verified_attempts = 0")
        if since_ms is not None:
            clauses.append("last_received_at_ms >= ?")
            params.append(since_ms)
        joined, matching = search.text_clauses(text or "", params, index=self._index)
        if matching:
            source = _JOINED if joined else "attempts a"
            clauses.append(
                f"webhook_id IN (SELECT a.webhook_id FROM {source} WHERE "
                + " AND ".join(matching)
                + ")"
            )
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        params.append(limit)
        sql = (
            "SELECT webhook_id, topic, pass_id, "
            f"CASE WHEN verified_attempts > 0 THEN '{VERIFIED}' ELSE '{REJECTED}' END, reason, "
            "attempts, first_received_at_ms, last_received_at_ms, endpoint_id, last_status "
            f"FROM messages{where} ORDER BY last_received_at_ms DESC, last_attempt_id DESC LIMIT ?"
        )
        return await self.fetch(sql, params, lambda r: MessageRow(*r))

    async def stats(self) -> Stats:
        sql = (
            "SELECT COUNT(*), "
            f"COALESCE(SUM(verdict = '{VERIFIED}'), 0), "
            f"COALESCE(SUM(verdict != '{VERIFIED}'), 0), "
            "COALESCE(SUM(attempt_no > 1), 0) FROM attempts"
        )
        found = await self.fetch(sql, [], lambda r: Stats(*(int(x) for x in r)))
        return found[0]

    async def last_id(self) -> int:
        return int(await self.one("SELECT COALESCE(MAX(id), 0) FROM attempts"))

    # -- the forward queue -------------------------------------------------------------------

    async def next_pending_forward(self, target: str) -> ForwardRow | None:
        found = await self.fetch(
            f"SELECT {rows.FORWARD_COLUMNS} FROM forwards WHERE state = ? AND target = ? "
            "ORDER BY id LIMIT 1",
            [PENDING, target],
            rows.forward_from_row,
        )
        return found[0] if found else None

    async def pending_forwards_by_target(self) -> list[tuple[str, int]]:
        return await self.fetch(
            "SELECT target, COUNT(*) FROM forwards WHERE state = ? GROUP BY target ORDER BY target",
            [PENDING],
            lambda r: (str(r[0]), int(r[1])),
        )

    async def pending_forward_count(self, target: str | None) -> int:
        sql, params = "SELECT COUNT(*) FROM forwards WHERE state = ?", [PENDING]
        if target is not None:
            sql += " AND target = ?"
            params.append(target)
        return int(await self.one(sql, params))

    async def forwards_for_message(self, webhook_id: str) -> list[ForwardRow]:
        return await self.fetch(
            f"SELECT {rows.FORWARD_COLUMNS} FROM forwards WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            rows.forward_from_row,
        )


_NO_BODY = rows.ATTEMPT_COLUMNS.replace(", body, ", ", x'' AS body, ")
_LOG = ", ".join(f"a.{column}" for column in rows.LOG_COLUMNS.split(", "))
# Driven by the index in rowid order, so the newest matches of a common word come at once.
_JOINED = "idx.attempts_fts f JOIN attempts a ON a.id = f.rowid"


def _where(
    flt: LogFilter | None,
    params: list[Any],
    index: search.IndexUse,
    *,
    before_id: int | None = None,
    after_id: int | None = None,
) -> tuple[str, str, str]:
    """(the FROM source, the id column to order by, the WHERE clause) for a filtered log.

    With text to find, the index drives the query in rowid order (``f.rowid``): the newest rows
    of a common word come at once instead of after every match was collected and sorted.
    """
    text = flt.text if flt is not None else None
    text_params: list[Any] = []
    joined, text_where = search.text_clauses(text or "", text_params, index=index)
    key = "f.rowid" if joined else "a.id"
    clauses: list[str] = []
    if before_id is not None:
        clauses.append(f"{key} < ?")
        params.append(before_id)
    if after_id is not None:
        clauses.append(f"{key} > ?")
        params.append(after_id)
    if flt is not None:
        if flt.topic:
            clauses.append("a.topic = ?")
            params.append(flt.topic)
        if flt.verdict == VERIFIED:
            clauses.append("a.verdict = ?")
            params.append(VERIFIED)
        elif flt.verdict == REJECTED:
            clauses.append("a.verdict != ?")
            params.append(VERIFIED)
        if flt.since_ms is not None:
            clauses.append("a.received_at_ms >= ?")
            params.append(flt.since_ms)
    clauses.extend(text_where)
    params.extend(text_params)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    return (_JOINED if joined else "attempts a"), key, where
