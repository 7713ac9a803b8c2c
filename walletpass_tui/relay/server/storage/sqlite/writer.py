"""SQLite's one writer: a connection on a thread of its own (``sqlite_thread.ThreadConnection``)
that commits whatever waits in one transaction.

``submit`` (on the event loop) returns a future resolved only after COMMIT (or with the error
that prevented it), so ingress answers 2xx only for what is on disk. Jobs wait on the event loop
while a batch is being committed, and the next batch takes all of them (up to ``MAX_BATCH``):
many concurrent deliveries share one commit (group commit) and one fsync. A job whose caller
stopped waiting before its batch began is not written (it never saw a 2xx; the sender retries).
``on_commit`` hears every stored delivery in commit order, on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from walletpass_tui.relay.server.storage import records
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.relay.server.storage.records import (
    MAX_BATCH,
    NewDelivery,
    NewRejection,
    Stored,
    storable_text,
)
from walletpass_tui.relay.server.storage.sqlite.schema import connect
from walletpass_tui.sqlite_thread import ThreadConnection

log = logging.getLogger(__name__)

Job = NewDelivery | NewRejection | Callable[[sqlite3.Connection], Any]
Waiting = tuple[Job, "asyncio.Future[Any]"]


class RelayWriter:
    """One connection, one batch at a time: every job waiting is committed in one transaction."""

    def __init__(self, conn: ThreadConnection, on_commit: Callable[[list[Stored]], object]) -> None:
        self._conn = conn
        self._on_commit = on_commit
        self._waiting: list[Waiting] = []
        self._batch: asyncio.Future[tuple[list[Any], list[Stored]]] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self.commits = 0

    @classmethod
    async def open(cls, path: Path, on_commit: Callable[[list[Stored]], object]) -> RelayWriter:
        """Open (creating) the database on the writer's thread; RelayStoreError when it cannot."""
        return cls(await ThreadConnection.open("relay-writer", connect, path), on_commit)

    def submit(self, job: Job) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._closing:
            future.set_exception(RelayStoreError("The relay is stopping; nothing more is stored."))
            return future
        self._waiting.append((job, future))
        if self._batch is None:
            self._next()
        return future

    async def close(self) -> None:
        """Commit what waits, then close the connection and end its thread."""
        self._closing = True
        await self._idle.wait()
        await self._conn.close()

    def _next(self) -> None:
        """Start committing what waits (one batch at a time)."""
        while self._waiting:
            taken, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
            batch = [(job, future) for job, future in taken if not future.done()]
            if batch:
                self._idle.clear()
                self._batch = self._conn.run(_commit, [job for job, _ in batch])
                self._batch.add_done_callback(partial(self._committed, batch))
                return
        self._batch = None
        self._idle.set()

    def _committed(
        self, batch: list[Waiting], done: asyncio.Future[tuple[list[Any], list[Stored]]]
    ) -> None:
        try:
            results, stored = done.result()
        except Exception as exc:
            log.debug(
                "relay: a batch of %d not stored: %s: %s", len(batch), type(exc).__name__, exc
            )
            error = RelayStoreError(f"Not stored: the relay database failed ({exc}).")
            for _, future in batch:
                if not future.done():  # the caller may have given up waiting
                    future.set_exception(error)
        else:
            self.commits += 1
            if stored:
                self._on_commit(stored)
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():  # the caller may have given up waiting
                    future.set_result(result)
        self._batch = None
        self._next()


def _commit(db: sqlite3.Connection, jobs: list[Job]) -> tuple[list[Any], list[Stored]]:
    """On the writer's thread: every job in one transaction; (each one's result, the stored)."""
    results: list[Any] = []
    stored: list[Stored] = []
    db.execute("BEGIN IMMEDIATE")
    try:
        for job in jobs:
            result = _apply(db, job)
            results.append(result)
            if isinstance(result, Stored):
                stored.append(result)
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
            db.execute("ROLLBACK")
        raise
    return results, stored


def _apply(db: sqlite3.Connection, job: Job) -> Any:
    if isinstance(job, NewDelivery):
        size = len(job.data)
        cur = db.execute(
            "INSERT INTO deliveries(channel_id, received_at_ms, webhook_id, size, data) "
            "VALUES (?, ?, ?, ?, ?)",
            (job.channel_id, job.received_at_ms, storable_text(job.webhook_id), size, job.data),
        )
        row = db.execute(
            "UPDATE channels SET used_bytes = used_bytes + ? WHERE id=? RETURNING used_bytes",
            (size, job.channel_id),
        ).fetchone()
        return Stored(int(cur.lastrowid or 0), job.channel_id, int(row[0]) if row else 0, job.data)
    if isinstance(job, NewRejection):
        db.execute(
            "INSERT INTO rejected(channel_id, received_at_ms, status, reason, webhook_id, "
            "source, headers, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                job.channel_id,
                job.received_at_ms,
                job.status,
                storable_text(job.reason),
                storable_text(job.webhook_id),
                storable_text(job.source),
                storable_text(job.headers),
                job.body[: records.REJECTED_BODY_LIMIT],
            ),
        )
        db.execute(
            "DELETE FROM rejected WHERE channel_id=? AND id <= "
            "(SELECT id FROM rejected WHERE channel_id=? ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (job.channel_id, job.channel_id, records.REJECTED_CAP),
        )
        return None
    return job(db)
