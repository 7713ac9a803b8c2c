"""Reads, the channel commands and pruning on the PostgreSQL relay, each on a pooled connection.

A change to channels or tokens sends a notice in its own transaction, so every relay process
refreshes what it keeps of them. Pruning runs in one process at a time (``pg_try_advisory_lock``),
one channel per transaction, taking the channel's row first as the writer does.
"""

from __future__ import annotations

import logging
from typing import Any

import asyncpg

from walletpass_tui.logs import suppressed
from walletpass_tui.relay.server.channels import (
    DEFAULT_QUOTA_BYTES,
    Channel,
    ChannelError,
    check_name,
    check_secret,
    new_slug,
    new_token,
    token_hash,
)
from walletpass_tui.relay.server.storage.base import IssuedChannel, now_ms
from walletpass_tui.relay.server.storage.postgres.pool import Database
from walletpass_tui.relay.server.storage.postgres.schema import (
    DATABASE_NOW_MS,
    NOTIFY_CHANNEL,
    NOTIFY_CHANNELS,
    PRUNE_LOCK,
)

log = logging.getLogger(__name__)

PRUNE_TIMEOUT_S = 300.0

_CHANNEL_COLUMNS = "c.id, c.name, c.slug, c.created_at_ms, c.secret, c.quota_bytes, c.used_bytes"
_CHANNEL_SELECT = f"""
SELECT {_CHANNEL_COLUMNS},
       (SELECT COUNT(*) FROM deliveries d WHERE d.channel_id = c.id),
       (SELECT COUNT(*) FROM rejected r WHERE r.channel_id = c.id),
       (SELECT COUNT(*) FROM tokens t WHERE t.channel_id = c.id AND t.revoked_at_ms IS NULL)
FROM channels c
"""
_CHANNEL_SELECT_LIGHT = f"SELECT {_CHANNEL_COLUMNS}, 0, 0, 0 FROM channels c"

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


class PostgresQueries:
    """What a ``relay channel`` command and a serving relay read and change."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def channels(self, *, counts: bool = True) -> list[Channel]:
        sql = (_CHANNEL_SELECT if counts else _CHANNEL_SELECT_LIGHT) + " ORDER BY c.name"
        rows = await self._db.run(lambda conn: conn.fetch(sql))
        return [_channel(r) for r in rows]

    async def channel_by_name(self, name: str) -> Channel | None:
        row = await self._db.run(
            lambda conn: conn.fetchrow(_CHANNEL_SELECT + " WHERE c.name=$1", name)
        )
        return _channel(row) if row else None

    async def slug_exists(self, slug: str) -> bool:
        row = await self._db.run(
            lambda conn: conn.fetchval("SELECT 1 FROM channels WHERE slug=$1", slug)
        )
        return row is not None

    async def channel_for_token(self, token: str) -> Channel | None:
        digest = token_hash(token)
        row = await self._db.run(
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
        rows = await self._db.run(
            lambda conn: conn.fetch(_READ_AFTER, channel_id, after, limit, max_bytes)
        )
        return [(int(r[0]), bytes(r[1])) for r in rows]

    async def head(self, channel_id: int) -> int:
        value = await self._db.run(
            lambda conn: conn.fetchval("SELECT last_cursor FROM channels WHERE id=$1", channel_id)
        )
        return int(value or 0)

    async def count_after(self, channel_id: int, after: int, limit: int) -> int:
        value = await self._db.run(
            lambda conn: conn.fetchval(
                "SELECT COUNT(*) FROM (SELECT 1 FROM deliveries WHERE channel_id=$1 AND "
                "cursor>$2 LIMIT $3) waiting",
                channel_id,
                after,
                limit,
            )
        )
        return int(value or 0)

    async def used_bytes(self, channel_id: int) -> int:
        value = await self._db.run(
            lambda conn: conn.fetchval("SELECT used_bytes FROM channels WHERE id=$1", channel_id)
        )
        return int(value or 0)

    async def rejected(self, channel_id: int, limit: int = 50) -> list[dict[str, Any]]:
        rows = await self._db.run(
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
        check_secret(secret)
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

        await self._db.run(add, notify=True)
        channel = await self.channel_by_name(name)
        assert channel is not None
        return IssuedChannel(channel, token)

    async def issue_token(self, name: str) -> IssuedChannel:
        channel = await self._require(name)
        token = new_token()
        await self._db.run(lambda conn: _insert_token(conn, channel.id, token), notify=True)
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
        status = await self._db.run(lambda conn: conn.execute(sql, *params), notify=True)
        count = int(str(status).rsplit(" ", 1)[-1] or 0)
        if count == 0 and channel is None:
            raise ChannelError(
                "No channel by that name and no live token like that; "
                "'walletpass-tui relay channel list' shows the channels."
            )
        return count

    async def remove(self, name: str) -> Channel:
        channel = await self._require(name)
        await self._db.run(
            lambda conn: conn.execute("DELETE FROM channels WHERE id=$1", channel.id), notify=True
        )
        return channel

    async def get_meta(self, key: str) -> str | None:
        value = await self._db.run(
            lambda conn: conn.fetchval("SELECT value FROM meta WHERE key=$1", key)
        )
        return None if value is None else str(value)

    async def set_meta(self, key: str, value: str) -> None:
        await self._db.run(
            lambda conn: conn.execute(
                "INSERT INTO meta(key, value) VALUES ($1, $2) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                key,
                value,
            )
        )

    # -- retention -----------------------------------------------------------------------------

    async def prune(self, older_than_ms: int) -> int | None:
        """Delete what was received more than ``older_than_ms`` ago by the database's clock (the
        one received times are stamped with: an instance whose own clock is off deletes nothing
        fresh), one channel per transaction; None when another relay process holds the pruning
        lock."""

        async def prune(conn: Any) -> int | None:
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", PRUNE_LOCK):
                return None
            try:
                cutoff_ms = int(
                    await conn.fetchval(f"SELECT {DATABASE_NOW_MS} - $1", older_than_ms)
                )
                removed = 0
                for row in await conn.fetch("SELECT id FROM channels ORDER BY id"):
                    removed += await _prune_channel(conn, int(row[0]), cutoff_ms)
                if removed:
                    await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, NOTIFY_CHANNELS)
                return removed
            finally:
                with suppressed(log, "relay: releasing the pruning lock"):
                    await conn.execute("SELECT pg_advisory_unlock($1)", PRUNE_LOCK)

        return await self._db.run(prune)

    async def clock_offset_ms(self) -> int:
        async def offset(conn: Any) -> int:
            before = now_ms()
            database = int(await conn.fetchval(f"SELECT {DATABASE_NOW_MS}"))
            return database - (before + now_ms()) // 2

        return await self._db.run(offset)


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
