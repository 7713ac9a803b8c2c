"""The delivery store: every attempt, durable, in SQLite (WAL), written by one batching thread.

``Store`` is a thin facade over the parts in this package:

* ``tables.py``  migrations, private files (0600), the bounded check at open, and what a locked,
  damaged, read-only or newer database means to a person;
* ``writer.py``  the one write connection on its own thread and the group-commit loop:
  ``record()`` returns once the attempt's transaction has committed, so a 2xx sent after it means
  "stored"; ``numbering.py`` attempt numbers; ``wal_sync.py`` the log's fsync; ``checkpoints.py``
  checkpoints off the acknowledgement path and a log that stays bounded; ``files.py`` a history
  deleted under the writer is noticed before any answer, and started over;
* ``search.py``  what a search matches; ``indexer.py`` the trigram index in a file of its own
  (``<history>-search``), filled by its own thread after each commit, never on the
  acknowledgement path; ``pacing.py`` how it and the other followers of the commits (the field
  indexer, the schema learner) yield to deliveries; ``forwards.py`` the forward queue's writes;
  ``prune.py`` dropping history; ``prune_job.py`` a prune the writer runs between its commits
  (``start_prune``);
* ``queries.py`` every read, on a connection and thread of its own; ``reading.py`` ``History``,
  the reading half that ``Store`` extends; ``read_only.py`` a history opened to look only, which
  writes nothing (``events list``, ``show``, ``export`` on a full disk);
* ``health.py``  a failed write is one line on stderr naming the file and the fix, and a sentence
  any subscriber (the dashboard's header) can show.

Attempts are grouped into ``messages`` by webhook-id (attempt number, first/last seen, count, and
a digest of the first body so a later attempt with another body is flagged ``body_differs``).
Rejected attempts keep at most 64 KiB of body and only the newest ``rejected_cap`` are kept.
The records and constants live in ``webhooks/models.py`` and are re-exported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from walletpass_tui.private_files import ensure_private_dir
from walletpass_tui.webhooks.models import (
    DEFAULT_REJECTED_CAP,
    Attempt,
    Finalizer,
    ForwardResult,
    ForwardRow,
    HealthListener,
    Listener,
    StoreError,
    now_ms,
)
from walletpass_tui.webhooks.store import checkpoints, forwards, prune, relay_marks, rows, tables
from walletpass_tui.webhooks.store.checkpoints import LOG_BOUND_BYTES
from walletpass_tui.webhooks.store.files import (
    DELETED,
    LOG,
    FilesMoved,
    deleted_sentence,
    log_deleted_sentence,
)
from walletpass_tui.webhooks.store.health import Health
from walletpass_tui.webhooks.store.indexer import Indexer
from walletpass_tui.webhooks.store.prune_job import PruneJob
from walletpass_tui.webhooks.store.queries import Reader
from walletpass_tui.webhooks.store.reading import History
from walletpass_tui.webhooks.store.tables import DEFAULT_BUSY_TIMEOUT_MS
from walletpass_tui.webhooks.store.writer import GroupCommit, Pending, WriteThread

__all__ = ["Store"]

T = TypeVar("T")


def _clear_orphans(path: Path) -> None:
    """With no database file at ``path``, a ``-wal`` or ``-shm`` still there belongs to the one
    deleted (another program kept it open): SQLite would read its rows into the new file."""
    if path.exists():
        return
    for orphan in tables.companions(path)[1:]:
        with contextlib.suppress(FileNotFoundError):  # already gone
            os.unlink(orphan)


class Store(History):
    """Open with ``await Store.open(path)``; close with ``await store.close()``."""

    def __init__(
        self,
        path: Path,
        thread: WriteThread,
        reader: Reader,
        indexer: Indexer,
        rejected_cap: int,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        super().__init__(path, reader)
        self.health = Health()
        self._thread = thread
        self._indexer = indexer
        self._busy_timeout_ms = busy_timeout_ms
        self._loop = GroupCommit(thread, self.health, rejected_cap)
        self._loop.listeners.subscribe(indexer.wake)
        self._loop.start_over = self._start_over
        self._closed = False

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        rejected_cap: int = DEFAULT_REJECTED_CAP,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        log_bound_bytes: int = LOG_BOUND_BYTES,
        upgrading: tables.Progress | None = None,
    ) -> Store:
        """Open (creating or migrating) the history; every problem is a StoreError saying what to do.

        The file (and its ``-wal``/``-shm``) is created 0600, checked quickly (the cost does not
        grow with its size) and probed for writing here, so a read-only, locked or damaged file is
        reported at open, never as a failure in the middle of a request. ``log_bound_bytes``: the
        size past which the writer starts the write-ahead log over (see checkpoints.py).
        ``upgrading(done, total)``: how far the upgrade of a history from an older version got
        while it counts the attempts by minute (called on the writer's thread; activity.py).
        """
        path = Path(path)
        try:
            ensure_private_dir(path.parent)
        except OSError as exc:
            raise StoreError(
                f"Cannot create the data directory {path.parent} ({exc.strerror or exc}); "
                "choose another with --home or WALLETPASS_HOME."
            ) from None
        thread = await WriteThread.open(path, busy_timeout_ms, log_bound_bytes, upgrading)
        indexer: Indexer | None = None
        try:
            indexer = await Indexer.open(path, busy_timeout_ms)
            reader = await Reader.open(path, busy_timeout_ms)
        except BaseException as exc:
            if indexer is not None:
                await indexer.close()
            await thread.close()
            if isinstance(exc, Exception) and not isinstance(exc, StoreError):
                raise StoreError(tables.explain(exc, path)) from None
            raise
        store = cls(path, thread, reader, indexer, rejected_cap, busy_timeout_ms)
        store._loop.start()
        indexer.start()
        return store

    async def _start_over(self, kind: str) -> bool:
        """After a commit found the history's files gone from their paths (files.py): close every
        connection, then open the history at the path again. Returns whether that commit is kept.

        LOG (the ``-wal`` or ``-shm`` deleted): the whole log is first copied into the database
        file through the writer's connection, which still reads it, so that commit is kept; if a
        reader holds part of it back, nothing is closed and the batch fails (delivered again).
        DELETED (the database file deleted or replaced, its directory renamed or removed): a new
        history is started at the path and the batch must be committed there.

        Every old connection is closed before a new one is opened: SQLite's last connection to a
        file deletes its ``-wal`` and ``-shm`` by name, which must not be the new history's.
        """
        loop, path = self._loop, self.path
        async with self._thread.hold():
            await loop.syncs.drain()  # the commits before this one: on disk first
            await loop.checkpoints.disconnect()
            kept = False
            if kind == LOG and not self._thread.disconnected:
                kept = await self._thread.call(checkpoints.copy_whole_log)
                if not kept:
                    raise FilesMoved(LOG, path)
            await self._indexer.disconnect()
            await self._reader.close()
            await self._thread.disconnect()
            loop.syncs.forget_file()
            try:
                await asyncio.to_thread(_clear_orphans, path)
                ensure_private_dir(path.parent)
                await self._thread.connect()
                await self._indexer.connect()
                self._reader = await Reader.open(path, self._busy_timeout_ms)
            except Exception as exc:
                cause = tables.explain(exc, path)
                raise StoreError(
                    f"The history database {path} was deleted while in use. {cause}"
                ) from None
        self.health.failed(
            deleted_sentence(path) if kind == DELETED else log_deleted_sentence(path)
        )
        return kept

    async def close(self) -> None:
        """Commit everything queued, then close. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await self._loop.stop()
        await self._indexer.close()
        await self._thread.close()
        await self._reader.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- seams for the dashboard and for tests --------------------------------------------------

    @property
    def commits(self) -> int:
        """Write transactions that stored attempts so far (group commit: far fewer than attempts)."""
        return self._loop.commits

    @property
    def rejected_cap(self) -> int:
        return self._loop.rejected_cap

    def on_health(self, listener: HealthListener) -> Callable[[], None]:
        """Call ``listener(sentence)`` on the event loop when writes start failing (the sentence
        names the file and the fix) and ``listener(None)`` once one succeeds again. The current
        state is ``store.health.problem``. Returns a function that unsubscribes."""
        return self.health.subscribe(listener)

    @contextlib.asynccontextmanager
    async def hold_writes(self) -> AsyncIterator[None]:
        """Commit nothing while the block runs: ``record()`` calls wait (and so do their 2xx).

        For tests that must see a delivery that is verified but not yet stored, and for anything
        that needs the database to stand still for a moment.
        """
        async with self._thread.hold():
            yield

    # -- writing -----------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(batch)`` after each commit; returns a function that unsubscribes."""
        return self._loop.listeners.subscribe(listener)

    async def record(
        self,
        attempt: Attempt,
        finalize: Finalizer | None = None,
        *,
        forward_to: Sequence[str] = (),
    ) -> Attempt:
        """Store one attempt; returns it with ``id``, ``attempt_no`` and ``body_differs`` once it is
        committed.

        ``finalize``, when given, sees the numbered attempt before it is written and may change its
        answer (status, note, processing time): failure injection decides by attempt number. It
        runs on the event loop, outside any transaction, and may run again if another program
        numbered an attempt of the same message meanwhile.
        ``forward_to`` queues a forward of a verified attempt to each target URL in the same
        transaction, so a crash can never keep the delivery but lose its forward.
        Raises StoreError when the attempt could not be stored (nothing was committed for it).
        """
        if self._closed or not self._loop.running:
            raise StoreError("The history store is closed.")
        future: asyncio.Future[Attempt] = asyncio.get_running_loop().create_future()
        self._loop.submit(Pending(rows.storable(attempt), future, finalize, tuple(forward_to)))
        return await future

    async def settled(self) -> None:
        """Wait until everything recorded so far is committed and searchable."""
        while self._loop.running:
            if self._loop.idle and self._indexer.idle:
                return
            self._loop.hurry()
            self._indexer.hurry()
            await asyncio.sleep(0.005)

    async def _write(self, fn: Callable[..., T], *args: Any, durable: bool = True) -> T:
        """One write (its own transaction) on the writer's thread, on disk when it returns unless
        not ``durable`` (committed with synchronous=NORMAL: see wal_sync.py); a failure is
        reported."""
        try:
            result = await self._thread.run(fn, *args)
            if durable:
                await self._loop.synced()
        except Exception as exc:
            message = tables.explain(exc, self.path)
            self.health.failed(message)
            raise StoreError(message) from None
        self.health.ok()
        return result

    # -- pruning -----------------------------------------------------------------------------

    async def prune_rejected(self) -> int:
        """Drop the oldest rejected attempts beyond the cap."""
        return await self._write(prune.rejected_beyond, self.rejected_cap)

    def start_prune(self, cutoff_ms: int) -> PruneJob:
        """Have the writer delete every attempt received before ``cutoff_ms`` in small steps
        between its commits, deliveries first (prune_job.py); the job tells how far it got and
        ``stop()`` ends it after the step under way. RuntimeError saying why when a prune runs
        already or the store is closing."""
        if self._closed:
            raise RuntimeError("the history is closing")
        return self._loop.start_prune(cutoff_ms)

    def on_prune(self, listener: Callable[[PruneJob], None]) -> Callable[[], None]:
        """Call ``listener(job)`` when ``start_prune`` begins one (the job tells of its steps and
        its end); returns a function that unsubscribes."""
        return self._loop.prunes.subscribe(listener)

    @property
    def pruning(self) -> PruneJob | None:
        """The prune ``start_prune`` began last (running or ended), None when none was."""
        return self._loop.pruning

    async def prune_older_than(self, cutoff_ms: int) -> int:
        """Drop every attempt received before ``cutoff_ms``; returns how many."""
        return await self._write(prune.older_than, cutoff_ms)

    async def prune_oldest(self, cutoff_ms: int, limit: int, *, durable: bool = True) -> prune.Step:
        """Drop the oldest ``limit`` attempts received before ``cutoff_ms``, in one transaction:
        how many, how long it held the history's write lock (what a receiver writing the same
        history waited for at most) and what ``others_committed`` needs. Not ``durable``: no
        fsync of its own (a receiver running on the history syncs the log with its next commit; a
        step lost to a power cut is pruned again next time)."""
        return await self._write(prune.oldest_before, cutoff_ms, limit, durable=durable)

    async def others_committed(self, step: prune.Step) -> bool:
        """Whether another process (a running receiver) committed to the history since ``step``."""
        return await self._write(prune.others_committed, step.seen, durable=False)

    async def copy_log(self) -> None:
        """Copy the write-ahead log into the database file without taking the write lock (after a
        prune step with no receiver running: see prune.py)."""
        await self._write(prune.copy_log, durable=False)

    # -- forwards and replays ----------------------------------------------------------------

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
        return await self._write(
            forwards.add_result, attempt, kind, mode, target, result, request_body, now_ms()
        )

    async def update_forward(
        self, row: ForwardRow, result: ForwardResult, *, next_try_at_ms: int | None
    ) -> None:
        """Record one try of a queued forward: done on a 2xx, else pending again at ``next_try_at_ms``."""
        await self._write(forwards.record_try, row, result, next_try_at_ms, now_ms())

    async def give_up_pending(self, target: str | None = None) -> int:
        """Stop retrying pending forwards (to one target or all); returns how many."""
        return await self._write(forwards.give_up, target, now_ms())

    async def start_relay_mark(self, relay_url: str) -> tuple[int, int]:
        """(low-water mark, newest stored cursor) for the relay at ``relay_url``: every cursor at
        or below the mark is stored, some above it may be. A link resumes after the mark and
        skips those stored above it. The first call writes the mark (the newest cursor)."""
        # Marks need no fsync of their own: see relay_marks.py.
        mark = await self._write(relay_marks.start, relay_url, durable=False)
        return mark, await self._write(relay_marks.newest, relay_url, durable=False)

    async def rewind_relay(self, relay_url: str, cursor: int) -> int:
        """The relay went back to ``cursor``: the attempts stored above it let go of their
        cursors (kept in the history) and the mark goes back to it; how many let go."""
        return int(await self._write(relay_marks.rewind, relay_url, cursor))

    async def advance_relay_mark(self, relay_url: str, cursor: int) -> None:
        """Raise the mark; only once every cursor up to ``cursor`` is committed."""
        await self._write(relay_marks.advance, relay_url, cursor, durable=False)
