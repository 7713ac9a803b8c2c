"""``RelayStorage`` on PostgreSQL (asyncpg): any number of relay processes on one database.

* **Cursors per channel, in commit order.** The writer raises ``channels.last_cursor`` in the
  transaction that inserts the deliveries; the row stays locked until COMMIT, so the next
  transaction of that channel (from any process) waits, takes the following cursors and commits
  after it. A reader never sees cursor N+1 without N. A batch locks its channels in id order, so
  two processes never wait on each other in a cycle.
* **Group commit.** One writer task per process commits whatever waits in one transaction; a
  future is resolved only after COMMIT.
* **Fan-out across processes.** Each commit sends ``pg_notify`` (delivered with the COMMIT, in
  commit order) naming the channel, its new cursors and usage; every process LISTENs on its own
  connection and reads what it has not seen. That connection is pinged; when it is lost the
  process says the database is unreachable, reconnects with backoff, LISTENs again and then has
  every stream read the database afresh, so nothing notified during the outage is missed.
* **Failing fast.** A connection failure makes reads and writes fail at once for a moment
  (``FAIL_FAST_S``) instead of each waiting for a connect timeout: ingress answers 503 with
  Retry-After and the service retries.
* **Pruning** runs in one process at a time (``pg_try_advisory_lock``), one channel per
  transaction.

The URL's password is never shown: errors name the database by ``DatabaseTarget.display``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from walletpass_tui.config import database_url_secrets
from walletpass_tui.logs import suppressed
from walletpass_tui.relay.server import writer as rules
from walletpass_tui.relay.server.channels import (
    DEFAULT_QUOTA_BYTES,
    Channel,
    ChannelError,
    check_name,
    new_slug,
    new_token,
    token_hash,
)
from walletpass_tui.relay.server.storage.base import (
    Committed,
    DatabaseUnavailable,
    IssuedChannel,
    RelayStoreError,
    StorageEvents,
    now_ms,
)
from walletpass_tui.relay.server.storage.postgres_schema import (
    NOTIFY_CHANNEL,
    PRUNE_LOCK,
    SCHEMA_VERSION,
    NewerSchema,
    migrate,
)
from walletpass_tui.relay.server.storage.target import DatabaseTarget
from walletpass_tui.relay.server.writer import NewDelivery, NewRejection, Stored, storable_text
from walletpass_tui.text import parse_ascii_int

log = logging.getLogger(__name__)

T = TypeVar("T")

CONNECT_TIMEOUT_S = 5.0
COMMAND_TIMEOUT_S = 10.0  # any one statement; a slower database is treated as unavailable
ACQUIRE_TIMEOUT_S = 5.0
PRUNE_TIMEOUT_S = 300.0
POOL_SIZE = 10  # serving: the writer, reads of pages and tokens, channel refreshes
PING_S = 2.0  # how often the listening connection is checked
FAIL_FAST_S = 1.0
BACKOFF_MAX_S = 2.0
NOTIFY_DELIVERIES = "d"
NOTIFY_CHANNELS = "c"
APPLICATION_NAME = "walletpass-relay"
LISTENER_NAME = (
    "walletpass-relay-listen"  # the connection that LISTENs, told apart in pg_stat_activity
)

_UNAVAILABLE = "the relay's database cannot be reached now; retry shortly"

# SQLSTATE classes that mean the server, not the request: connection exceptions, insufficient
# resources, operator intervention (shutdown, cancel), system errors.
_UNAVAILABLE_CLASSES = ("08", "53", "57", "58")

_CHANNEL_COLUMNS = "c.id, c.name, c.slug, c.created_at_ms, c.secret, c.quota_bytes, c.used_bytes"
_CHANNEL_SELECT = f"""
SELECT {_CHANNEL_COLUMNS},
       (SELECT COUNT(*) FROM deliveries d WHERE d.channel_id = c.id),
       (SELECT COUNT(*) FROM rejected r WHERE r.channel_id = c.id),
       (SELECT COUNT(*) FROM tokens t WHERE t.channel_id = c.id AND t.revoked_at_ms IS NULL)
FROM channels c
"""
_CHANNEL_SELECT_LIGHT = f"SELECT {_CHANNEL_COLUMNS}, 0, 0, 0 FROM channels c"

_LOCK_CHANNELS = "SELECT id FROM channels WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE"
# Deliveries stored in one statement: each channel's cursor raised by how many it gets (the
# row stays locked until COMMIT), the rows inserted with the cursors that follow, the notice
# sent (delivered with the COMMIT). Returns each channel's new last cursor and usage.
_STORE = """
WITH adv AS (
    UPDATE channels c SET last_cursor = c.last_cursor + v.n, used_bytes = c.used_bytes + v.bytes
    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS v(id, n, bytes)
    WHERE c.id = v.id
    RETURNING c.id, c.last_cursor - v.n AS base, c.last_cursor, c.used_bytes
), ins AS (
    INSERT INTO deliveries (channel_id, cursor, received_at_ms, webhook_id, size, data)
    SELECT d.channel_id, adv.base + d.k, d.received_at_ms, d.webhook_id, d.size, d.data
    FROM unnest($4::bigint[], $5::bigint[], $6::bigint[], $7::text[], $8::int[], $9::bytea[])
        AS d(channel_id, k, received_at_ms, webhook_id, size, data)
    JOIN adv ON adv.id = d.channel_id
)
SELECT adv.id, adv.last_cursor, adv.used_bytes,
       pg_notify($10, concat_ws(' ', 'd', adv.id, adv.base + 1, adv.last_cursor, adv.used_bytes))
FROM adv
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
# A page after a cursor, at most $3 rows and about $4 bytes (at least one row): the running sum
# is taken over the size column, so rows past the bound are never read out of storage.
_READ_AFTER = """
SELECT cursor, data FROM (
    SELECT cursor, data, SUM(size) OVER (ORDER BY cursor) - size AS before
    FROM deliveries WHERE channel_id = $1 AND cursor > $2 ORDER BY cursor LIMIT $3
) page WHERE before < $4 ORDER BY cursor
"""


def _channel(row: Any) -> Channel:
    return Channel(
        id=int(row[0]),
        name=row[1],
        slug=row[2],
        created_at_ms=int(row[3]),
        secret=row[4],
        quota_bytes=int(row[5]),
        used_bytes=int(row[6]),
        deliveries=int(row[7]),
        rejected=int(row[8]),
        tokens=int(row[9]),
    )


def _is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, asyncpg.PostgresError):
        state = str(getattr(exc, "sqlstate", "") or "")
        return state[:2] in _UNAVAILABLE_CLASSES
    return isinstance(exc, (OSError, TimeoutError, asyncpg.InterfaceError, ConnectionError))


class PostgresStorage:
    dense_cursors = True
    shared = True  # other processes write too; changes are heard (on_channels_changed)

    def __init__(self, target: DatabaseTarget, pool: Any) -> None:
        self.target = target
        self._pool = pool
        self._events: StorageEvents | None = None
        self._queue: asyncio.Queue[tuple[Any, asyncio.Future[Any]] | None] | None = None
        self._writer_task: asyncio.Task[None] | None = None
        self._listener_task: asyncio.Task[None] | None = None
        self._check_now = asyncio.Event()
        self._reachable = True
        self._down_until = 0.0
        self._closing = False
        # Channels the writer is storing to now, and the notices for them heard meanwhile: the
        # writer's own are dropped once it knows its cursors (on_commit brings those, with the
        # data, so they are not read again from the database).
        self._writing: set[int] = set()
        self._held: list[Committed] = []
        self.commits = 0

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls, target: DatabaseTarget, *, serving: bool = True, wait_s: float = 0.0
    ) -> PostgresStorage:
        """Connect (retrying for ``wait_s`` while the server does not answer) and migrate."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                pool = await asyncpg.create_pool(
                    target.url,
                    min_size=1,
                    max_size=POOL_SIZE if serving else 2,
                    timeout=CONNECT_TIMEOUT_S,
                    command_timeout=COMMAND_TIMEOUT_S,
                    server_settings={"application_name": APPLICATION_NAME},
                )
                break
            except Exception as exc:
                if not _is_unavailable(exc) or time.monotonic() >= deadline:
                    raise RelayStoreError(
                        f"Cannot open the relay database {target.display} "
                        f"({_reason(exc, target)}); check that PostgreSQL runs and that the "
                        "URL, user and password (WALLETPASS_RELAY_DATABASE or ~/.pgpass) are "
                        "right."
                    ) from None
                await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        try:
            async with pool.acquire(timeout=ACQUIRE_TIMEOUT_S) as conn:
                await migrate(conn)
        except NewerSchema as exc:
            await _close_pool(pool)
            raise RelayStoreError(
                f"The relay database {target.display} was written by a newer walletpass-tui "
                f"(schema {exc.version}, this one knows {SCHEMA_VERSION}); upgrade it."
            ) from None
        except Exception as exc:
            await _close_pool(pool)
            raise RelayStoreError(
                f"Cannot prepare the relay database {target.display} ({_reason(exc, target)})."
            ) from None
        return cls(target, pool)

    @property
    def reachable(self) -> bool:
        return self._reachable

    # -- serving -------------------------------------------------------------------------------

    async def serve(self, events: StorageEvents) -> None:
        self._events = events
        self._queue = asyncio.Queue()
        self._writer_task = asyncio.create_task(self._write_loop(), name="relay-pg-writer")
        connected = asyncio.get_running_loop().create_future()
        self._listener_task = asyncio.create_task(
            self._listen_loop(connected), name="relay-pg-listener"
        )
        # The first LISTEN is in place before the relay accepts anything, so no commit that a
        # subscriber of this process could wait for goes unheard.
        done, _ = await asyncio.wait(
            {connected, self._listener_task},
            timeout=CONNECT_TIMEOUT_S,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if not done:
            log.warning("relay: not yet listening on the database; retrying in the background")

    def submit(self, job: NewDelivery | NewRejection) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._queue is None or self._closing:
            future.set_exception(RelayStoreError("The relay is stopping; nothing more is stored."))
        elif time.monotonic() < self._down_until:
            future.set_exception(DatabaseUnavailable(_UNAVAILABLE))
        else:
            self._queue.put_nowait((job, future))
        return future

    async def close(self) -> None:
        """Commit what is queued, stop listening, close the pool."""
        self._closing = True
        if self._queue is not None and self._writer_task is not None:
            self._queue.put_nowait(None)
            with suppressed(log, "relay: ending the database writer"):
                await self._writer_task
        if self._listener_task is not None:
            self._listener_task.cancel()
            with suppressed(log, "relay: ending the database listener", BaseException):
                await self._listener_task
        await _close_pool(self._pool)

    # -- the writer ----------------------------------------------------------------------------

    async def _write_loop(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            item = await queue.get()
            if item is None:
                return
            batch = [item]
            stop = False
            while len(batch) < rules.MAX_BATCH:
                try:
                    more = queue.get_nowait()
                except asyncio.QueueEmpty:  # the queue is drained: the batch is complete
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            await self._commit_batch(batch)
            if stop:
                return

    async def _commit_batch(self, batch: list[tuple[Any, asyncio.Future[Any]]]) -> None:
        # A caller that stopped waiting before its job was written gets nothing written: it
        # never saw a 2xx, and the sender retries.
        batch = [(job, future) for job, future in batch if not future.done()]
        if not batch:
            return
        if time.monotonic() < self._down_until:
            _fail(batch, DatabaseUnavailable(_UNAVAILABLE))
            return
        channels = {job.channel_id for job, _ in batch if isinstance(job, NewDelivery)}
        self._writing = channels
        try:
            results, stored = await self._write(batch)
        except Exception as exc:
            self._release_held(set())
            error = self._failure(exc)
            log.debug("relay: a batch of %d not written: %s", len(batch), error)
            if len(batch) > 1 and not isinstance(error, DatabaseUnavailable):
                # Something in one job, not the database: write them one by one so only the
                # one at fault fails.
                for one in batch:
                    await self._commit_batch([one])
                return
            _fail(batch, error)
            return
        self.commits += 1
        if stored and self._events is not None:
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
            if self._events is not None:
                self._events.on_committed(committed)

    async def _write(
        self, batch: list[tuple[Any, asyncio.Future[Any]]]
    ) -> tuple[list[Any], list[Stored]]:
        deliveries = [job for job, _ in batch if isinstance(job, NewDelivery)]
        kept = [job for job, _ in batch if isinstance(job, NewRejection)]
        ids = sorted({job.channel_id for job, _ in batch})
        counts: dict[int, int] = {}
        sizes: dict[int, int] = {}
        rank: list[int] = []  # each delivery's place among its channel's in this batch
        for job in deliveries:
            counts[job.channel_id] = counts.get(job.channel_id, 0) + 1
            sizes[job.channel_id] = sizes.get(job.channel_id, 0) + len(job.data)
            rank.append(counts[job.channel_id])
        live = sorted(counts)
        store_args = (
            live,
            [counts[i] for i in live],
            [sizes[i] for i in live],
            [job.channel_id for job in deliveries],
            rank,
            [job.received_at_ms for job in deliveries],
            [storable_text(job.webhook_id) for job in deliveries],
            [len(job.data) for job in deliveries],
            [job.data for job in deliveries],
            NOTIFY_CHANNEL,
        )
        async with _acquire(self._pool) as conn:
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
                        await self._keep_rejections(conn, kept)
        advanced = {int(r[0]): (int(r[1]), int(r[2])) for r in rows}
        next_cursor = {i: last - counts[i] + 1 for i, (last, _) in advanced.items()}
        results: list[Any] = []
        stored: list[Stored] = []
        for job, _ in batch:
            if job.channel_id not in locked or (
                isinstance(job, NewDelivery) and job.channel_id not in advanced
            ):
                results.append(RelayStoreError("Not stored: the channel was removed."))
            elif isinstance(job, NewDelivery):
                cursor = next_cursor[job.channel_id]
                next_cursor[job.channel_id] = cursor + 1
                # Usage after this commit, as every other process hears it.
                item = Stored(cursor, job.channel_id, advanced[job.channel_id][1], job.data)
                stored.append(item)
                results.append(item)
            else:
                results.append(None)
        return results, stored

    async def _keep_rejections(self, conn: Any, kept: list[NewRejection]) -> None:
        limit = rules.REJECTED_BODY_LIMIT
        await conn.execute(
            _INSERT_REJECTIONS,
            [j.channel_id for j in kept],
            [j.received_at_ms for j in kept],
            [j.status for j in kept],
            [storable_text(j.reason) for j in kept],
            [storable_text(j.webhook_id) for j in kept],
            [storable_text(j.source) for j in kept],
            [storable_text(j.headers) for j in kept],
            [j.body[:limit] for j in kept],
        )
        cap = rules.REJECTED_CAP
        await conn.executemany(
            _TRIM_REJECTIONS, [(i, cap) for i in sorted({j.channel_id for j in kept})]
        )

    # -- hearing other processes ---------------------------------------------------------------

    async def _listen_loop(self, connected: asyncio.Future[None]) -> None:
        backoff = 0.1
        first = True
        while not self._closing:
            conn: Any = None
            try:
                conn = await asyncpg.connect(
                    self.target.url,
                    timeout=CONNECT_TIMEOUT_S,
                    command_timeout=COMMAND_TIMEOUT_S,
                    server_settings={"application_name": LISTENER_NAME},
                )
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await conn.add_listener(NOTIFY_CHANNEL, self._on_notify)
                backoff = 0.1
                self._down_until = 0.0
                self._set_reachable(True, catch_up=not first)
                first = False
                if not connected.done():
                    connected.set_result(None)
                while not self._closing:
                    self._check_now.clear()
                    waiter = asyncio.ensure_future(self._check_now.wait())
                    lost_waiter = asyncio.ensure_future(lost.wait())
                    try:
                        await asyncio.wait(
                            {waiter, lost_waiter},
                            timeout=PING_S,
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                    finally:
                        waiter.cancel()
                        lost_waiter.cancel()
                    if lost.is_set():
                        raise ConnectionResetError("the database closed the connection")
                    await conn.fetchval("SELECT 1", timeout=PING_S + CONNECT_TIMEOUT_S)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._reachable:
                    log.warning(
                        "relay: the database %s is unreachable (%s); retrying",
                        self.target.display,
                        _reason(exc, self.target),
                    )
                self._set_reachable(False)
            finally:
                if conn is not None:
                    with suppressed(log, "relay: dropping the listening connection"):
                        conn.terminate()
            if self._closing:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    def _set_reachable(self, reachable: bool, *, catch_up: bool = False) -> None:
        was = self._reachable
        self._reachable = reachable
        if not reachable:
            self._down_until = time.monotonic() + FAIL_FAST_S
        if self._events is None:
            return
        if not reachable and was:
            self._events.on_database(False)
        elif reachable and (catch_up or not was):
            if not was:
                log.warning("relay: the database %s is reachable again", self.target.display)
            self._events.on_database(True)

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        events = self._events
        if events is None:
            return
        parts = payload.split()
        if parts == [NOTIFY_CHANNELS]:
            events.on_channels_changed()
            return
        if len(parts) == 5 and parts[0] == NOTIFY_DELIVERIES:
            numbers = [parse_ascii_int(p) for p in parts[1:]]
            channel_id, first, last, used = numbers
            if channel_id is None or first is None or last is None or used is None:
                return
            if not 0 < first <= last:
                return
            committed = Committed(channel_id, first, last, used)
            if channel_id in self._writing:
                self._held.append(committed)  # perhaps this process's own: decided once written
            else:
                events.on_committed(committed)

    def _failure(self, exc: BaseException) -> RelayStoreError:
        if isinstance(exc, RelayStoreError):
            return exc
        if _is_unavailable(exc):
            self._down_until = time.monotonic() + FAIL_FAST_S
            self._check_now.set()  # the listener checks the connection now
            return DatabaseUnavailable(_UNAVAILABLE)
        return RelayStoreError(f"The relay database failed ({_reason(exc, self.target)}).")

    # -- reads and commands --------------------------------------------------------------------

    async def _run(self, fn: Callable[[Any], Awaitable[T]], *, notify: bool = False) -> T:
        if time.monotonic() < self._down_until:
            raise DatabaseUnavailable(_UNAVAILABLE)
        try:
            async with _acquire(self._pool) as conn:
                if not notify:
                    return await fn(conn)
                async with conn.transaction():
                    result = await fn(conn)
                    await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, NOTIFY_CHANNELS)
                return result
        except ChannelError:
            raise
        except Exception as exc:
            raise self._failure(exc) from None

    async def channels(self, *, counts: bool = True) -> list[Channel]:
        sql = (_CHANNEL_SELECT if counts else _CHANNEL_SELECT_LIGHT) + " ORDER BY c.name"
        rows = await self._run(lambda conn: conn.fetch(sql))
        return [_channel(r) for r in rows]

    async def channel_by_name(self, name: str) -> Channel | None:
        row = await self._run(
            lambda conn: conn.fetchrow(_CHANNEL_SELECT + " WHERE c.name=$1", name)
        )
        return _channel(row) if row else None

    async def slug_exists(self, slug: str) -> bool:
        row = await self._run(
            lambda conn: conn.fetchval("SELECT 1 FROM channels WHERE slug=$1", slug)
        )
        return row is not None

    async def channel_for_token(self, token: str) -> Channel | None:
        digest = token_hash(token)
        row = await self._run(
            lambda conn: conn.fetchrow(
                _CHANNEL_SELECT_LIGHT
                + " JOIN tokens t ON t.channel_id = c.id"
                + " WHERE t.hash = $1 AND t.revoked_at_ms IS NULL",
                digest,
            )
        )
        return _channel(row) if row else None

    async def read_after(
        self, channel_id: int, after: int, limit: int, max_bytes: int
    ) -> list[tuple[int, bytes]]:
        rows = await self._run(
            lambda conn: conn.fetch(_READ_AFTER, channel_id, after, limit, max_bytes)
        )
        return [(int(r[0]), bytes(r[1])) for r in rows]

    async def head(self, channel_id: int) -> int:
        value = await self._run(
            lambda conn: conn.fetchval("SELECT last_cursor FROM channels WHERE id=$1", channel_id)
        )
        return int(value or 0)

    async def rejected(self, channel_id: int, limit: int = 50) -> list[dict[str, Any]]:
        rows = await self._run(
            lambda conn: conn.fetch(
                "SELECT received_at_ms, status, reason, webhook_id, source FROM rejected "
                "WHERE channel_id=$1 ORDER BY id DESC LIMIT $2",
                channel_id,
                limit,
            )
        )
        keys = ("received_at_ms", "status", "reason", "webhook_id", "source")
        return [dict(zip(keys, tuple(r), strict=True)) for r in rows]

    async def add_channel(
        self, name: str, *, secret: str | None = None, quota_bytes: int = DEFAULT_QUOTA_BYTES
    ) -> IssuedChannel:
        check_name(name)
        token = new_token()
        exists = ChannelError(
            f"A channel named {name!r} exists; issue another token with "
            f"'relay channel token {name}' or pick another name."
        )

        async def add(conn: Any) -> None:
            if await conn.fetchval("SELECT 1 FROM channels WHERE name=$1", name):
                raise exists
            try:
                channel_id = await conn.fetchval(
                    "INSERT INTO channels(name, slug, secret, quota_bytes, created_at_ms) "
                    "VALUES ($1, $2, $3, $4, $5) RETURNING id",
                    name,
                    new_slug(),
                    secret,
                    quota_bytes,
                    now_ms(),
                )
            except asyncpg.UniqueViolationError:
                raise exists from None
            await _insert_token(conn, int(channel_id), token)

        await self._run(add, notify=True)
        channel = await self.channel_by_name(name)
        assert channel is not None
        return IssuedChannel(channel, token)

    async def issue_token(self, name: str) -> IssuedChannel:
        channel = await self._require(name)
        token = new_token()
        await self._run(lambda conn: _insert_token(conn, channel.id, token), notify=True)
        return IssuedChannel(await self._require(name), token)

    async def _require(self, name: str) -> Channel:
        channel = await self.channel_by_name(name)
        if channel is None:
            raise ChannelError(
                f"No channel named {name!r}; 'walletpass-tui relay channel list' shows them."
            )
        return channel

    async def revoke(self, name_or_token: str) -> int:
        stamp = now_ms()
        channel = await self.channel_by_name(name_or_token)
        if channel is not None:
            sql = "UPDATE tokens SET revoked_at_ms=$1 WHERE channel_id=$2 AND revoked_at_ms IS NULL"
            params: tuple[Any, ...] = (stamp, channel.id)
        else:
            sql = "UPDATE tokens SET revoked_at_ms=$1 WHERE hash=$2 AND revoked_at_ms IS NULL"
            params = (stamp, token_hash(name_or_token))
        status = await self._run(lambda conn: conn.execute(sql, *params), notify=True)
        count = int(str(status).rsplit(" ", 1)[-1] or 0)
        if count == 0 and channel is None:
            raise ChannelError(
                "No channel by that name and no live token like that; "
                "'walletpass-tui relay channel list' shows the channels."
            )
        return count

    async def remove(self, name: str) -> Channel:
        channel = await self._require(name)
        await self._run(
            lambda conn: conn.execute("DELETE FROM channels WHERE id=$1", channel.id), notify=True
        )
        return channel

    async def get_meta(self, key: str) -> str | None:
        value = await self._run(
            lambda conn: conn.fetchval("SELECT value FROM meta WHERE key=$1", key)
        )
        return None if value is None else str(value)

    async def set_meta(self, key: str, value: str) -> None:
        await self._run(
            lambda conn: conn.execute(
                "INSERT INTO meta(key, value) VALUES ($1, $2) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                key,
                value,
            )
        )

    # -- retention -----------------------------------------------------------------------------

    async def prune(self, cutoff_ms: int) -> int | None:
        """Delete what was received before ``cutoff_ms``, one channel per transaction; None when
        another relay process holds the pruning lock."""

        async def prune(conn: Any) -> int | None:
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", PRUNE_LOCK):
                return None
            try:
                removed = 0
                for row in await conn.fetch("SELECT id FROM channels ORDER BY id"):
                    removed += await _prune_channel(conn, int(row[0]), cutoff_ms)
                if removed:
                    await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, NOTIFY_CHANNELS)
                return removed
            finally:
                with suppressed(log, "relay: releasing the pruning lock"):
                    await conn.execute("SELECT pg_advisory_unlock($1)", PRUNE_LOCK)

        return await self._run(prune)


async def _prune_channel(conn: Any, channel_id: int, cutoff_ms: int) -> int:
    async with conn.transaction():
        # The channel's row first, as the writer takes it: no cycle of waits with ingress.
        if (
            await conn.fetchval(
                "SELECT id FROM channels WHERE id=$1 FOR UPDATE",
                channel_id,
                timeout=PRUNE_TIMEOUT_S,
            )
            is None
        ):
            return 0
        count, size = await conn.fetchrow(
            "WITH gone AS (DELETE FROM deliveries WHERE channel_id=$1 AND received_at_ms < $2 "
            "RETURNING size) SELECT COUNT(*), COALESCE(SUM(size), 0) FROM gone",
            channel_id,
            cutoff_ms,
            timeout=PRUNE_TIMEOUT_S,
        )
        if count:
            await conn.execute(
                "UPDATE channels SET used_bytes = GREATEST(0, used_bytes - $2) WHERE id=$1",
                channel_id,
                int(size),
            )
        await conn.execute(
            "DELETE FROM rejected WHERE channel_id=$1 AND received_at_ms < $2",
            channel_id,
            cutoff_ms,
            timeout=PRUNE_TIMEOUT_S,
        )
    return int(count)


async def _insert_token(conn: Any, channel_id: int, token: str) -> None:
    await conn.execute(
        "INSERT INTO tokens(channel_id, hash, hint, created_at_ms) VALUES ($1, $2, $3, $4)",
        channel_id,
        token_hash(token),
        token[-4:],
        now_ms(),
    )


class PoolBusy(RelayStoreError):
    """Every pooled connection stayed in use for ``ACQUIRE_TIMEOUT_S``: this process is busy,
    the database is not (for that) unavailable."""


@contextlib.asynccontextmanager
async def _acquire(pool: Any) -> Any:
    try:
        conn = await pool.acquire(timeout=ACQUIRE_TIMEOUT_S)
    except TimeoutError:
        raise PoolBusy(
            "The relay is busy: no database connection was free; retry shortly."
        ) from None
    try:
        yield conn
    finally:
        await pool.release(conn)


def _fail(batch: list[tuple[Any, asyncio.Future[Any]]], error: Exception) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(error)


async def _close_pool(pool: Any) -> None:
    try:
        await asyncio.wait_for(pool.close(), 5)
    except Exception as exc:
        log.debug("relay: the pool did not close (%s): terminated", type(exc).__name__)
        pool.terminate()


def _reason(exc: BaseException, target: DatabaseTarget) -> str:
    """Why, in a few words, with nothing of the URL's secret in it."""
    text = str(exc).strip() or type(exc).__name__
    url = target.url or ""
    if url:
        text = text.replace(url, target.display)
    for secret in database_url_secrets(url):
        text = text.replace(secret, "…")
    return text.splitlines()[0][:200]
