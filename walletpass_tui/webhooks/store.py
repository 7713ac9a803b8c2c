"""The delivery store: every attempt, durable, in SQLite (WAL), written by one batching task.

* One row per attempt in ``attempts``; attempts are grouped into ``messages`` by webhook-id, with the
  attempt number, first/last seen and the delivery count.
* ``record()`` returns only after the attempt's transaction has committed, so a 2xx sent after it
  means "stored". One writer task takes every waiting attempt and commits them together.
* The full-text index (FTS5 over webhook-id, topic and body) is filled after the commit, outside the
  acknowledgement path; a restart indexes whatever a crash left out.
* Rejected attempts keep at most 64 KiB of body and only the newest ``rejected_cap`` of them are kept,
  so a flood of garbage can neither fill the disk nor push out verified history.
* The schema is versioned with ``PRAGMA user_version`` and migrated forward at open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiosqlite

from walletpass_tui.config import ensure_private_dir

SCHEMA_VERSION = 2
REJECTED_BODY_LIMIT = 64 * 1024
DEFAULT_REJECTED_CAP = 10_000
MAX_BATCH = 512
VERIFIED = "verified"
REJECTED = "rejected"


class StoreError(Exception):
    """The history database cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Attempt:
    """One delivery attempt as received. ``id`` and ``attempt_no`` are set by the store."""

    received_at_ms: int
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    verdict: str
    reason: str
    status: int
    webhook_id: str | None = None
    detail: str = ""
    endpoint_id: str | None = None
    remote_addr: str | None = None
    forwarded_for: str | None = None
    body_size: int | None = None
    processing_ms: float = 0.0
    topic: str | None = None
    pass_id: str | None = None
    note: str | None = None
    id: int = 0
    attempt_no: int = 0

    @property
    def body_truncated(self) -> bool:
        return self.body_size is not None and self.body_size > len(self.body)

    @property
    def verified(self) -> bool:
        return self.verdict == VERIFIED

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass(frozen=True)
class LogRow:
    """The columns of one line of the event log (no body, no headers)."""

    id: int
    received_at_ms: int
    webhook_id: str | None
    topic: str | None
    pass_id: str | None
    verdict: str
    reason: str
    attempt_no: int
    endpoint_id: str | None
    status: int
    note: str | None


@dataclass(frozen=True)
class MessageRow:
    webhook_id: str
    topic: str | None
    pass_id: str | None
    verdict: str
    reason: str
    attempts: int
    first_received_at_ms: int
    last_received_at_ms: int
    endpoint_id: str | None
    last_status: int


@dataclass(frozen=True)
class Stats:
    received: int = 0
    verified: int = 0
    rejected: int = 0
    redeliveries: int = 0


@dataclass(frozen=True)
class LogFilter:
    topic: str | None = None
    verdict: str | None = None  # "verified" | "rejected"
    text: str | None = None
    since_ms: int | None = None

    @property
    def empty(self) -> bool:
        return not (
            self.topic or self.verdict or (self.text and self.text.strip()) or self.since_ms
        )


# Called synchronously on the event loop after each commit; it must not block.
Listener = Callable[[Sequence[Attempt]], None]


# ---------------------------------------------------------------------------------------------
# Schema

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        webhook_id TEXT,
        attempt_no INTEGER NOT NULL DEFAULT 1,
        received_at_ms INTEGER NOT NULL,
        remote_addr TEXT,
        forwarded_for TEXT,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        headers TEXT NOT NULL,
        body BLOB NOT NULL,
        body_size INTEGER NOT NULL,
        verdict TEXT NOT NULL,
        reason TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        endpoint_id TEXT,
        status INTEGER NOT NULL,
        processing_ms REAL NOT NULL DEFAULT 0,
        topic TEXT,
        pass_id TEXT,
        note TEXT
    );
    CREATE INDEX attempts_by_message ON attempts(webhook_id, id);
    CREATE INDEX attempts_by_verdict ON attempts(verdict, id);
    CREATE INDEX attempts_by_topic ON attempts(topic, id);
    CREATE INDEX attempts_by_time ON attempts(received_at_ms);
    CREATE TABLE messages (
        webhook_id TEXT PRIMARY KEY,
        topic TEXT,
        pass_id TEXT,
        attempts INTEGER NOT NULL,
        verified_attempts INTEGER NOT NULL,
        first_received_at_ms INTEGER NOT NULL,
        last_received_at_ms INTEGER NOT NULL,
        last_attempt_id INTEGER NOT NULL,
        reason TEXT NOT NULL,
        endpoint_id TEXT,
        last_status INTEGER NOT NULL
    );
    CREATE INDEX messages_by_last ON messages(last_received_at_ms);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    2: """
    CREATE VIRTUAL TABLE attempts_fts USING fts5(
        webhook_id, topic, body, content='', tokenize="unicode61 tokenchars '_-'"
    );
    INSERT INTO meta(key, value) VALUES ('fts_indexed_upto', '0')
        ON CONFLICT(key) DO NOTHING;
    """,
}

_LOG_COLUMNS = (
    "id, received_at_ms, webhook_id, topic, pass_id, verdict, reason, attempt_no, endpoint_id, "
    "status, note"
)
_ATTEMPT_COLUMNS = (
    "id, webhook_id, attempt_no, received_at_ms, remote_addr, forwarded_for, method, path, headers, "
    "body, body_size, verdict, reason, detail, endpoint_id, status, processing_ms, topic, pass_id, note"
)


def _attempt_from_row(row: Sequence[Any]) -> Attempt:
    (
        id_,
        webhook_id,
        attempt_no,
        received,
        remote,
        xff,
        method,
        path,
        headers,
        body,
        body_size,
        verdict,
        reason,
        detail,
        endpoint_id,
        status,
        processing_ms,
        topic,
        pass_id,
        note,
    ) = row
    return Attempt(
        id=id_,
        webhook_id=webhook_id,
        attempt_no=attempt_no,
        received_at_ms=received,
        remote_addr=remote,
        forwarded_for=xff,
        method=method,
        path=path,
        headers=tuple((str(k), str(v)) for k, v in json.loads(headers)),
        body=bytes(body),
        body_size=body_size,
        verdict=verdict,
        reason=reason,
        detail=detail,
        endpoint_id=endpoint_id,
        status=status,
        processing_ms=processing_ms,
        topic=topic,
        pass_id=pass_id,
        note=note,
    )


def fts_query(text: str) -> str | None:
    """User text as an FTS5 query: every word must appear, the last may be a prefix."""
    words = [w for w in text.replace('"', " ").split() if w]
    if not words:
        return None
    terms = [f'"{w}"' for w in words]
    terms[-1] += "*"
    return " AND ".join(terms)


def _body_text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------


Finalizer = Callable[[Attempt], Attempt]


@dataclass
class _Pending:
    attempt: Attempt
    future: asyncio.Future[Attempt]
    finalize: Finalizer | None = None


@dataclass
class Store:
    """Open with ``await Store.open(path)``; close with ``await store.close()``."""

    path: Path
    _writer: aiosqlite.Connection
    _reader: aiosqlite.Connection
    rejected_cap: int = DEFAULT_REJECTED_CAP
    _queue: asyncio.Queue[_Pending | None] = field(default_factory=asyncio.Queue)
    _listeners: list[Listener] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None
    _closed: bool = False
    _rejected_since_prune: int = 0
    _write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: Path, *, rejected_cap: int = DEFAULT_REJECTED_CAP) -> Store:
        path = Path(path)
        try:
            ensure_private_dir(path.parent)
        except OSError as exc:
            raise StoreError(
                f"Cannot create the data directory {path.parent} ({exc.strerror}); "
                "choose another with --home or WALLETPASS_HOME."
            ) from None
        writer = reader = None
        try:
            writer = await aiosqlite.connect(path, isolation_level=None)
            await _configure(writer)
            await _migrate(writer, path)
            reader = await aiosqlite.connect(path, isolation_level=None)
            await reader.execute("PRAGMA busy_timeout = 5000")
            await reader.execute("PRAGMA query_only = ON")
        except StoreError:
            await _close_quietly(writer, reader)
            raise
        except sqlite3.Error as exc:
            await _close_quietly(writer, reader)
            raise StoreError(_explain(exc, path)) from None
        with contextlib.suppress(OSError):
            path.chmod(0o600)
        store = cls(path=path, _writer=writer, _reader=reader, rejected_cap=rejected_cap)
        await store._index_backlog()
        store._task = asyncio.create_task(store._write_loop(), name="store-writer")
        return store

    async def close(self) -> None:
        """Commit everything queued, then close. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._task is not None:
            await self._queue.put(None)
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await _close_quietly(self._writer, self._reader)

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- writing -----------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(batch)`` after each commit; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def record(self, attempt: Attempt, finalize: Finalizer | None = None) -> Attempt:
        """Store one attempt; returns it with ``id`` and ``attempt_no`` once it is committed.

        ``finalize``, when given, sees the numbered attempt just before it is written and may change
        its answer (status, note, processing time): failure injection decides by attempt number.
        """
        if self._closed:
            raise StoreError("The history store is closed.")
        if attempt.verdict != VERIFIED and len(attempt.body) > REJECTED_BODY_LIMIT:
            attempt = replace(
                attempt,
                body=attempt.body[:REJECTED_BODY_LIMIT],
                body_size=attempt.body_size or len(attempt.body),
            )
        future: asyncio.Future[Attempt] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(attempt, future, finalize))
        return await future

    async def _write_loop(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH and not self._queue.empty():
                item = self._queue.get_nowait()
                if item is None:
                    stop = True
                    break
                batch.append(item)
            try:
                async with self._write_lock:
                    stored = await self._commit(batch)
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    await self._writer.rollback()
                error = StoreError(_explain(exc, self.path))
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(error)
            else:
                for pending, attempt in zip(batch, stored, strict=True):
                    if not pending.future.done():
                        pending.future.set_result(attempt)
                self._notify(stored)
                await self._after_commit(stored)
            if stop:
                return

    async def _commit(self, batch: list[_Pending]) -> list[Attempt]:
        db = self._writer
        await db.execute("BEGIN IMMEDIATE")
        ids = sorted({p.attempt.webhook_id for p in batch if p.attempt.webhook_id})
        counts: dict[str, int] = {}
        for chunk_start in range(0, len(ids), 500):
            chunk = ids[chunk_start : chunk_start + 500]
            marks = ",".join("?" * len(chunk))
            async with db.execute(
                f"SELECT webhook_id, attempts FROM messages WHERE webhook_id IN ({marks})",
                chunk,
            ) as cur:
                counts.update({row[0]: row[1] async for row in cur})
        async with db.execute("SELECT COALESCE(MAX(id), 0) FROM attempts") as cur:
            row = await cur.fetchone()
        next_id = (row[0] if row else 0) + 1
        stored: list[Attempt] = []
        for offset, pending in enumerate(batch):
            a = pending.attempt
            number = 1
            if a.webhook_id:
                number = counts.get(a.webhook_id, 0) + 1
                counts[a.webhook_id] = number
            numbered = replace(a, id=next_id + offset, attempt_no=number)
            if pending.finalize is not None:
                numbered = pending.finalize(numbered)
            stored.append(numbered)
        await db.executemany(
            f"INSERT INTO attempts ({_ATTEMPT_COLUMNS}) VALUES ({','.join('?' * 20)})",
            [
                (
                    a.id,
                    a.webhook_id,
                    a.attempt_no,
                    a.received_at_ms,
                    a.remote_addr,
                    a.forwarded_for,
                    a.method,
                    a.path,
                    json.dumps(a.headers),
                    a.body,
                    a.body_size if a.body_size is not None else len(a.body),
                    a.verdict,
                    a.reason,
                    a.detail,
                    a.endpoint_id,
                    a.status,
                    a.processing_ms,
                    a.topic,
                    a.pass_id,
                    a.note,
                )
                for a in stored
            ],
        )
        await db.executemany(
            """
            INSERT INTO messages (webhook_id, topic, pass_id, attempts, verified_attempts,
                first_received_at_ms, last_received_at_ms, last_attempt_id, reason, endpoint_id,
                last_status)
            VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(webhook_id) DO UPDATE SET
                topic = COALESCE(messages.topic, excluded.topic),
                pass_id = COALESCE(messages.pass_id, excluded.pass_id),
                attempts = messages.attempts + 1,
                verified_attempts = messages.verified_attempts + excluded.verified_attempts,
                last_received_at_ms = excluded.last_received_at_ms,
                last_attempt_id = excluded.last_attempt_id,
                reason = excluded.reason,
                endpoint_id = COALESCE(excluded.endpoint_id, messages.endpoint_id),
                last_status = excluded.last_status
            """,
            [
                (
                    a.webhook_id,
                    a.topic,
                    a.pass_id,
                    1 if a.verified else 0,
                    a.received_at_ms,
                    a.received_at_ms,
                    a.id,
                    a.reason,
                    a.endpoint_id,
                    a.status,
                )
                for a in stored
                if a.webhook_id
            ],
        )
        await db.execute("COMMIT")
        return stored

    def _notify(self, stored: Sequence[Attempt]) -> None:
        for listener in list(self._listeners):
            try:
                listener(stored)
            except Exception:  # noqa: S112  a listener's bug must never stop the writer
                continue

    async def _after_commit(self, stored: Sequence[Attempt]) -> None:
        """Work kept out of the acknowledgement path: the search index and the rejected cap."""
        try:
            async with self._write_lock:
                await self._index(stored)
            self._rejected_since_prune += sum(1 for a in stored if not a.verified)
            if self._rejected_since_prune >= max(1, self.rejected_cap // 10):
                self._rejected_since_prune = 0
                await self.prune_rejected()
        except sqlite3.Error:
            # The index can be rebuilt from the rows; a failure here loses nothing stored.
            with contextlib.suppress(sqlite3.Error):
                await self._writer.rollback()

    async def _index(self, attempts: Iterable[Attempt]) -> None:
        rows = [(a.id, a.webhook_id or "", a.topic or "", _body_text(a.body)) for a in attempts]
        if not rows:
            return
        db = self._writer
        await db.execute("BEGIN")
        await db.executemany(
            "INSERT INTO attempts_fts(rowid, webhook_id, topic, body) VALUES (?, ?, ?, ?)", rows
        )
        await db.execute(
            "UPDATE meta SET value = ? WHERE key = 'fts_indexed_upto'", (str(rows[-1][0]),)
        )
        await db.execute("COMMIT")

    async def _index_backlog(self) -> None:
        db = self._writer
        async with db.execute("SELECT value FROM meta WHERE key = 'fts_indexed_upto'") as cur:
            row = await cur.fetchone()
        upto = int(row[0]) if row else 0
        while True:
            async with db.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE id > ? ORDER BY id LIMIT 2000",
                (upto,),
            ) as cur:
                batch = [_attempt_from_row(r) async for r in cur]
            if not batch:
                return
            await self._index(batch)
            upto = batch[-1].id

    # -- pruning -----------------------------------------------------------------------------

    async def prune_rejected(self) -> int:
        """Drop the oldest rejected attempts beyond the cap."""
        db = self._writer
        async with db.execute(
            "SELECT id FROM attempts WHERE verdict != ? ORDER BY id DESC LIMIT 1 OFFSET ?",
            (VERIFIED, self.rejected_cap),
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            return 0
        return await self._delete_where("verdict != ? AND id <= ?", (VERIFIED, row[0]))

    async def prune_older_than(self, cutoff_ms: int) -> int:
        """Drop every attempt received before ``cutoff_ms``; returns how many."""
        return await self._delete_where("received_at_ms < ?", (cutoff_ms,))

    async def _delete_where(self, where: str, params: tuple[Any, ...]) -> int:
        async with self._write_lock:
            return await self._delete_locked(where, params)

    async def _delete_locked(self, where: str, params: tuple[Any, ...]) -> int:
        db = self._writer
        await db.execute("BEGIN IMMEDIATE")
        try:
            async with db.execute(
                f"SELECT id, webhook_id, topic, body FROM attempts WHERE {where}",
                params,
            ) as cur:
                doomed = [tuple(r) async for r in cur]
            await db.executemany(
                "INSERT INTO attempts_fts(attempts_fts, rowid, webhook_id, topic, body) "
                "VALUES ('delete', ?, ?, ?, ?)",
                [(i, w or "", t or "", _body_text(bytes(b))) for i, w, t, b in doomed],
            )
            await db.execute(f"DELETE FROM attempts WHERE {where}", params)
            await db.execute(
                "DELETE FROM messages WHERE NOT EXISTS "
                "(SELECT 1 FROM attempts a WHERE a.webhook_id = messages.webhook_id)"
            )
            await db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                await db.rollback()
            raise
        return len(doomed)

    # -- reading -----------------------------------------------------------------------------

    def _where(self, flt: LogFilter | None, extra: list[str], params: list[Any]) -> str:
        clauses = list(extra)
        if flt is not None:
            if flt.topic:
                clauses.append("topic = ?")
                params.append(flt.topic)
            if flt.verdict == VERIFIED:
                clauses.append("verdict = ?")
                params.append(VERIFIED)
            elif flt.verdict == REJECTED:
                clauses.append("verdict != ?")
                params.append(VERIFIED)
            if flt.since_ms is not None:
                clauses.append("received_at_ms >= ?")
                params.append(flt.since_ms)
            query = fts_query(flt.text or "")
            if query:
                clauses.append("id IN (SELECT rowid FROM attempts_fts WHERE attempts_fts MATCH ?)")
                params.append(query)
        return (" WHERE " + " AND ".join(clauses)) if clauses else ""

    async def log_page(
        self,
        flt: LogFilter | None = None,
        *,
        limit: int = 200,
        before_id: int | None = None,
        after_id: int | None = None,
    ) -> list[LogRow]:
        """Log rows newest first, optionally only older than ``before_id`` / newer than ``after_id``."""
        params: list[Any] = []
        extra = []
        if before_id is not None:
            extra.append("id < ?")
            params.append(before_id)
        if after_id is not None:
            extra.append("id > ?")
            params.append(after_id)
        where = self._where(flt, extra, params)
        params.append(limit)
        sql = f"SELECT {_LOG_COLUMNS} FROM attempts{where} ORDER BY id DESC LIMIT ?"
        return await self._fetch(sql, params, lambda r: LogRow(*r))

    async def count(self, flt: LogFilter | None = None) -> int:
        params: list[Any] = []
        where = self._where(flt, [], params)
        rows = await self._fetch(f"SELECT COUNT(*) FROM attempts{where}", params, lambda r: r[0])
        return int(rows[0])

    async def attempt(self, attempt_id: int) -> Attempt | None:
        rows = await self._fetch(
            f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE id = ?",
            [attempt_id],
            _attempt_from_row,
        )
        return rows[0] if rows else None

    async def message_attempts(self, webhook_id: str) -> list[Attempt]:
        """Every attempt of one message, oldest first."""
        return await self._fetch(
            f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            _attempt_from_row,
        )

    async def list_messages(
        self,
        *,
        limit: int = 50,
        topic: str | None = None,
        verdict: str | None = None,
        since_ms: int | None = None,
        text: str | None = None,
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
        query = fts_query(text or "")
        if query:
            clauses.append(
                "webhook_id IN (SELECT webhook_id FROM attempts WHERE id IN "
                "(SELECT rowid FROM attempts_fts WHERE attempts_fts MATCH ?))"
            )
            params.append(query)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        params.append(limit)
        sql = (
            "SELECT webhook_id, topic, pass_id, "
            f"CASE WHEN verified_attempts > 0 THEN '{VERIFIED}' ELSE '{REJECTED}' END, reason, "
            "attempts, first_received_at_ms, last_received_at_ms, endpoint_id, last_status "
            f"FROM messages{where} ORDER BY last_received_at_ms DESC, last_attempt_id DESC LIMIT ?"
        )
        return await self._fetch(sql, params, lambda r: MessageRow(*r))

    async def stats(self) -> Stats:
        sql = (
            "SELECT COUNT(*), "
            f"COALESCE(SUM(verdict = '{VERIFIED}'), 0), "
            f"COALESCE(SUM(verdict != '{VERIFIED}'), 0), "
            "COALESCE(SUM(attempt_no > 1), 0) FROM attempts"
        )
        rows = await self._fetch(sql, [], lambda r: Stats(*(int(x) for x in r)))
        return rows[0]

    async def last_id(self) -> int:
        rows = await self._fetch("SELECT COALESCE(MAX(id), 0) FROM attempts", [], lambda r: r[0])
        return int(rows[0])

    async def _fetch(
        self, sql: str, params: Sequence[Any], build: Callable[[Any], Any]
    ) -> list[Any]:
        try:
            async with self._reader.execute(sql, params) as cur:
                return [build(row) async for row in cur]
        except sqlite3.Error as exc:
            raise StoreError(_explain(exc, self.path)) from None


# ---------------------------------------------------------------------------------------------


async def _configure(db: aiosqlite.Connection) -> None:
    await db.execute("PRAGMA busy_timeout = 5000")
    async with db.execute("PRAGMA journal_mode = WAL") as cur:
        row = await cur.fetchone()
    if row is None or str(row[0]).lower() != "wal":
        raise sqlite3.OperationalError("attempt to write a readonly database")
    # FULL: every commit is on disk before a webhook is acknowledged (one fsync per batch).
    await db.execute("PRAGMA synchronous = FULL")
    await db.execute("PRAGMA foreign_keys = ON")


async def _migrate(db: aiosqlite.Connection, path: Path) -> None:
    async with db.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"The history database {path} was written by a newer walletpass-tui (schema "
            f"{version}, this one knows {SCHEMA_VERSION}); upgrade walletpass-tui or use another "
            "--home."
        )
    if version == SCHEMA_VERSION:
        return
    await db.execute("BEGIN IMMEDIATE")
    try:
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _split_sql(_MIGRATIONS[step]):
                await db.execute(statement)
            await db.execute(f"PRAGMA user_version = {step}")
        await db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            await db.rollback()
        raise


def _split_sql(script: str) -> list[str]:
    statements, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        joined = "\n".join(current)
        if sqlite3.complete_statement(joined):
            statements.append(joined.strip())
            current = []
    return [s for s in statements if s]


def _explain(exc: sqlite3.Error, path: Path) -> str:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return (
            f"The history database {path} is locked by another program; close it (another "
            "walletpass-tui?) or use another --home."
        )
    if "readonly" in text or "read-only" in text or "permission" in text:
        return f"The history database {path} cannot be written; check its permissions or use another --home."
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return (
            f"The history database {path} is damaged; move it aside (a new one will be created) "
            "or restore a backup."
        )
    if "unable to open" in text:
        return f"The history database {path} cannot be opened; check the directory exists and is writable."
    if "full" in text:
        return f"The disk holding {path} is full; free some space."
    return f"The history database {path} failed ({exc})."


async def _close_quietly(*conns: aiosqlite.Connection | None) -> None:
    for conn in conns:
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


def now_ms() -> int:
    return int(time.time() * 1000)
