"""The PostgreSQL relay's writer: one task per process commits whatever waits in one transaction.

* **Cursors per channel, in commit order.** The writer raises ``channels.last_cursor`` in the
  transaction that inserts the deliveries; the row stays locked until COMMIT, so the next
  transaction of that channel (from any process) waits, takes the following cursors and commits
  after it. A reader never sees cursor N+1 without N. A batch locks its channels in id order, so
  two processes never wait on each other in a cycle.
* **Group commit.** A future is resolved only after COMMIT (or with the error that prevented
  it); a job whose caller stopped waiting before it was written is not written.
* **Its own notices.** Each commit sends ``pg_notify`` (delivered with the COMMIT) naming the
  channel and its new cursors. This process hears its own too: those are dropped (``on_commit``
  brought them, with the data), every other is passed on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from walletpass_tui.logs import suppressed
from walletpass_tui.relay.events import (
    RECEIVED_AT_MS_KEY,
    RECEIVED_AT_OPEN,
    stamped,
    unstamped,
)
from walletpass_tui.relay.server.storage import records
from walletpass_tui.relay.server.storage.base import Committed, StorageEvents
from walletpass_tui.relay.server.storage.errors import DatabaseUnavailable, RelayStoreError
from walletpass_tui.relay.server.storage.postgres.pool import UNAVAILABLE, Database
from walletpass_tui.relay.server.storage.postgres.schema import NOTIFY_CHANNEL
from walletpass_tui.relay.server.storage.records import (
    MAX_BATCH,
    NewDelivery,
    NewRejection,
    Stored,
    storable_text,
)

log = logging.getLogger(__name__)

Job = NewDelivery | NewRejection
Waiting = tuple[Job, "asyncio.Future[Any]"]

_LOCK_CHANNELS = "SELECT id FROM channels WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE"
# Deliveries stored in one statement: each channel's cursor raised by how many it gets (the
# row stays locked until COMMIT), the rows inserted with the cursors that follow, the notice
# sent (delivered with the COMMIT). Their received time is the database's clock once the
# channel's row is locked: one clock for every instance, never going back along the cursor as
# long as the database's clock does not. It is written into each row's data, whose JSON starts
# with it (``relay.events.stamped``). Returns each channel's new last cursor, usage and time.
_STORE = """
WITH adv AS (
    UPDATE channels c SET last_cursor = c.last_cursor + v.n, used_bytes = c.used_bytes + v.bytes
    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS v(id, n, bytes)
    WHERE c.id = v.id
    RETURNING c.id, c.last_cursor - v.n AS base, c.last_cursor, c.used_bytes,
              floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS at_ms
), stamp AS (
    SELECT adv.*,
           to_char(to_timestamp(adv.at_ms / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
               || '.' || lpad((adv.at_ms % 1000)::text, 3, '0') || 'Z' AS at_text
    FROM adv
), ins AS (
    INSERT INTO deliveries (channel_id, cursor, received_at_ms, webhook_id, size, data)
    SELECT d.channel_id, s.base + d.k, s.at_ms, d.webhook_id, d.size,
           convert_to($9::text || s.at_text || $10::text || s.at_ms::text, 'UTF8') || d.rest
    FROM unnest($4::bigint[], $5::bigint[], $6::text[], $7::int[], $8::bytea[])
        AS d(channel_id, k, webhook_id, size, rest)
    JOIN stamp s ON s.id = d.channel_id
)
SELECT s.id, s.last_cursor, s.used_bytes, s.at_ms, s.at_text,
       pg_notify($11, concat_ws(' ', 'd', s.id, s.base + 1, s.last_cursor, s.used_bytes))
FROM stamp s
"""
_INSERT_REJECTIONS = """
INSERT INTO rejected (channel_id, received_at_ms, status, reason, webhook_id, source, headers, body)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[],
                     $7::text[], $8::bytea[])
"""
_TRIM_REJECTIONS = """
DELETE FROM rejected WHERE channel_id = $1 AND id <=
    (SELECT id FROM rejected WHERE channel_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)
"""


class PostgresWriter:
    def __init__(self, db: Database, events: StorageEvents) -> None:
        self._db = db
        self._events = events
        self._queue: asyncio.Queue[Waiting | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        # Channels the writer is storing to now, and the notices for them heard meanwhile:
        # decided once its own cursors are known.
        self._writing: set[int] = set()
        self._held: list[Committed] = []
        self.commits = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="relay-pg-writer")

    def submit(self, job: Job) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._task is None or self._closing:
            future.set_exception(RelayStoreError("The relay is stopping; nothing more is stored."))
        elif self._db.failing_fast:
            future.set_exception(DatabaseUnavailable(UNAVAILABLE))
        else:
            self._queue.put_nowait((job, future))
        return future

    async def close(self) -> None:
        """Commit what is queued, then stop."""
        self._closing = True
        if self._task is not None:
            self._queue.put_nowait(None)
            with suppressed(log, "relay: ending the database writer"):
                await self._task

    def heard(self, committed: Committed) -> None:
        """A notice of deliveries committed by some process (this one too)."""
        if committed.channel_id in self._writing:
            self._held.append(committed)  # perhaps this process's own: decided once written
        else:
            self._events.on_committed(committed)

    async def _loop(self) -> None:
        queue = self._queue
        while True:
            item = await queue.get()
            if item is None:
                return
            batch = [item]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    more = queue.get_nowait()
                except asyncio.QueueEmpty:  # the queue is drained: the batch is complete
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            await self._commit(batch)
            if stop:
                return

    async def _commit(self, batch: list[Waiting]) -> None:
        # A caller that stopped waiting before its job was written gets nothing written: it
        # never saw a 2xx, and the sender retries.
        batch = [(job, future) for job, future in batch if not future.done()]
        if not batch:
            return
        if self._db.failing_fast:
            _fail(batch, DatabaseUnavailable(UNAVAILABLE))
            return
        self._writing = {job.channel_id for job, _ in batch if isinstance(job, NewDelivery)}
        try:
            results, stored = await self._write(batch)
        except Exception as exc:
            self._release_held(set())
            error = self._db.failure(exc)
            log.debug("relay: a batch of %d not written: %s", len(batch), error)
            if len(batch) > 1 and not isinstance(error, DatabaseUnavailable):
                # Something in one job, not the database: write them one by one so only the
                # one at fault fails.
                for one in batch:
                    await self._commit([one])
                return
            _fail(batch, error)
            return
        self.commits += 1
        if stored:
            self._events.on_commit(stored)
        self._release_held({(item.channel_id, item.cursor) for item in stored})
        for (_, future), result in zip(batch, results, strict=True):
            if future.done():
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _release_held(self, own: set[tuple[int, int]]) -> None:
        """The notices heard while this process was writing to their channels: its own commit's
        are dropped (``on_commit`` brought it, with the data), any other's are passed on."""
        held, self._held = self._held, []
        self._writing = set()
        for committed in held:
            if (committed.channel_id, committed.first) in own:
                continue
            self._events.on_committed(committed)

    async def _write(self, batch: list[Waiting]) -> tuple[list[Any], list[Stored]]:
        deliveries = [job for job, _ in batch if isinstance(job, NewDelivery)]
        kept = [job for job, _ in batch if isinstance(job, NewRejection)]
        ids = sorted({job.channel_id for job, _ in batch})
        counts: dict[int, int] = {}
        sizes: dict[int, int] = {}
        rank: list[int] = []  # each delivery's place among its channel's in this batch
        for delivery in deliveries:
            counts[delivery.channel_id] = counts.get(delivery.channel_id, 0) + 1
            sizes[delivery.channel_id] = sizes.get(delivery.channel_id, 0) + len(delivery.data)
            rank.append(counts[delivery.channel_id])
        live = sorted(counts)
        rests = [unstamped(job.data) for job in deliveries]  # stamped again by the database
        store_args = (
            live,
            [counts[i] for i in live],
            [sizes[i] for i in live],
            [job.channel_id for job in deliveries],
            rank,
            [storable_text(job.webhook_id) for job in deliveries],
            [len(job.data) for job in deliveries],  # the same length once stamped again
            rests,
            RECEIVED_AT_OPEN,
            RECEIVED_AT_MS_KEY,
            NOTIFY_CHANNEL,
        )
        async with self._db.acquire() as conn:
            if not kept and len(ids) == 1:
                # The common case: one statement, its own transaction, one round trip.
                locked = set(ids)
                rows = await conn.fetch(_STORE, *store_args)
            else:
                async with conn.transaction():
                    # Channels locked in id order: no cycle of waits between relay processes.
                    locked = {int(r[0]) for r in await conn.fetch(_LOCK_CHANNELS, ids)}
                    rows = await conn.fetch(_STORE, *store_args) if deliveries else []
                    kept = [j for j in kept if j.channel_id in locked]
                    if kept:
                        await _keep_rejections(conn, kept)
        advanced = {int(r[0]): (int(r[1]), int(r[2])) for r in rows}
        stamps = {int(r[0]): (str(r[4]), int(r[3])) for r in rows}
        next_cursor = {i: last - counts[i] + 1 for i, (last, _) in advanced.items()}
        results: list[Any] = []
        stored: list[Stored] = []
        rest = iter(rests)
        for job, _ in batch:
            if isinstance(job, NewDelivery):
                job_rest = next(rest)
            if job.channel_id not in locked or (
                isinstance(job, NewDelivery) and job.channel_id not in advanced
            ):
                results.append(RelayStoreError("Not stored: the channel was removed."))
            elif isinstance(job, NewDelivery):
                cursor = next_cursor[job.channel_id]
                next_cursor[job.channel_id] = cursor + 1
                # Usage after this commit, as every other process hears it.
                data = stamped(job_rest, *stamps[job.channel_id])
                item = Stored(cursor, job.channel_id, advanced[job.channel_id][1], data)
                stored.append(item)
                results.append(item)
            else:
                results.append(None)
        return results, stored


async def _keep_rejections(conn: Any, kept: list[NewRejection]) -> None:
    await conn.execute(
        _INSERT_REJECTIONS,
        [j.channel_id for j in kept],
        [j.received_at_ms for j in kept],
        [j.status for j in kept],
        [storable_text(j.reason) for j in kept],
        [storable_text(j.webhook_id) for j in kept],
        [storable_text(j.source) for j in kept],
        [storable_text(j.headers) for j in kept],
        [j.body[: records.REJECTED_BODY_LIMIT] for j in kept],
    )
    await conn.executemany(
        _TRIM_REJECTIONS, [(i, records.REJECTED_CAP) for i in sorted({j.channel_id for j in kept})]
    )


def _fail(batch: list[Waiting], error: Exception) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(error)
