"""``RelayStorage`` on one SQLite file: the synchronous ``RelayDB`` on a thread of its own
(``sqlite_thread.SqliteThread``) for reads and channel commands, and the ``RelayWriter``'s
connection, on another, for everything written while serving.

One relay process per file: cursors are the file's AUTOINCREMENT key (increasing per channel,
shared by all channels, so not consecutive within one), and nothing but this process writes
deliveries, so what it commits is everything there is to fan out.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from walletpass_tui.relay.server.channels import DEFAULT_QUOTA_BYTES, Channel
from walletpass_tui.relay.server.storage.base import IssuedChannel, StorageEvents, now_ms
from walletpass_tui.relay.server.storage.sqlite.database import RelayDB, prune_before
from walletpass_tui.relay.server.storage.sqlite.writer import Job, RelayWriter
from walletpass_tui.relay.server.storage.target import DatabaseTarget
from walletpass_tui.sqlite_thread import SqliteThread


class SqliteStorage:
    dense_cursors = False
    shared = False

    def __init__(self, target: DatabaseTarget, thread: SqliteThread, db: RelayDB) -> None:
        assert target.path is not None
        self.target = target
        self.path = target.path
        self._thread = thread  # reads and channel commands, one at a time, in order
        self.db = db
        self.writer: RelayWriter | None = None

    @classmethod
    async def open(cls, target: DatabaseTarget) -> SqliteStorage:
        """Open (creating) the file on a thread of its own; RelayStoreError when it cannot."""
        thread = SqliteThread("relay-reads")
        try:
            db = await thread.run(RelayDB, target.path)
        except BaseException:
            thread.close()
            raise
        return cls(target, thread, db)

    @property
    def reachable(self) -> bool:
        return True  # a local file: its failures are each operation's own

    async def serve(self, events: StorageEvents) -> None:
        self.writer = await RelayWriter.open(self.path, events.on_commit)

    def submit(self, job: Job) -> asyncio.Future[Any]:
        assert self.writer is not None, "serve() starts the writer"
        return self.writer.submit(job)

    async def prune(self, older_than_ms: int) -> int | None:
        # A file on this machine: received times are stamped with this machine's clock.
        cutoff_ms = now_ms() - older_than_ms
        if self.writer is None:
            return await self._thread.run(self.db.prune, cutoff_ms)
        return int(await self.writer.submit(prune_before(cutoff_ms)))

    async def clock_offset_ms(self) -> int:
        return 0  # one machine, one clock

    async def close(self) -> None:
        if self.writer is not None:
            writer, self.writer = self.writer, None
            await writer.close()
        try:
            await self._thread.run(self.db.close)
        finally:
            self._thread.close()

    async def channels(self, *, counts: bool = True) -> list[Channel]:
        return await self._thread.run(partial(self.db.channels, counts=counts))

    async def channel_by_name(self, name: str) -> Channel | None:
        return await self._thread.run(self.db.channel_by_name, name)

    async def slug_exists(self, slug: str) -> bool:
        return await self._thread.run(self.db.slug_exists, slug)

    async def channel_for_token(self, token: str) -> Channel | None:
        return await self._thread.run(self.db.channel_for_token, token)

    async def read_after(
        self, channel_id: int, after: int, limit: int, max_bytes: int
    ) -> list[tuple[int, bytes]]:
        return await self._thread.run(self.db.read_after, channel_id, after, limit, max_bytes)

    async def head(self, channel_id: int) -> int:
        return await self._thread.run(self.db.head, channel_id)

    async def count_after(self, channel_id: int, after: int, limit: int) -> int:
        return await self._thread.run(self.db.count_after, channel_id, after, limit)

    async def used_bytes(self, channel_id: int) -> int:
        return await self._thread.run(self.db.used_bytes, channel_id)

    async def rejected(self, channel_id: int, limit: int = 50) -> list[dict[str, Any]]:
        return await self._thread.run(self.db.rejected, channel_id, limit)

    async def add_channel(
        self, name: str, *, secret: str | None = None, quota_bytes: int = DEFAULT_QUOTA_BYTES
    ) -> IssuedChannel:
        return await self._thread.run(
            partial(self.db.add_channel, name, secret=secret, quota_bytes=quota_bytes)
        )

    async def issue_token(self, name: str) -> IssuedChannel:
        return await self._thread.run(self.db.issue_token, name)

    async def revoke(self, name_or_token: str) -> int:
        return await self._thread.run(self.db.revoke, name_or_token)

    async def remove(self, name: str) -> Channel:
        return await self._thread.run(self.db.remove, name)

    async def get_meta(self, key: str) -> str | None:
        return await self._thread.run(self.db.get_meta, key)

    async def set_meta(self, key: str, value: str) -> None:
        await self._thread.run(self.db.set_meta, key, value)
