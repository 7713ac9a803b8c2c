"""The relay's SQLite database read and changed synchronously: channels, tokens (hashes only),
stored deliveries and bounded rejections, in one file for one relay process.

The server writes deliveries through one ``RelayWriter`` thread (``writer.py``); reads, and the
``relay channel`` commands (which may run while the server does), use their own connection here.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.relay.server.storage.sqlite.schema import connect

PRUNED_HEAD = "pruned_head:"  # + a channel's slug, in meta: the newest cursor pruned from it

_CHANNEL_SELECT = """
SELECT c.id, c.name, c.slug, c.created_at_ms, c.secret, c.quota_bytes, c.used_bytes,
       (SELECT COUNT(*) FROM deliveries d WHERE d.channel_id = c.id),
       (SELECT COUNT(*) FROM rejected r WHERE r.channel_id = c.id),
       (SELECT COUNT(*) FROM tokens t WHERE t.channel_id = c.id AND t.revoked_at_ms IS NULL)
FROM channels c
"""
_CHANNEL_SELECT_LIGHT = """
SELECT c.id, c.name, c.slug, c.created_at_ms, c.secret, c.quota_bytes, c.used_bytes, 0, 0, 0
FROM channels c
"""


def _channel(row: tuple[Any, ...]) -> Channel:
    return Channel(
        id=row[0],
        name=row[1],
        slug=row[2],
        created_at_ms=row[3],
        secret=row[4],
        quota_bytes=row[5],
        used_bytes=row[6],
        deliveries=row[7],
        rejected=row[8],
        tokens=row[9],
    )


class RelayDB:
    """Synchronous access: the channel commands, and the server's reads (on worker threads)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db = connect(self.path)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def prune(self, cutoff_ms: int) -> int:
        """Delete what was received before ``cutoff_ms`` in one transaction (when no writer runs)."""

        def run(db: sqlite3.Connection) -> int:
            db.execute("BEGIN IMMEDIATE")
            try:
                removed = prune_before(cutoff_ms)(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return removed

        return int(self._run(run))

    def _run(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            try:
                return fn(self._db)
            except sqlite3.Error as exc:
                raise RelayStoreError(f"The relay database {self.path} failed ({exc}).") from None

    # -- meta ----------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._run(
            lambda db: db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        )
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._run(
            lambda db: db.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, value),
            )
        )

    # -- channels ------------------------------------------------------------------------------

    def add_channel(
        self, name: str, *, secret: str | None = None, quota_bytes: int = DEFAULT_QUOTA_BYTES
    ) -> IssuedChannel:
        check_name(name)
        check_secret(secret)
        token = new_token()

        def add(db: sqlite3.Connection) -> int:
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("SELECT 1 FROM channels WHERE name=?", (name,)).fetchone():
                    raise ChannelError(
                        f"A channel named {name!r} exists; issue another token with "
                        f"'relay channel token {name}' or pick another name."
                    )
                cur = db.execute(
                    "INSERT INTO channels(name, slug, secret, quota_bytes, created_at_ms) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (name, new_slug(), secret, quota_bytes, now_ms()),
                )
                channel_id = int(cur.lastrowid or 0)
                _insert_token(db, channel_id, token)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return channel_id

        self._run(add)
        channel = self.channel_by_name(name)
        assert channel is not None
        return IssuedChannel(channel, token)

    def issue_token(self, name: str) -> IssuedChannel:
        channel = self._require(name)
        token = new_token()
        self._run(lambda db: _insert_token(db, channel.id, token))
        return IssuedChannel(self._require(name), token)

    def channels(self, *, counts: bool = True) -> list[Channel]:
        sql = (_CHANNEL_SELECT if counts else _CHANNEL_SELECT_LIGHT) + " ORDER BY c.name"
        return [_channel(r) for r in self._run(lambda db: db.execute(sql).fetchall())]

    def channel_by_name(self, name: str) -> Channel | None:
        row = self._run(
            lambda db: db.execute(_CHANNEL_SELECT + " WHERE c.name=?", (name,)).fetchone()
        )
        return _channel(row) if row else None

    def slug_exists(self, slug: str) -> bool:
        row = self._run(
            lambda db: db.execute("SELECT 1 FROM channels WHERE slug=?", (slug,)).fetchone()
        )
        return row is not None

    def _require(self, name: str) -> Channel:
        channel = self.channel_by_name(name)
        if channel is None:
            raise ChannelError(
                f"No channel named {name!r}; 'walletpass-tui relay channel list' shows them."
            )
        return channel

    def channel_for_token(self, token: str) -> Channel | None:
        """The channel a live (not revoked) token opens, or None; looked up by its hash."""
        digest = token_hash(token)
        row = self._run(
            lambda db: db.execute(
                _CHANNEL_SELECT_LIGHT
                + " JOIN tokens t ON t.channel_id = c.id"
                + " WHERE t.hash = ? AND t.revoked_at_ms IS NULL",
                (digest,),
            ).fetchone()
        )
        return _channel(row) if row else None

    def revoke(self, name_or_token: str) -> int:
        """Revoke one token (given in full) or every token of a channel (by name); how many."""
        stamp = now_ms()
        params: tuple[int | str, ...]
        if self.channel_by_name(name_or_token) is not None:
            channel = self._require(name_or_token)
            sql, params = (
                "UPDATE tokens SET revoked_at_ms=? WHERE channel_id=? AND revoked_at_ms IS NULL",
                (stamp, channel.id),
            )
        else:
            sql, params = (
                "UPDATE tokens SET revoked_at_ms=? WHERE hash=? AND revoked_at_ms IS NULL",
                (stamp, token_hash(name_or_token)),
            )
        count = int(self._run(lambda db: db.execute(sql, params).rowcount))
        if count == 0 and self.channel_by_name(name_or_token) is None:
            raise ChannelError(
                "No channel by that name and no live token like that; "
                "'walletpass-tui relay channel list' shows the channels."
            )
        return count

    def remove(self, name: str) -> Channel:
        """Delete a channel with its tokens and everything stored for it."""
        channel = self._require(name)

        def remove(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM channels WHERE id=?", (channel.id,))
            db.execute("DELETE FROM meta WHERE key=?", (PRUNED_HEAD + channel.slug,))

        self._run(remove)
        return channel

    # -- deliveries ----------------------------------------------------------------------------

    def read_after(
        self, channel_id: int, after: int, limit: int, max_bytes: int
    ) -> list[tuple[int, bytes]]:
        """Up to ``limit`` deliveries after the cursor, stopping once ``max_bytes`` are read
        (at least one): rows are stepped through one at a time, never fetched all at once."""

        def read(db: sqlite3.Connection) -> list[tuple[int, bytes]]:
            rows: list[tuple[int, bytes]] = []
            total = 0
            for cursor, data in db.execute(
                "SELECT cursor, data FROM deliveries WHERE channel_id=? AND cursor>? "
                "ORDER BY cursor LIMIT ?",
                (channel_id, after, limit),
            ):
                rows.append((int(cursor), bytes(data)))
                total += len(data)
                if total >= max_bytes:
                    break
            return rows

        return list(self._run(read))

    def head(self, channel_id: int | None = None) -> int:
        """The highest cursor stored (for one channel, or overall). A channel's counts the ones
        pruned too: its head never goes back because its deliveries grew old (a laptop takes a
        head below its cursor for a database restored from a backup)."""
        if channel_id is None:
            row = self._run(lambda db: db.execute("SELECT MAX(cursor) FROM deliveries").fetchone())
        else:
            row = self._run(
                lambda db: db.execute(
                    "SELECT MAX(COALESCE((SELECT MAX(cursor) FROM deliveries WHERE channel_id=?), 0),"
                    " COALESCE((SELECT CAST(m.value AS INTEGER) FROM meta m JOIN channels c"
                    " ON m.key = ? || c.slug WHERE c.id=?), 0))",
                    (channel_id, PRUNED_HEAD, channel_id),
                ).fetchone()
            )
        return int(row[0] or 0)

    def count_after(self, channel_id: int, after: int, limit: int) -> int:
        row = self._run(
            lambda db: db.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM deliveries WHERE channel_id=? AND cursor>? "
                "LIMIT ?)",
                (channel_id, after, limit),
            ).fetchone()
        )
        return int(row[0])

    def used_bytes(self, channel_id: int) -> int:
        row = self._run(
            lambda db: db.execute(
                "SELECT used_bytes FROM channels WHERE id=?", (channel_id,)
            ).fetchone()
        )
        return int(row[0]) if row else 0

    def rejected(self, channel_id: int, limit: int = 50) -> list[dict[str, Any]]:
        rows = self._run(
            lambda db: db.execute(
                "SELECT received_at_ms, status, reason, webhook_id, source FROM rejected "
                "WHERE channel_id=? ORDER BY id DESC LIMIT ?",
                (channel_id, limit),
            ).fetchall()
        )
        keys = ("received_at_ms", "status", "reason", "webhook_id", "source")
        return [dict(zip(keys, r, strict=True)) for r in rows]


def _insert_token(db: sqlite3.Connection, channel_id: int, token: str) -> None:
    db.execute(
        "INSERT INTO tokens(channel_id, hash, hint, created_at_ms) VALUES (?, ?, ?, ?)",
        (channel_id, token_hash(token), token[-4:], now_ms()),
    )


def prune_before(cutoff_ms: int) -> Callable[[sqlite3.Connection], int]:
    """A writer job: delete deliveries received before ``cutoff_ms``, give back their quota."""

    def prune(db: sqlite3.Connection) -> int:
        freed = db.execute(
            "SELECT channel_id, SUM(size), COUNT(*), MAX(cursor) FROM deliveries "
            "WHERE received_at_ms < ? GROUP BY channel_id",
            (cutoff_ms,),
        ).fetchall()
        for channel_id, size, _, newest in freed:
            db.execute(
                "UPDATE channels SET used_bytes = MAX(0, used_bytes - ?) WHERE id=?",
                (size, channel_id),
            )
            # The channel's head stays where it was once its newest deliveries are pruned.
            db.execute(
                "INSERT INTO meta (key, value) SELECT ? || slug, ? FROM channels WHERE id=? "
                "ON CONFLICT(key) DO UPDATE SET value = CAST(MAX(CAST(value AS INTEGER), "
                "CAST(excluded.value AS INTEGER)) AS TEXT)",
                (PRUNED_HEAD, str(newest), channel_id),
            )
        db.execute("DELETE FROM deliveries WHERE received_at_ms < ?", (cutoff_ms,))
        db.execute("DELETE FROM rejected WHERE received_at_ms < ?", (cutoff_ms,))
        return sum(int(n) for _, _, n, _ in freed)

    return prune
