"""The relay's PostgreSQL schema, created and upgraded by the relay itself.

``MIGRATIONS[n - 1]`` brings a database from version ``n - 1`` to ``n``; ``schema_version`` records
each one applied. ``migrate`` runs in one transaction under a transaction-level advisory lock, so
relay processes starting at once on an empty database create it once: the others wait for the
lock, then find it done.

Cursors are per channel: ``channels.last_cursor`` is raised in the same transaction that inserts
the deliveries, and that row's lock is held until COMMIT, so two transactions of one channel
commit in the order of their cursors: a later cursor is never visible before an earlier one.
"""

from __future__ import annotations

from typing import Any

from walletpass_tui.relay.server.storage.errors import RelayStoreError

# pg_advisory locks are keyed by one bigint; these spell "wpr-migr" and "wpr-prun".
MIGRATE_LOCK = 0x7770722D6D696772
PRUNE_LOCK = 0x7770722D7072756E
# The database's clock in milliseconds: received times are stamped with it, and pruning goes by it.
DATABASE_NOW_MS = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
NOTIFY_CHANNEL = "walletpass_relay"
# The notices sent on it: "d CHANNEL FIRST LAST USED" after deliveries were stored, "c" after a
# channel, a token or a quota changed.
NOTIFY_DELIVERIES = "d"
NOTIFY_CHANNELS = "c"

MIGRATIONS: list[str] = [
    """
    CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE channels (
        id bigserial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        slug text NOT NULL UNIQUE,
        secret text,
        quota_bytes bigint NOT NULL,
        used_bytes bigint NOT NULL DEFAULT 0,
        last_cursor bigint NOT NULL DEFAULT 0,
        created_at_ms bigint NOT NULL
    );
    CREATE TABLE tokens (
        id bigserial PRIMARY KEY,
        channel_id bigint NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
        hash text NOT NULL UNIQUE,
        hint text NOT NULL,
        created_at_ms bigint NOT NULL,
        revoked_at_ms bigint
    );
    CREATE INDEX tokens_by_channel ON tokens (channel_id);
    CREATE TABLE deliveries (
        channel_id bigint NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
        cursor bigint NOT NULL,
        received_at_ms bigint NOT NULL,
        webhook_id text,
        size integer NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (channel_id, cursor)
    );
    CREATE INDEX deliveries_by_time ON deliveries (received_at_ms);
    CREATE TABLE rejected (
        id bigserial PRIMARY KEY,
        channel_id bigint NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
        received_at_ms bigint NOT NULL,
        status integer NOT NULL,
        reason text NOT NULL,
        webhook_id text,
        source text,
        headers text NOT NULL,
        body bytea NOT NULL
    );
    CREATE INDEX rejected_by_channel ON rejected (channel_id, id);
    CREATE INDEX rejected_by_time ON rejected (received_at_ms);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


class NewerSchema(RelayStoreError):
    """The database was written by a newer relay (``open`` says which database)."""

    def __init__(self, version: int) -> None:
        super().__init__(
            f"The relay database was written by a newer walletpass-tui (schema {version}, this "
            f"one knows {SCHEMA_VERSION}); upgrade it."
        )
        self.version = version


async def migrate(conn: Any) -> tuple[int, int]:
    """Bring the database to ``SCHEMA_VERSION``; (version before, version after). Raises
    ``NewerSchema`` when a newer relay wrote it (nothing is changed then)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATE_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version integer PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        before = int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_version"))
        if before > SCHEMA_VERSION:
            raise NewerSchema(before)
        for version in range(before + 1, SCHEMA_VERSION + 1):
            await conn.execute(MIGRATIONS[version - 1])
            await conn.execute("INSERT INTO schema_version(version) VALUES ($1)", version)
    return before, SCHEMA_VERSION
