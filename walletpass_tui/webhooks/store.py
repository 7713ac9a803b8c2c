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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite

from walletpass_tui.config import ensure_private_dir

SCHEMA_VERSION = 3
RESPONSE_BODY_LIMIT = 64 * 1024
REJECTED_BODY_LIMIT = 64 * 1024
DEFAULT_REJECTED_CAP = 10_000
DEFAULT_BUSY_TIMEOUT_MS = 5000
MAX_BATCH = 512
# Committed rows are added to the search index when the writer is idle, or after this many.
INDEX_EVERY = 2000
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


# Forwards and replays: kind, mode and state values.
FORWARD = "forward"
REPLAY = "replay"
ORIGINAL = "original"
RESIGN = "resign"
PENDING = "pending"
DONE = "done"
FAILED = "failed"
GIVEN_UP = "given up"


@dataclass(frozen=True)
class ForwardResult:
    """The target's answer to one forward or replay (status None when there was no answer)."""

    status: int | None
    latency_ms: float
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    error: str | None = None
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class ForwardRow:
    id: int
    attempt_id: int
    webhook_id: str | None
    kind: str
    mode: str
    target: str
    state: str
    tries: int
    next_try_at_ms: int
    created_at_ms: int
    finished_at_ms: int | None
    status: int | None
    latency_ms: float | None
    response_headers: tuple[tuple[str, str], ...]
    response_body: bytes
    error: str | None
    note: str | None
    request_body: bytes | None


_FORWARD_COLUMNS = (
    "id, attempt_id, webhook_id, kind, mode, target, state, tries, next_try_at_ms, created_at_ms, "
    "finished_at_ms, status, latency_ms, response_headers, response_body, error, note, request_body"
)


def _forward_from_row(row: Sequence[Any]) -> ForwardRow:
    values = list(row)
    values[13] = tuple((str(k), str(v)) for k, v in json.loads(values[13] or "[]"))
    values[14] = bytes(values[14] or b"")
    values[17] = bytes(values[17]) if values[17] is not None else None
    return ForwardRow(*values)


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
    3: """
    CREATE TABLE forwards (
        id INTEGER PRIMARY KEY,
        attempt_id INTEGER NOT NULL,
        webhook_id TEXT,
        kind TEXT NOT NULL,
        mode TEXT NOT NULL,
        target TEXT NOT NULL,
        state TEXT NOT NULL,
        tries INTEGER NOT NULL DEFAULT 0,
        next_try_at_ms INTEGER NOT NULL DEFAULT 0,
        created_at_ms INTEGER NOT NULL,
        finished_at_ms INTEGER,
        status INTEGER,
        latency_ms REAL,
        response_headers TEXT,
        response_body BLOB,
        error TEXT,
        note TEXT,
        request_body BLOB
    );
    CREATE INDEX forwards_pending ON forwards(state, target, id);
    CREATE INDEX forwards_by_message ON forwards(webhook_id, id);
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


def _clean(text: str | None) -> str | None:
    """Text SQLite can store: bytes that were not UTF-8 (aiohttp hands them over as lone surrogates,
    JSON escapes can make them too) are kept visible as ``\\xff`` escapes instead of failing the
    whole batch's transaction."""
    if text is None or text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return text


def evolve(a: Attempt, **changes: Any) -> Attempt:
    """``dataclasses.replace`` for an Attempt, at a fraction of its cost (it runs per delivery)."""
    new = object.__new__(Attempt)
    new.__dict__.update(a.__dict__)
    new.__dict__.update(changes)
    return new


def _storable(a: Attempt) -> Attempt:
    """The attempt as stored: text fields valid Unicode, a rejected body cut at 64 KiB."""
    changes: dict[str, Any] = {}
    for name in (
        "method",
        "path",
        "reason",
        "detail",
        "webhook_id",
        "endpoint_id",
        "remote_addr",
        "forwarded_for",
        "topic",
        "pass_id",
        "note",
    ):
        value = getattr(a, name)
        cleaned = _clean(value)
        if cleaned is not value:
            changes[name] = cleaned
    if not all(k.isascii() and v.isascii() for k, v in a.headers):
        changes["headers"] = tuple((_clean(k) or "", _clean(v) or "") for k, v in a.headers)
    if a.verdict != VERIFIED and len(a.body) > REJECTED_BODY_LIMIT:
        changes["body"] = a.body[:REJECTED_BODY_LIMIT]
        changes["body_size"] = a.body_size or len(a.body)
    return evolve(a, **changes) if changes else a


def _insert_many(
    db: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]], tail: str = ""
) -> None:
    """``head VALUES (...), (...) tail`` for many rows at once.

    One statement runs in one step, so SQLite's thread lets go of the GIL once per chunk instead of
    once per row (``executemany``): with the event loop busy, every hand-back of the GIL is a wait.
    """
    if not rows:
        return
    width = len(rows[0])
    per = max(1, min(500, db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
    group = "(" + ",".join("?" * width) + ")"
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        params = [value for row in chunk for value in row]
        db.execute(f"{head} VALUES {','.join([group] * len(chunk))} {tail}", params)


def _index_sync(db: sqlite3.Connection, limit: int) -> int:
    """Add up to ``limit`` committed rows the search index has not seen; returns how many.

    Runs on the writer's thread. The rows are read back from ``attempts`` past the high-water mark
    inside the transaction, so two processes on one database never index a row twice, and a row
    pruned before it was indexed is simply never indexed. No fsync of its own (synchronous=NORMAL):
    the index can always be rebuilt from the rows, and the next delivery's commit syncs it anyway.
    """
    db.execute("PRAGMA synchronous = NORMAL")
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_indexed_upto'"
            ).fetchone()
            upto = int(row[0]) if row else 0
            rows = db.execute(
                "SELECT id, webhook_id, topic, body FROM attempts WHERE id > ? ORDER BY id LIMIT ?",
                (upto, limit),
            ).fetchall()
            if rows:
                _insert_many(
                    db,
                    "INSERT INTO attempts_fts(rowid, webhook_id, topic, body)",
                    [(i, w or "", t or "", _body_text(bytes(b))) for i, w, t, b in rows],
                )
                db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'fts_indexed_upto'", (str(rows[-1][0]),)
                )
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
    finally:
        db.execute("PRAGMA synchronous = FULL")
    return len(rows)


# ---------------------------------------------------------------------------------------------


Finalizer = Callable[[Attempt], Attempt]


@dataclass
class _Pending:
    attempt: Attempt
    future: asyncio.Future[Attempt]
    finalize: Finalizer | None = None
    forward_to: tuple[str, ...] = ()


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
    _busy: bool = False
    _unindexed: int = 0  # rows committed but not yet in the search index
    commits: int = 0  # write transactions that stored attempts (group commit: << attempts)

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        rejected_cap: int = DEFAULT_REJECTED_CAP,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> Store:
        """Open (creating or migrating) the history; every problem is a StoreError saying what to do.

        The database is probed for writing here, so a read-only, locked or damaged file is reported
        at open, never as a failure in the middle of a request.
        """
        path = Path(path)
        try:
            ensure_private_dir(path.parent)
        except OSError as exc:
            raise StoreError(
                f"Cannot create the data directory {path.parent} ({exc.strerror or exc}); "
                "choose another with --home or WALLETPASS_HOME."
            ) from None
        writer = reader = None
        try:
            writer = await aiosqlite.connect(path, isolation_level=None)
            await _configure(writer, busy_timeout_ms)
            await _migrate(writer, path)
            # A database already at the current schema is not written by _migrate: make sure it
            # can be (read-only file, another program holding the write lock). SQLite only
            # notices a read-only file at the first write, so write (and roll it back).
            await writer.execute("BEGIN IMMEDIATE")
            try:
                await writer.execute("UPDATE meta SET value = value WHERE key = 'fts_indexed_upto'")
            finally:
                await writer.execute("ROLLBACK")
            reader = await aiosqlite.connect(path, isolation_level=None)
            await reader.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            await reader.execute("PRAGMA query_only = ON")
        except StoreError:
            await _close_quietly(writer, reader)
            raise
        except (sqlite3.Error, ValueError) as exc:
            await _close_quietly(writer, reader)
            raise StoreError(_explain(exc, path)) from None
        with contextlib.suppress(OSError):
            path.chmod(0o600)
        store = cls(path=path, _writer=writer, _reader=reader, rejected_cap=rejected_cap)
        try:
            await store._index_backlog()
        except (sqlite3.Error, ValueError) as exc:
            await _close_quietly(writer, reader)
            raise StoreError(_explain(exc, path)) from None
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

    async def record(
        self,
        attempt: Attempt,
        finalize: Finalizer | None = None,
        *,
        forward_to: Sequence[str] = (),
    ) -> Attempt:
        """Store one attempt; returns it with ``id`` and ``attempt_no`` once it is committed.

        ``finalize``, when given, sees the numbered attempt just before it is written and may change
        its answer (status, note, processing time): failure injection decides by attempt number.
        It runs on the writer's thread, so it must be quick and only read shared state.
        ``forward_to`` queues a forward of a verified attempt to each target URL in the same
        transaction, so a crash can never keep the delivery but lose its forward.
        Raises StoreError when the attempt could not be stored (nothing was committed for it).
        """
        if self._closed or self._task is None or self._task.done():
            raise StoreError("The history store is closed.")
        attempt = _storable(attempt)
        future: asyncio.Future[Attempt] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(attempt, future, finalize, tuple(forward_to)))
        return await future

    async def settled(self) -> None:
        """Wait until everything recorded so far is committed and searchable."""
        while self._queue.qsize() or self._busy or self._unindexed:
            if self._task is None or self._task.done():
                return
            await asyncio.sleep(0.005)

    async def _write_loop(self) -> None:
        """The one writer: everything waiting is committed in one transaction (group commit).

        A batch costs one round trip to SQLite's thread and one fsync, however many attempts it
        holds; the search index and the rejected cap are brought up to date when nothing waits.
        """
        while True:
            if self._queue.empty():
                await self._catch_up()
                self._busy = not self._queue.empty()
            first = await self._queue.get()
            self._busy = True
            if first is None:
                await self._catch_up()
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
                    stored = await self._writer._execute(self._commit_sync, batch)
            except Exception as exc:  # anything: the writer must survive and every caller hear
                error = StoreError(
                    _explain(exc, self.path)
                    if isinstance(exc, sqlite3.Error | ValueError)
                    else f"Storing into {self.path} failed ({type(exc).__name__}: {exc})."
                )
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(error)
            else:
                self.commits += 1
                for pending, attempt in zip(batch, stored, strict=True):
                    if not pending.future.done():
                        pending.future.set_result(attempt)
                self._notify(stored)
                self._unindexed += len(stored)
                self._rejected_since_prune += sum(1 for a in stored if not a.verified)
                if self._unindexed >= INDEX_EVERY:
                    await self._catch_up()
            if stop:
                await self._catch_up()
                return

    def _commit_sync(self, batch: list[_Pending]) -> list[Attempt]:
        """One transaction for the whole batch, run on the writer connection's thread."""
        db: sqlite3.Connection = self._writer._conn
        db.execute("BEGIN IMMEDIATE")
        try:
            stored = self._insert_sync(db, batch)
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        return stored

    def _insert_sync(self, db: sqlite3.Connection, batch: list[_Pending]) -> list[Attempt]:
        ids = sorted({p.attempt.webhook_id for p in batch if p.attempt.webhook_id})
        counts: dict[str, int] = {}
        for chunk_start in range(0, len(ids), 500):
            chunk = ids[chunk_start : chunk_start + 500]
            marks = ",".join("?" * len(chunk))
            counts.update(
                db.execute(
                    f"SELECT webhook_id, attempts FROM messages WHERE webhook_id IN ({marks})",
                    chunk,
                ).fetchall()
            )
        # Never reuse an id the search index has already seen (rows can be pruned from the top).
        row = db.execute(
            "SELECT MAX(COALESCE((SELECT MAX(id) FROM attempts), 0), "
            "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_indexed_upto'), 0))"
        ).fetchone()
        next_id = int(row[0] if row else 0) + 1
        stored: list[Attempt] = []
        for offset, pending in enumerate(batch):
            a = pending.attempt
            number = 1
            if a.webhook_id:
                number = counts.get(a.webhook_id, 0) + 1
                counts[a.webhook_id] = number
            numbered = evolve(a, id=next_id + offset, attempt_no=number)
            if pending.finalize is not None:
                numbered = pending.finalize(numbered)
            stored.append(numbered)
        _insert_many(
            db,
            f"INSERT INTO attempts ({_ATTEMPT_COLUMNS})",
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
        _insert_many(
            db,
            """
            INSERT INTO messages (webhook_id, topic, pass_id, attempts, verified_attempts,
                first_received_at_ms, last_received_at_ms, last_attempt_id, reason, endpoint_id,
                last_status)""",
            [
                (
                    a.webhook_id,
                    a.topic,
                    a.pass_id,
                    1,
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
            """ON CONFLICT(webhook_id) DO UPDATE SET
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
        )
        forwards = [
            (
                a.id,
                a.webhook_id,
                FORWARD,
                ORIGINAL,
                target,
                PENDING,
                a.received_at_ms,
                a.received_at_ms,
            )
            for pending, a in zip(batch, stored, strict=True)
            if a.verified
            for target in pending.forward_to
        ]
        if forwards:
            db.executemany(
                "INSERT INTO forwards (attempt_id, webhook_id, kind, mode, target, state, "
                "next_try_at_ms, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                forwards,
            )
        return stored

    def _notify(self, stored: Sequence[Attempt]) -> None:
        for listener in list(self._listeners):
            try:
                listener(stored)
            except Exception:  # noqa: S112  a listener's bug must never stop the writer
                continue

    async def _catch_up(self) -> None:
        """Work kept out of the acknowledgement path: the search index and the rejected cap."""
        try:
            if self._unindexed:
                async with self._write_lock:
                    await self._index_pending()
            if self._rejected_since_prune >= max(1, self.rejected_cap // 10):
                self._rejected_since_prune = 0
                await self.prune_rejected()
        except Exception:  # the writer must survive; nothing stored is at stake here
            # Rows are never lost here: whatever is not indexed yet is indexed at the next try
            # (or the next open); a failed prune is retried after more rejected attempts.
            self._unindexed = 0

    async def _index_pending(self) -> None:
        """Index every committed row the index has not seen (caller holds the write lock)."""
        try:
            while await self._writer._execute(_index_sync, self._writer._conn, INDEX_EVERY):
                pass
        finally:
            self._unindexed = 0

    async def _index_backlog(self) -> None:
        async with self._write_lock:
            await self._index_pending()

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
            # A contentless FTS5 index must only be told to delete what it was given: rows past
            # its high-water mark were never indexed (and never will be, once deleted).
            async with db.execute(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_indexed_upto'"
            ) as cur:
                row = await cur.fetchone()
            upto = int(row[0]) if row else 0
            await db.executemany(
                "INSERT INTO attempts_fts(attempts_fts, rowid, webhook_id, topic, body) "
                "VALUES ('delete', ?, ?, ?, ?)",
                [(i, w or "", t or "", _body_text(bytes(b))) for i, w, t, b in doomed if i <= upto],
            )
            await db.execute(f"DELETE FROM attempts WHERE {where}", params)
            await db.execute(
                "DELETE FROM forwards WHERE NOT EXISTS "
                "(SELECT 1 FROM attempts a WHERE a.id = forwards.attempt_id)"
            )
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

    # -- forwards and replays ----------------------------------------------------------------

    async def _write(self, sql: str, params: Sequence[Any]) -> int:
        """One statement in its own transaction on the writer connection; returns lastrowid."""
        async with self._write_lock:
            try:
                cursor = await self._writer.execute(sql, params)
                rowid = cursor.lastrowid or 0
                await cursor.close()
                return rowid
            except sqlite3.Error as exc:
                raise StoreError(_explain(exc, self.path)) from None

    async def add_forward_result(
        self,
        attempt: Attempt,
        *,
        kind: str,
        mode: str,
        target: str,
        result: ForwardResult,
        request_body: bytes | None = None,
    ) -> int:
        """Record a forward or replay that already happened (``--ack target``, ``events replay``)."""
        now = now_ms()
        return await self._write(
            "INSERT INTO forwards (attempt_id, webhook_id, kind, mode, target, state, tries, "
            "next_try_at_ms, created_at_ms, finished_at_ms, status, latency_ms, response_headers, "
            "response_body, error, note, request_body) "
            "VALUES (?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                attempt.id,
                attempt.webhook_id,
                kind,
                mode,
                target,
                DONE if result.ok else FAILED,
                now,
                now,
                result.status,
                result.latency_ms,
                json.dumps(result.headers),
                result.body[:RESPONSE_BODY_LIMIT],
                result.error,
                result.note,
                request_body,
            ),
        )

    async def update_forward(
        self, row: ForwardRow, result: ForwardResult, *, next_try_at_ms: int | None
    ) -> None:
        """Record one try of a queued forward: done on a 2xx, else pending again at ``next_try_at_ms``."""
        state = DONE if result.ok else (PENDING if next_try_at_ms is not None else FAILED)
        await self._write(
            "UPDATE forwards SET state = ?, tries = tries + 1, next_try_at_ms = ?, finished_at_ms = ?, "
            "status = ?, latency_ms = ?, response_headers = ?, response_body = ?, error = ?, note = ? "
            "WHERE id = ? AND state = ?",
            (
                state,
                next_try_at_ms or 0,
                now_ms() if state != PENDING else None,
                result.status,
                result.latency_ms,
                json.dumps(result.headers),
                result.body[:RESPONSE_BODY_LIMIT],
                result.error,
                result.note,
                row.id,
                PENDING,
            ),
        )

    async def next_pending_forward(self, target: str) -> ForwardRow | None:
        """The oldest pending forward to ``target``: forwards go out in arrival order."""
        rows = await self._fetch(
            f"SELECT {_FORWARD_COLUMNS} FROM forwards WHERE state = ? AND target = ? ORDER BY id LIMIT 1",
            [PENDING, target],
            _forward_from_row,
        )
        return rows[0] if rows else None

    async def pending_forward_targets(self) -> list[str]:
        return [target for target, _ in await self.pending_forwards_by_target()]

    async def pending_forwards_by_target(self) -> list[tuple[str, int]]:
        """(target, forwards waiting for it), for every target with any."""
        return await self._fetch(
            "SELECT target, COUNT(*) FROM forwards WHERE state = ? GROUP BY target ORDER BY target",
            [PENDING],
            lambda r: (str(r[0]), int(r[1])),
        )

    async def pending_forward_count(self, target: str | None = None) -> int:
        sql, params = "SELECT COUNT(*) FROM forwards WHERE state = ?", [PENDING]
        if target is not None:
            sql += " AND target = ?"
            params.append(target)
        rows = await self._fetch(sql, params, lambda r: r[0])
        return int(rows[0])

    async def give_up_pending(self, target: str | None = None) -> int:
        """Stop retrying pending forwards (to one target or all); returns how many."""
        sql = "UPDATE forwards SET state = ?, finished_at_ms = ? WHERE state = ?"
        params: list[Any] = [GIVEN_UP, now_ms(), PENDING]
        if target is not None:
            sql += " AND target = ?"
            params.append(target)
        async with self._write_lock:
            try:
                cursor = await self._writer.execute(sql, params)
                changed = cursor.rowcount
                await cursor.close()
            except sqlite3.Error as exc:
                raise StoreError(_explain(exc, self.path)) from None
        return changed

    async def forwards_for_message(self, webhook_id: str) -> list[ForwardRow]:
        return await self._fetch(
            f"SELECT {_FORWARD_COLUMNS} FROM forwards WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            _forward_from_row,
        )

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
        oldest_first: bool = False,
    ) -> list[LogRow]:
        """Log rows newest first, optionally only older than ``before_id`` / newer than ``after_id``.

        ``oldest_first`` orders them oldest first instead, so ``after_id`` with ``limit`` gives the
        rows just after it (a view paging back towards the newest) rather than the newest ones.
        """
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
        order = "ASC" if oldest_first else "DESC"
        sql = f"SELECT {_LOG_COLUMNS} FROM attempts{where} ORDER BY id {order} LIMIT ?"
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


async def _configure(db: aiosqlite.Connection, busy_timeout_ms: int) -> None:
    await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
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


def _explain(exc: sqlite3.Error | ValueError, path: Path) -> str:
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
