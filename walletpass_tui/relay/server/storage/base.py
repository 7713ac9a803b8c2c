"""What every relay database offers: the notices it gives the fan-out, and the ``RelayStorage``
protocol.

Ingress, fan-out, subscribers, pruning and the ``relay channel`` commands use a storage only
through this protocol, the records it writes (``records.py``) and its errors (``errors.py``);
``sqlite/`` (one process, one file) and ``postgres/`` (any number of processes on one database)
implement it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol

from walletpass_tui.relay.server.channels import DEFAULT_QUOTA_BYTES, Channel
from walletpass_tui.relay.server.storage.records import NewDelivery, NewRejection, Stored
from walletpass_tui.relay.server.storage.target import DatabaseTarget


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class IssuedChannel:
    channel: Channel
    token: str  # shown once, never stored


@dataclass(frozen=True)
class Committed:
    """A notice that some relay process committed deliveries of one channel, cursors ``first``
    to ``last``. A hint to read the database, never numbers to believe: any role that can
    connect to the database can send one. What is announced and streamed comes from the rows;
    the numbers only tell a process its own commit, and that a notice claims nothing past what
    it has read already."""

    channel_id: int
    first: int
    last: int


class StorageEvents(Protocol):
    """What a serving storage tells the fan-out, on the event loop."""

    def on_commit(self, stored: list[Stored]) -> None:
        """Deliveries this process committed, in commit order."""

    def on_committed(self, committed: Committed) -> None:
        """A notice of deliveries committed by another process on the same database: read it."""

    def on_channels_changed(self) -> None:
        """A channel, a token or a quota changed (``relay channel`` ran somewhere)."""

    def on_database(self, reachable: bool) -> None:
        """The database was lost, or is back (then what was missed must be read again)."""


class RelayStorage(Protocol):
    """A relay database: reads, channel commands, the writer and pruning."""

    target: DatabaseTarget
    #: Cursors of a channel are consecutive (1, 2, 3...) and shared by every process on the
    #: database, so a gap in what a process has seen means it must read the database.
    dense_cursors: bool
    #: Other processes write to the database too, and changes to channels and tokens are heard
    #: (``on_channels_changed``), so what was read of them may be kept until then.
    shared: bool

    @property
    def reachable(self) -> bool: ...

    # -- serving -------------------------------------------------------------------------------

    async def serve(self, events: StorageEvents) -> None:
        """Start the writer (and, where other processes write too, hearing of their commits)."""

    def submit(self, job: NewDelivery | NewRejection) -> asyncio.Future[Any]:
        """Write ``job``; the future resolves only after COMMIT (``Stored`` for a delivery)."""
        ...

    async def prune(self, older_than_ms: int) -> int | None:
        """Delete what was received more than ``older_than_ms`` ago by the clock received times
        are stamped with (the database's); how many deliveries went, or None when another
        process is pruning now."""

    async def clock_offset_ms(self) -> int:
        """How far the database's clock (the one received times and pruning go by) is ahead of
        this process's (negative: behind); 0 where they are one clock."""

    async def close(self) -> None:
        """Commit what is queued, then let go of the database."""

    # -- reads ---------------------------------------------------------------------------------

    async def channels(self, *, counts: bool = True) -> list[Channel]: ...

    async def channel_by_name(self, name: str) -> Channel | None: ...

    async def slug_exists(self, slug: str) -> bool: ...

    async def channel_for_token(self, token: str) -> Channel | None: ...

    async def read_after(
        self, channel_id: int, after: int, limit: int, max_bytes: int
    ) -> list[tuple[int, bytes]]: ...

    async def head(self, channel_id: int) -> int: ...

    async def count_after(self, channel_id: int, after: int, limit: int) -> int:
        """How many deliveries are stored after the cursor, counting at most ``limit``."""
        ...

    async def used_bytes(self, channel_id: int) -> int:
        """What the channel's stored deliveries take, as every process has counted them."""
        ...

    async def rejected(self, channel_id: int, limit: int = 50) -> list[dict[str, Any]]: ...

    # -- channels and settings -----------------------------------------------------------------

    async def add_channel(
        self, name: str, *, secret: str | None = None, quota_bytes: int = DEFAULT_QUOTA_BYTES
    ) -> IssuedChannel: ...

    async def issue_token(self, name: str) -> IssuedChannel: ...

    async def revoke(self, name_or_token: str) -> int: ...

    async def remove(self, name: str) -> Channel: ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...
