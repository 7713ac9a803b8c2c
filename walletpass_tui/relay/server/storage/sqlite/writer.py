"""SQLite's one writer: a thread that commits whatever waits in one transaction.

``submit`` returns a future resolved only after COMMIT (or with the error that prevented it), so
ingress answers 2xx only for what is on disk; many concurrent deliveries share one commit (group
commit) and one fsync. ``on_commit`` hears every stored delivery in commit order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
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

log = logging.getLogger(__name__)

Job = NewDelivery | NewRejection | Callable[[sqlite3.Connection], Any]


class RelayWriter:
    """One thread, one connection: every job waiting is committed in one transaction.

    ``submit`` returns a future resolved only after COMMIT (or with the error that prevented it).
    """

    def __init__(self, path: Path, on_commit: Callable[[list[Stored]], object]) -> None:
        self.path = path
        self._db = connect(path)
        self._jobs: queue.SimpleQueue[tuple[Job, Future[Any]] | None] = queue.SimpleQueue()
        self._on_commit = on_commit
        self.commits = 0
        self._thread = threading.Thread(target=self._loop, name="relay-writer", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> asyncio.Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((job, future))
        return asyncio.wrap_future(future)

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        self._jobs.put(None)
        self._thread.join()
        self._db.close()

    def _loop(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            batch = [item]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:  # the queue is drained: the batch is complete
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            self._commit(batch)
            if stop:
                return

    def _commit(self, batch: list[tuple[Job, Future[Any]]]) -> None:
        db = self._db
        results: list[Any] = []
        stored: list[Stored] = []
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                for job, _ in batch:
                    result = self._apply(db, job)
                    results.append(result)
                    if isinstance(result, Stored):
                        stored.append(result)
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
                    db.execute("ROLLBACK")
                raise
        except Exception as exc:
            log.debug(
                "relay: a batch of %d not stored: %s: %s", len(batch), type(exc).__name__, exc
            )
            error = RelayStoreError(f"Not stored: the relay database failed ({exc}).")
            for _, future in batch:
                with contextlib.suppress(InvalidStateError):  # the caller gave up waiting
                    future.set_exception(error)
            return
        self.commits += 1
        if stored:
            with contextlib.suppress(Exception):  # the loop is closing: nobody to tell
                self._on_commit(stored)
        for (_, future), result in zip(batch, results, strict=True):
            with contextlib.suppress(InvalidStateError):  # the caller gave up waiting
                future.set_result(result)

    def _apply(self, db: sqlite3.Connection, job: Job) -> Any:
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
            return Stored(
                int(cur.lastrowid or 0), job.channel_id, int(row[0]) if row else 0, job.data
            )
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
