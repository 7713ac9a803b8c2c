"""The one writer: a plain ``sqlite3`` connection on its own thread, and the group-commit loop that
feeds it.

* Everything waiting when the writer is free is committed in one transaction (one fsync), so a
  2xx sent after ``record()`` returns means "stored", at thousands of deliveries a second.
  Attempt numbers: numbering.py.
* A caller's ``finalize`` (the receiver's failure injection decides by attempt number) runs on the
  event loop, never on the writer's thread and never inside a transaction: the attempt numbers are
  read first, the finalizers run, and the batch is committed only if no other program numbered an
  attempt of the same messages meanwhile (otherwise the batch is numbered and finalized again).
* The search index is not the writer's work: it lives in a file of its own, filled by its own
  thread after each commit (see indexer.py). The rejected cap is applied only when no delivery
  waits, in bounded steps. A delivery's commit never copies the log into the database file; the
  log is kept bounded between batches, deliveries waiting or not (see checkpoints.py).
* A prune asked of the receiver (``start_prune``) runs in small steps between the batches,
  while no delivery waits, resting between them, with a small share when deliveries never stop
  (see prune_job.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from walletpass_tui.listeners import Listeners
from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import SqliteThread
from walletpass_tui.webhooks.models import (
    Attempt,
    Finalizer,
    StoreError,
    evolve,
)
from walletpass_tui.webhooks.store import activity, forwards, prune, rows, tables
from walletpass_tui.webhooks.store.checkpoints import (
    LOG_BOUND_BYTES,
    Checkpointer,
    LogBound,
    top_up_checkpoint,
)
from walletpass_tui.webhooks.store.files import DELETED, FilesMoved, HistoryFiles
from walletpass_tui.webhooks.store.health import Health
from walletpass_tui.webhooks.store.numbering import (
    Known,
    counts,
    number,
    peek,
    peek_with,
)
from walletpass_tui.webhooks.store.prune_job import (
    DONE,
    FAILED,
    FORCED_EVERY,
    REST,
    STOPPED,
    PruneJob,
)
from walletpass_tui.webhooks.store.wal_sync import WalSync

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_BATCH = 512
IDLE_S = 0.05  # background work (the rejected cap) waits this long for the writer to be idle
MAX_RENUMBER = 10
REMEMBERED = 20_000  # messages whose attempt count the writer remembers (to number without a read)
_NOTHING = object()


@dataclass
class Pending:
    attempt: Attempt
    future: asyncio.Future[Attempt]
    finalize: Finalizer | None = None
    forward_to: tuple[str, ...] = ()


class WriteThread:
    """The write connection and the one thread that uses it; calls run in order.

    ``files`` remembers the files the connection opened (files.py); after the history was
    deleted the connection is closed and opened anew (``disconnect``, ``connect``, under
    ``hold``), and between the two ``disconnected`` is true.
    """

    def __init__(
        self,
        db: sqlite3.Connection,
        path: Path,
        thread: SqliteThread,
        busy_timeout_ms: int,
        files: HistoryFiles,
        log_bound_bytes: int = LOG_BOUND_BYTES,
    ) -> None:
        self.path = path
        self.files = files
        self.busy_timeout_ms = busy_timeout_ms
        self.log_bound_bytes = log_bound_bytes
        self._db: sqlite3.Connection | None = db
        self._thread = thread
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        path: Path,
        busy_timeout_ms: int,
        log_bound_bytes: int = LOG_BOUND_BYTES,
        progress: tables.Progress | None = None,
    ) -> WriteThread:
        """``progress(done, total)``, called on the writer's thread: how far an upgrade that
        counts an old history got."""
        thread = SqliteThread("store-writer")
        files = HistoryFiles(path)
        try:
            db = await thread.run(_connect, path, busy_timeout_ms, files, log_bound_bytes, progress)
        except BaseException:
            thread.close()
            raise
        return cls(db, path, thread, busy_timeout_ms, files, log_bound_bytes)

    @property
    def disconnected(self) -> bool:
        return self._db is None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` on the writer's thread, after every call made before it."""
        async with self._lock:
            return await self.call(fn, *args)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` on the writer's thread, without waiting for the lock: only
        inside ``hold()``."""
        db = self._db
        if db is None:
            raise StoreError(
                f"The history database {self.path} is not open (it was deleted while in use and "
                "could not be started again); deliver again."
            )
        return await self._thread.run(fn, db, *args)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Nothing is written while the block runs (writes queue and wait)."""
        async with self._lock:
            yield

    async def disconnect(self) -> None:
        """Close the connection (inside ``hold()``)."""
        db, self._db = self._db, None
        if db is not None:
            with suppressed(log, "closing the history's writer"):
                await self._thread.run(db.close)

    async def connect(self) -> None:
        """Open the connection again, creating the history if it is missing (inside ``hold()``);
        raises StoreError."""
        self._db = await self._thread.run(
            _connect, self.path, self.busy_timeout_ms, self.files, self.log_bound_bytes
        )

    async def close(self) -> None:
        async with self._lock:
            await self.disconnect()
        self._thread.close()


def _connect(
    path: Path,
    busy_timeout_ms: int,
    files: HistoryFiles,
    log_bound_bytes: int,
    progress: tables.Progress | None = None,
) -> sqlite3.Connection:
    # A log started over is cut back to half the bound (see checkpoints.py).
    db = tables.connect_writer(path, busy_timeout_ms, log_bound_bytes // 2, progress)
    files.remember()
    return db


# -- one batch, on the writer's thread ------------------------------------------------------------


def commit_batch(
    db: sqlite3.Connection,
    attempts: Sequence[Attempt],
    targets: Sequence[tuple[str, ...]],
    numbered_with: Known | None,
    sync: Callable[[], None] | None = None,
    files: HistoryFiles | None = None,
) -> list[Attempt] | None:
    """Store the batch in one transaction; returns the attempts as stored.

    ``numbered_with`` is what the attempts were numbered from (None: number them here). When the
    counts changed since, nothing is written and the result is None: number them again.
    ``sync``: called right after the commit (the log's fsync, when nothing else waits for the
    writer: one trip to its thread instead of two).
    ``files``: checked right after the commit, before ``sync``: FilesMoved when the history's
    files are no longer at their paths (see files.py); nobody has been answered yet.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        known, last_id = peek_with(db, attempts, LAST_ID)
        if numbered_with is None:
            attempts = number(attempts, known)
        elif counts(known) != counts(numbered_with):
            db.execute("ROLLBACK")
            return None
        stored, digests = _stamp(int(last_id or 0) + 1, attempts, known)
        _insert(db, stored, digests)
        activity.add(db, stored)
        forwards.queue_with_delivery(db, stored, targets)
        db.execute("COMMIT")
        if files is not None and (moved := files.changed()) is not None:
            raise FilesMoved(moved, files.path, stored)
        if sync is not None:
            sync()
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
                db.execute("ROLLBACK")
        raise
    return stored


def prune_step(
    db: sqlite3.Connection, cutoff_ms: int, limit: int, files: HistoryFiles
) -> prune.Step:
    """One step of a prune the receiver runs (prune_job.py), on the writer's thread; the log's
    size noted after it, for the log's bound."""
    done = prune.oldest_before(db, cutoff_ms, limit)
    files.changed()  # a history moved under the writer is the next delivery's commit's to find
    return done


# The highest row id ever given: never one a pruned row had (see prune.py).
LAST_ID = (
    "SELECT MAX(COALESCE((SELECT MAX(id) FROM attempts), 0), "
    "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_indexed_upto'), 0))"
)


def _stamp(
    next_id: int, attempts: Sequence[Attempt], known: Known
) -> tuple[list[Attempt], list[bytes | None]]:
    """Row ids from ``next_id`` on, and ``body_differs`` against the first body."""
    firsts = {webhook_id: first for webhook_id, (_, first) in known.items()}
    stored: list[Attempt] = []
    digests: list[bytes | None] = []
    for offset, a in enumerate(attempts):
        digest = differs = None
        if a.webhook_id:
            digest = tables.digest(a.topic, a.body)
            first = firsts.get(a.webhook_id)
            if first is None:
                firsts[a.webhook_id] = digest
            differs = first is not None and first != digest
        stored.append(evolve(a, id=next_id + offset, body_differs=bool(differs)))
        digests.append(digest)
    return stored, digests


def _insert(
    db: sqlite3.Connection, stored: Sequence[Attempt], digests: Sequence[bytes | None]
) -> None:
    rows.insert_many(
        db,
        f"INSERT INTO attempts ({rows.ATTEMPT_COLUMNS}, relay_channel)",
        [(*rows.attempt_values(a), rows.channel_of(a)) for a in stored],
    )
    rows.insert_many(
        db,
        """
        INSERT INTO messages (webhook_id, topic, pass_id, attempts, verified_attempts,
            first_received_at_ms, last_received_at_ms, last_attempt_id, reason, endpoint_id,
            last_status, first_digest)""",
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
                digest,
            )
            for a, digest in zip(stored, digests, strict=True)
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
            last_status = excluded.last_status,
            first_digest = COALESCE(messages.first_digest, excluded.first_digest)
        """,
    )


# -- the loop -------------------------------------------------------------------------------------


class GroupCommit:
    """Takes every waiting attempt and commits them together; tells listeners after each commit."""

    def __init__(self, thread: WriteThread, health: Health, rejected_cap: int) -> None:
        self.thread = thread
        self.health = health
        self.rejected_cap = rejected_cap
        self.commits = 0  # write transactions that stored attempts (group commit: << attempts)
        self.listeners: Listeners[[Sequence[Attempt]]] = Listeners(
            "walletpass_tui.webhooks.store", "commit"
        )
        self.checkpoints = Checkpointer(thread.path)
        self.log = LogBound(thread.log_bound_bytes)
        self.syncs = WalSync(thread.path)
        self._syncing = 0  # batches committed, waiting for their fsync
        self._notifying = 0  # commits whose listeners are still to hear of them
        self._queue: asyncio.Queue[Pending | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._busy = False
        self._rejected_since_prune = 0
        self._remembered: dict[str, int] = {}  # webhook-id -> attempts stored, newest last
        self._hurried = False  # settled() waits: do the background work now
        self._waiter: asyncio.Future[None] | None = None  # a writer waiting for deliveries
        self.pruning: PruneJob | None = None  # the prune under way (start_prune), or the last
        self.prunes: Listeners[[PruneJob]] = Listeners("walletpass_tui.webhooks.store", "prune")
        self._prune_sync: asyncio.Future[None] | None = None  # the last step's fsync
        self._since_step = 0  # batches committed since the last prune step
        self._step_began = 0.0  # when the last prune step began (the event loop's clock)
        self._rest_until = 0.0  # no prune step before this (the event loop's clock)
        self.checkpoints.on_end = self._poke  # a prune waiting for the log to be copied goes on
        # A prune waiting for an fsync to end goes on: a delivery's, or a write of the store's own
        # (a relay's marks), which nothing else wakes the writer after.
        self.syncs.on_end = self._sync_ended
        # Set by the store: close everything and open the history again after its files were
        # deleted (files.py); True when the commit that found it is kept (the log was copied).
        self.start_over: Callable[[str], Awaitable[bool]] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="store-writer")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def idle(self) -> bool:
        """Nothing queued, nothing being written, the rejected cap applied."""
        busy = self._busy or self._syncing or self._notifying
        return not (self._queue.qsize() or busy or self._backlog())

    def submit(self, pending: Pending) -> None:
        self._queue.put_nowait(pending)
        self._poke()

    async def stop(self) -> None:
        job = self.pruning
        if job is not None:
            job.stop("the receiver is stopping")
        if self._task is not None:
            self._queue.put_nowait(None)
            self._poke()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await self._task
        if job is not None:
            job.finish(STOPPED)
        await self.syncs.close()
        await self.checkpoints.close()

    def start_prune(self, cutoff_ms: int) -> PruneJob:
        """Delete every attempt received before ``cutoff_ms`` in steps between the batches (see
        prune_job.py); RuntimeError when a prune runs already or the writer has stopped."""
        if not self.running:
            raise RuntimeError("the history is closing")
        if self.pruning is not None and self.pruning.running:
            raise RuntimeError("it is pruning its history already (one prune at a time)")
        job = PruneJob(cutoff_ms, wake=self._poke)
        self.pruning = job
        self._since_step = 0
        self._poke()
        self.prunes.notify(job)
        return job

    async def synced(self) -> None:
        """After a write of its own (``Store._write``): wait until it is on disk."""
        await self.syncs.synced()

    async def _run(self) -> None:
        while True:
            first = await self._next()
            if first is None:
                break
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH and not self._queue.empty():
                item = self._queue.get_nowait()
                if item is None:
                    stop = True
                    break
                batch.append(item)
            await self._commit(batch)
            await self._bound_log()
            if stop:
                break
            if self._queue.empty():  # idle: a prune goes on in _next, between deliveries
                self._since_step = 0
                continue
            self._since_step += 1  # batches in a row, each followed by more deliveries
            if self._since_step >= FORCED_EVERY and self._prune_ready(forced=True):
                await self._prune_step(forced=True)  # never idle: a step anyway
        self._busy = False

    def hurry(self) -> None:
        """Do the background work now instead of waiting for the writer to be idle a while."""
        self._hurried = True
        self._poke()

    def _sync_ended(self) -> None:
        if self.pruning is not None and self.pruning.running:
            self._poke()

    def _poke(self) -> None:
        """Wake a writer waiting in _wait (a delivery, a stop or a hurry)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _next(self) -> Pending | None:
        """The next delivery; while none waits, one bounded step of background work at a time
        (a small backlog waits for IDLE_S without deliveries)."""
        step_now = False
        while self._queue.empty():
            if self._prune_ready():
                self._busy = True
                await self._prune_step()
                continue
            backlog = self._backlog()
            if not backlog:
                self._hurried = False
            elif step_now or self._hurried:
                self._busy = True
                await self._catch_up_step()
                step_now = False
                continue
            item = await self._wait(IDLE_S if backlog else None)
            if item is not _NOTHING:
                self._busy = True
                return item  # type: ignore[return-value]  # not _NOTHING: a Pending
            step_now = True  # idle long enough, or woken: a step if there is work
        self._busy = True
        return self._queue.get_nowait()

    async def _wait(self, timeout: float | None) -> object:
        """A delivery if one comes within ``timeout`` and before a wake-up, else _NOTHING.

        One future, woken by ``_poke``, rather than a task per source: at a steady rate the writer
        waits here before every delivery. The state a wake-up stands for was looked at just
        before, with no await in between, so none is missed.
        """
        self._busy = False
        if self._queue.empty():
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    with contextlib.suppress(TimeoutError):  # the wait's deadline ended
                        async with asyncio.timeout(timeout):
                            await self._waiter
            finally:
                self._waiter = None
        return self._queue.get_nowait() if not self._queue.empty() else _NOTHING

    def _backlog(self) -> bool:
        return self._rejected_since_prune >= max(1, self.rejected_cap // 10)

    def _prune_ready(self, *, forced: bool = False) -> bool:
        """Whether a prune step may run now (the caller says no delivery waits, or, ``forced``,
        that deliveries never stopped for a few batches): a prune is under way, the last step's
        log is on disk and its rest is over, and (unless forced) no delivery's fsync and no copy
        of the log into the database file is under way. A prune asked to stop ends here."""
        job = self.pruning
        if job is None or not job.running:
            return False
        if job.stopping:
            job.finish(STOPPED)
            return False
        if self._prune_sync is not None and not self._prune_sync.done():
            return False
        if asyncio.get_running_loop().time() < self._rest_until:
            return False
        return forced or not (self.syncs.busy or self.checkpoints.busy)

    async def _prune_step(self, *, forced: bool = False) -> None:
        job = self.pruning
        assert job is not None
        self._since_step = 0
        limit = job.size
        self._step_began = asyncio.get_running_loop().time()
        try:
            done = await self.thread.run(prune_step, job.cutoff_ms, limit, self.thread.files)
        except Exception as exc:  # told to whoever asked for the prune; deliveries go on
            reason = tables.explain(exc, self.thread.path)
            log.warning("a prune step failed: %s", reason)
            job.finish(FAILED, reason)
            return
        if done.deleted:
            # On disk on the sync thread while the writer takes deliveries; the next step waits
            # for it and then rests (REST), so a delivery's fsync never writes more than one
            # step's log, and most find none to write.
            sync = self.syncs.after_commit()
            self._prune_sync = sync
            sync.add_done_callback(self._prune_synced)
            self.checkpoints.note(done.deleted)
        job.took(done.deleted, done.held_s, forced=forced)
        await self._bound_log()
        if done.deleted < limit:
            job.finish(DONE)

    def _prune_synced(self, sync: asyncio.Future[None]) -> None:
        if not sync.cancelled() and (failure := sync.exception()) is not None:
            # the deliveries this fsync covered heard of it; a step lost is pruned again next time
            log.debug("a prune step's fsync failed: %s", failure)
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._rest_until = now + REST * (now - self._step_began)
        loop.call_at(self._rest_until, self._poke)

    async def _catch_up_step(self) -> None:
        try:
            self._rejected_since_prune = 0
            await self.thread.run(prune.rejected_beyond, self.rejected_cap)
        except Exception as exc:  # nothing stored is at stake: retried after the next commit
            self.health.failed(tables.explain(exc, self.thread.path))

    async def _bound_log(self) -> None:
        """Between two batches, deliveries waiting or not: once the log file passed its bound,
        finish the checkpoint so the next commit starts the log over (see checkpoints.py); never
        waiting for a reader. The size is the one the batch's commit found (files.py stats the
        log anyway)."""
        step = self.log.step(self.thread.files.log_bytes, self.checkpoints)
        if step is None or self.thread.disconnected:
            return
        try:
            complete = await self.thread.run(top_up_checkpoint)
        except Exception as exc:  # nothing stored is at stake: tried again after the next batch
            self.health.failed(tables.explain(exc, self.thread.path))
            return
        self.log.done(complete)

    async def _commit(self, batch: list[Pending], again: bool = True) -> None:
        """Commit the batch in one transaction; attempts whose numbers another program changed
        meanwhile are numbered again from the database (a few times at most). When the history's
        files were deleted under it, the history is started over and the batch stored there
        (``again``: once)."""
        relayed = all(p.attempt.relay_cursor is not None for p in batch)
        # Nothing else waiting: the fsync right after the commit, on the writer's thread.
        inline = not relayed and self._queue.empty() and not self.syncs.busy
        try:
            if self.thread.disconnected:  # deleted, and starting over failed last time
                raise FilesMoved(DELETED, self.thread.path)
            stored = await self._write(batch, self.syncs.fsync_now if inline else None)
        except FilesMoved as moved:  # files moved under us: started over, or the caller is told
            if again and self.start_over is not None:
                await self._after_move(batch, moved)
            else:
                self._failed(batch, moved)
            return
        except Exception as exc:  # anything: the writer must survive and every caller hear
            self._failed(batch, exc)
            return
        self._remember(stored)  # the next batch is numbered from these, on disk or not yet
        if inline:
            self._stored(batch, stored)
            return
        if relayed:
            # Relayed only: nobody waits for a 2xx, the relay keeps them (see relay_marks.py);
            # told after any earlier commit still on its way to disk, so listeners hear in order.
            earlier = self.syncs.after_earlier()
            if earlier is None:
                self._stored(batch, stored)
                return
        else:
            earlier = self.syncs.after_commit()
        self._syncing += 1
        earlier.add_done_callback(functools.partial(self._synced, batch, stored))

    async def _after_move(self, batch: list[Pending], moved: FilesMoved) -> None:
        """Start the history over (see files.py); the batch is answered once it is in the
        database file at the path: copied there with the log, or committed again."""
        assert self.start_over is not None
        try:
            kept = await self.start_over(moved.kind)
        except Exception as exc:  # anything: the writer must survive and every caller hear
            self._failed(batch, exc)
            return
        if moved.kind == DELETED:
            self._remembered.clear()  # numbered from the new history from now on
        if kept and moved.stored is not None:
            self._remember(moved.stored)
            self._stored(batch, moved.stored)
            return
        await self._commit(batch, again=False)

    def _synced(
        self, batch: Sequence[Pending], stored: Sequence[Attempt], sync: asyncio.Future[None]
    ) -> None:
        self._syncing -= 1
        relayed = all(p.attempt.relay_cursor is not None for p in batch)
        failure = None if sync.cancelled() else sync.exception()
        if failure is not None and not relayed:
            self._failed(batch, failure)
        else:
            self._stored(batch, stored)

    async def _write(
        self, batch: list[Pending], sync: Callable[[], None] | None = None
    ) -> list[Attempt]:
        attempts = [p.attempt for p in batch]
        targets = [p.forward_to for p in batch]
        files = self.thread.files
        if not any(p.finalize for p in batch):
            done = await self.thread.run(commit_batch, attempts, targets, None, sync, files)
            assert done is not None
            return done
        # Numbered from what the writer remembers (no read, no extra trip to its thread); the commit
        # checks the numbers and, if another program or an older run wrote these messages, the
        # batch is numbered again from the database.
        known = self._known(attempts)
        for tries in range(MAX_RENUMBER):
            if tries:
                known = await self.thread.run(peek, attempts)
            decided = [
                p.finalize(a) if p.finalize is not None else a
                for p, a in zip(batch, number(attempts, known), strict=True)
            ]
            done = await self.thread.run(commit_batch, decided, targets, known, sync, files)
            if done is not None:
                return done
        raise StoreError(
            f"Another program keeps writing the same messages into {self.thread.path}; "
            "stop it or use another --home."
        )

    def _known(self, attempts: Sequence[Attempt]) -> Known:
        known: Known = {}
        for a in attempts:
            if a.webhook_id in self._remembered:
                known[a.webhook_id] = (self._remembered[a.webhook_id], None)
        return known

    def _stored(self, batch: Sequence[Pending], stored: Sequence[Attempt]) -> None:
        self.commits += 1
        self.health.ok()
        for pending, attempt in zip(batch, stored, strict=True):
            if not pending.future.done():
                pending.future.set_result(attempt)
        # Listeners (the printed line, the dashboard, the indexer) hear right after the senders
        # are answered, not before: their work is not on the acknowledgement path.
        self._notifying += 1
        asyncio.get_running_loop().call_soon(self._notify, stored)
        self._rejected_since_prune += sum(1 for a in stored if not a.verified)
        self.checkpoints.note(len(stored))

    def _failed(self, batch: Sequence[Pending], exc: BaseException) -> None:
        error = (
            exc
            if isinstance(exc, StoreError)
            else StoreError(tables.explain(exc, self.thread.path))
        )
        self.health.failed(str(error))
        for pending in batch:
            if not pending.future.done():
                pending.future.set_exception(error)

    def _remember(self, stored: Sequence[Attempt]) -> None:
        remembered = self._remembered
        for a in stored:
            if a.webhook_id:
                remembered.pop(a.webhook_id, None)  # newest last: the oldest are forgotten first
                remembered[a.webhook_id] = a.attempt_no
        while len(remembered) > REMEMBERED:
            del remembered[next(iter(remembered))]

    def _notify(self, stored: Sequence[Attempt]) -> None:
        self._notifying -= 1
        self.listeners.notify(stored)  # a listener's bug is logged and never stops the writer
