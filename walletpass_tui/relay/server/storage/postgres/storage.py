"""``RelayStorage`` on PostgreSQL: any number of relay processes on one database.

Made of the pool (``pool.py``: connections, failing fast while the database is away), the
group-commit writer (``writer.py``: cursors per channel in commit order), the listener
(``listener.py``: the other processes' commits and channel changes, the database lost and back)
and the reads and channel commands (``queries.py``). The URL's password is never shown: errors
name the database by ``DatabaseTarget.display``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from walletpass_tui.logs import suppressed
from walletpass_tui.relay.server.storage.base import StorageEvents
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.relay.server.storage.postgres.listener import Listener
from walletpass_tui.relay.server.storage.postgres.pool import CONNECT_TIMEOUT_S, Database
from walletpass_tui.relay.server.storage.postgres.queries import PostgresQueries
from walletpass_tui.relay.server.storage.postgres.writer import Job, PostgresWriter
from walletpass_tui.relay.server.storage.target import DatabaseTarget

log = logging.getLogger(__name__)


class PostgresStorage(PostgresQueries):
    dense_cursors = True
    shared = True  # other processes write too; changes are heard (on_channels_changed)

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.target = db.target
        self.writer: PostgresWriter | None = None
        self.listener: Listener | None = None
        self._listening: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls, target: DatabaseTarget, *, serving: bool = True, wait_s: float = 0.0
    ) -> PostgresStorage:
        """Connect (retrying for ``wait_s`` while the server does not answer) and migrate."""
        return cls(await Database.open(target, serving=serving, wait_s=wait_s))

    @property
    def reachable(self) -> bool:
        return self.listener is None or self.listener.reachable

    async def serve(self, events: StorageEvents) -> None:
        self.writer = writer = PostgresWriter(self._db, events)
        writer.start()
        self.listener = listener = Listener(
            self._db,
            on_deliveries=writer.heard,
            on_channels=events.on_channels_changed,
            on_database=events.on_database,
        )
        self._listening = asyncio.create_task(listener.run(), name="relay-pg-listener")
        # The first LISTEN is in place before the relay accepts anything, so no commit that a
        # subscriber of this process could wait for goes unheard.
        done, _ = await asyncio.wait(
            {listener.listening, self._listening},
            timeout=CONNECT_TIMEOUT_S,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if not done:
            log.warning("relay: not yet listening on the database; retrying in the background")

    def submit(self, job: Job) -> asyncio.Future[Any]:
        if self.writer is None:
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            future.set_exception(RelayStoreError("The relay is stopping; nothing more is stored."))
            return future
        return self.writer.submit(job)

    async def close(self) -> None:
        """Commit what is queued, stop listening, close the pool."""
        if self.writer is not None:
            await self.writer.close()
        if self._listening is not None:
            self._listening.cancel()
            with suppressed(log, "relay: ending the database listener", BaseException):
                await self._listening
        await self._db.close()
