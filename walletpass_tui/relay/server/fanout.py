"""What the running relay knows about each channel: the recent events, who waits, the quota used.

No subscriber has a queue. Each one holds only its cursor and asks its channel's ``ChannelFanout``
for what comes after it: recent events come from a ring bounded in count and bytes (each event's
bytes built once and shared by every subscriber), anything older from the database, a small page
at a time.
Either way a page is bounded in bytes (``PAGE_BYTES``, at least one event), and a subscriber lets
go of the rest of its page as soon as its socket is full (``stream.py``). A slow subscriber
therefore costs a cursor, at most one event and a socket buffer, and ingress never waits for it.

The ring holds every stored event with a cursor above its floor, up to its last, with no gap.
On SQLite this process writes everything, in cursor order, so what it commits goes straight in.
On PostgreSQL other processes commit too, and cursors are consecutive per channel: a commit of
this process goes straight in only when it follows the ring's last cursor; anything else (a
notice of another process's commit, a gap) makes the fanout read the database after its last
cursor, once for all its subscribers. A notice is only a hint to look: any role that can connect
to the database can send one, so its numbers are never believed. The head a subscriber is told,
what it is sent and the usage the quota checks all come from rows this process read or wrote.
When the database was lost and is back, every ring is emptied, so every subscriber reads the
database after its own cursor: nothing committed while notices could not arrive is missed.

A database restored from a backup under a running relay numbers new deliveries with cursors it
handed out before. This process sees it when it commits a cursor at or below one it committed
before, or one whose event its ring holds another delivery at, or (another process's commit, on
PostgreSQL) when the row at a notice's first cursor is not the event its ring holds there: the fanout then goes back (``went_back``: the ring
emptied, ``rewound_to`` the cursor before the reused one) and its streams announce that head,
below their laptops' cursors, which resume after it (``subscriber.py``).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import deque
from collections.abc import Iterator

from walletpass_tui.relay.events import sse_event
from walletpass_tui.relay.server.channels import Channel, token_hash
from walletpass_tui.relay.server.storage.base import Committed, RelayStorage
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.relay.server.storage.records import Stored
from walletpass_tui.webhooks.verify import SigningKey, parse_secret

RING_EVENTS = 512
RING_BYTES = 4 * 1024 * 1024
PAGE_EVENTS = 256
PAGE_BYTES = 64 * 1024  # what one subscriber reads at a time: at least one event, about this much
REFRESH_S = 1.0  # how often the channel table is re-read (``relay channel`` runs elsewhere)
TOKEN_TTL_S = 5.0  # a shared database's token checks are kept this long, or until a change
TOKENS_KEPT = 10_000

log = logging.getLogger(__name__)


class UnusableSecret(RelayStoreError):
    """A channel's stored signing secret is not one: nothing posted to it can be verified."""


class ChannelFanout:
    """One channel's live state."""

    def __init__(self, channel: Channel, storage: RelayStorage | None = None) -> None:
        self.channel = channel
        self.storage = storage
        self.dense = bool(storage is not None and storage.dense_cursors)
        self.used_bytes = channel.used_bytes
        self._usage_cursor = 0  # the cursor whose commit ``used_bytes`` was counted at
        self.subscribers = 0
        self.stalled = 0  # subscribers waiting for their peer to read what was sent
        self.head_hint = 0  # the newest cursor this process knows was committed
        # The database went back (a restore): how many times, and the cursor before the first
        # one it handed out again, the last time. Streams compare ``rewinds`` with theirs.
        self.rewinds = 0
        self.rewound_to = 0
        self._checking: asyncio.Task[None] | None = None
        self._own_last = 0  # the newest cursor this process committed
        self._ring: deque[tuple[int, bytes]] = deque()
        self._ring_cursors: deque[int] = deque()
        self._ring_bytes = 0
        # The ring holds every event with a cursor above ``_floor``; None until the first event.
        self._floor: int | None = None
        self._last: int | None = None  # the ring's newest cursor (kept when the ring is trimmed)
        self._generation = 0
        self._reading: asyncio.Task[None] | None = None
        self._look_again = False  # a notice came while the database was being read
        self._changed: asyncio.Future[None] | None = None
        self._key: SigningKey | None = None
        self._key_secret: str | None = None
        self._key_problem: str | None = None

    @property
    def key(self) -> SigningKey | None:
        """The edge-verification key, parsed once per secret. ``UnusableSecret`` when the
        stored secret is not a signing secret: said once in the log, for each such secret."""
        secret = self.channel.secret
        if not secret:
            return None
        if secret != self._key_secret:
            self._key_secret = secret
            self._key = None
            self._key_problem = self.channel.secret_problem
            if self._key_problem is None:
                self._key = SigningKey(key=parse_secret(secret), label=self.channel.name)
            else:
                log.warning(
                    "relay: channel %s cannot verify what is posted to it: its stored signing "
                    "secret is not one (%s). Posts to it are answered 503 until the secret is "
                    "replaced in the database or the channel is removed.",
                    self.channel.shown_name,
                    self._key_problem,
                )
        if self._key_problem is not None:
            raise UnusableSecret(self._key_problem)
        return self._key

    @property
    def over_quota(self) -> bool:
        return self.used_bytes >= self.channel.quota_bytes

    @property
    def changed(self) -> asyncio.Future[None]:
        """Done when events arrive after this moment: take it before reading, then wait on it
        with ``asyncio.wait`` (never cancel it: every subscriber of the channel shares it, so a
        wake-up costs one future, not a task per subscriber)."""
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def _usage(self, cursor: int, used_bytes: int) -> None:
        if cursor >= self._usage_cursor:
            self._usage_cursor = cursor
            self.used_bytes = used_bytes

    def append(self, stored: Stored) -> None:
        """A delivery this process committed."""
        self._usage(stored.cursor, stored.used_bytes)
        # This process's own commits of a channel only ever take higher cursors, and the ring
        # holds what was committed at its cursors: either one broken, the database went back.
        if stored.cursor <= self._own_last or self._differs(stored.cursor, stored.data):
            self.went_back(stored.cursor - 1)
        self._own_last = stored.cursor
        self.head_hint = max(self.head_hint, stored.cursor)
        if self.dense and self._last is not None and stored.cursor != self._last + 1:
            if stored.cursor > self._last:
                self._read_on()  # another process committed between: read the database
            return
        self._push(stored.cursor, stored.data)

    def committed(self, committed: Committed) -> None:
        """A notice that another process committed deliveries: read the database after the
        ring's last cursor, unless the notice claims nothing past it (then there is nothing to
        read, whoever sent it). Nothing else of it is believed."""
        if self._last is not None and committed.last <= self._last:
            self._check_reused(committed.first)
            return
        if self._last is not None and committed.first <= self._last:
            self._check_reused(committed.first)
        self._read_on()

    def went_back(self, head: int) -> None:
        """The database handed out cursors after ``head`` again (restored from a backup): the
        ring is emptied and the streams told, so their laptops resume after ``head``."""
        log.warning(
            "relay: channel %s's cursors went back to %d (was the database restored from a "
            "backup?); its subscribers resume after it",
            self.channel.shown_name,
            head,
        )
        self.reset()
        self.head_hint = head
        self.rewinds += 1
        self.rewound_to = head
        self.wake()

    def _check_reused(self, cursor: int) -> None:
        """A notice names a cursor the ring holds: read that row (one check at a time; a notice
        is only a hint) and go back when it is not the event the ring holds there."""
        held = self._held(cursor)
        if self.storage is None or held is None:
            return
        if self._checking is not None and not self._checking.done():
            return
        self._checking = asyncio.get_running_loop().create_task(
            self._compare(cursor, held, self._generation), name="relay-fanout-check"
        )

    def _differs(self, cursor: int, data: bytes) -> bool:
        """The ring holds another event at ``cursor`` than the delivery ``data``."""
        held = self._held(cursor)
        return held is not None and held != sse_event(cursor, data)

    def _held(self, cursor: int) -> bytes | None:
        index = bisect.bisect_left(self._ring_cursors, cursor)
        if index < len(self._ring_cursors) and self._ring_cursors[index] == cursor:
            return self._ring[index][1]
        return None

    async def _compare(self, cursor: int, held: bytes, generation: int) -> None:
        assert self.storage is not None
        try:
            rows = await self.storage.read_after(self.channel.id, cursor - 1, 1, PAGE_BYTES)
        except RelayStoreError:  # the database is down: its own line says so; checked next time
            return
        if generation != self._generation or not rows or rows[0][0] != cursor:
            return
        if sse_event(cursor, rows[0][1]) != held and held == self._held(cursor):
            self.went_back(cursor - 1)

    def _push(self, cursor: int, data: bytes, *, after: int | None = None) -> None:
        if self._last is not None and cursor <= self._last:
            return  # already in the ring (read from the database as this process committed it)
        if self._floor is None:
            self._floor = cursor - 1 if after is None else after
        event = sse_event(cursor, data)
        self._ring.append((cursor, event))
        self._ring_cursors.append(cursor)
        self._ring_bytes += len(event)
        self._last = cursor
        self.head_hint = max(self.head_hint, cursor)
        while len(self._ring) > RING_EVENTS or (
            self._ring_bytes > RING_BYTES and len(self._ring) > 1
        ):
            old_cursor, old = self._ring.popleft()
            self._ring_cursors.popleft()
            self._ring_bytes -= len(old)
            self._floor = old_cursor

    def prime(self, head: int) -> None:
        """The database just said ``head`` is the channel's newest cursor: an empty ring holds
        everything after it (nothing), so subscribers there wait for notices instead of reading
        the database at every heartbeat. Only where cursors are consecutive, while listening."""
        if self.dense and self._floor is None:
            self._floor = self._last = head
            self.head_hint = max(self.head_hint, head)

    def reset(self) -> None:
        """Forget the ring: every subscriber reads the database after its own cursor."""
        self._generation += 1
        self._ring.clear()
        self._ring_cursors.clear()
        self._ring_bytes = 0
        self._floor = self._last = None
        if self._reading is not None:
            self._reading.cancel()
            self._reading = None

    def _read_on(self) -> None:
        """Read the database after the ring's last cursor (one task per fanout at a time; a
        notice heard meanwhile makes it read once more)."""
        if self.storage is None:
            return
        if self._reading is not None and not self._reading.done():
            self._look_again = True
            return
        self._reading = asyncio.get_running_loop().create_task(
            self._read_database(self._generation), name="relay-fanout-read"
        )

    async def _read_database(self, generation: int) -> None:
        assert self.storage is not None
        try:
            while generation == self._generation:
                self._look_again = False
                if await self._read_rows(generation) and generation == self._generation:
                    # Another process stored deliveries: what the channel uses now, as the
                    # database counts it (a notice's number is not believed).
                    used = await self.storage.used_bytes(self.channel.id)
                    if generation == self._generation and self._last is not None:
                        self._usage(self._last, used)
                if not self._look_again:  # no notice came meanwhile
                    return
        except RelayStoreError:  # the database is down: subscribers read it themselves later
            if generation == self._generation:
                self.reset()  # the subscribers read the database themselves, when it answers
                self.wake()

    async def _read_rows(self, generation: int) -> bool:
        """Read the database after the ring's last cursor, page by page, into the ring (where
        an empty ring starts: the channel's head); whether anything was learned."""
        assert self.storage is not None
        learned = False
        if self._last is None:
            # Nothing known of the channel yet: the database says where it stands, and every
            # subscriber below that reads it after its own cursor.
            head = await self.storage.head(self.channel.id)
            if generation != self._generation:
                return False
            self.prime(head)
            self.wake()
            learned = True
        while generation == self._generation and self._last is not None:
            after = self._last
            rows = await self.storage.read_after(self.channel.id, after, PAGE_EVENTS, PAGE_BYTES)
            if generation != self._generation:
                return False
            for cursor, data in rows:
                self._push(cursor, data, after=after)
            if rows:
                self.wake()
                learned = True
            full = len(rows) >= PAGE_EVENTS or sum(len(d) for _, d in rows) >= PAGE_BYTES
            if not full:
                break
        return learned

    def wake(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)

    def from_ring(self, after: int) -> list[tuple[int, bytes]] | None:
        """The next page after ``after`` if the ring holds everything after it, else None (read
        the database). The events are the ring's own bytes, not copies."""
        if self._floor is None or after < self._floor:
            return None
        page: list[tuple[int, bytes]] = []
        total = 0
        for i in range(bisect.bisect_right(self._ring_cursors, after), len(self._ring)):
            page.append(self._ring[i])
            total += len(self._ring[i][1])
            if total >= PAGE_BYTES or len(page) >= PAGE_EVENTS:
                break
        return page

    async def read_after(self, storage: RelayStorage, after: int) -> list[tuple[int, bytes]]:
        """The next page of events after the cursor: from the ring, else from the database."""
        ring = self.from_ring(after)
        if ring is not None:
            return ring
        rows = await storage.read_after(self.channel.id, after, PAGE_EVENTS, PAGE_BYTES)
        return [(cursor, sse_event(cursor, data)) for cursor, data in rows]


class Fanouts:
    """Every channel's fanout, by id and by ingress slug, refreshed from the database."""

    def __init__(self, storage: RelayStorage) -> None:
        self.storage = storage
        self.database_ok = True  # as the storage last said
        self._by_id: dict[int, ChannelFanout] = {}
        self._by_slug: dict[str, ChannelFanout] = {}
        self._refreshed = -REFRESH_S
        self._lock = asyncio.Lock()
        self._refreshing: asyncio.Task[None] | None = None
        self._tokens: dict[str, tuple[float, int | None]] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[ChannelFanout]:
        return iter(list(self._by_id.values()))

    @property
    def subscribers(self) -> int:
        return sum(f.subscribers for f in self._by_id.values())

    @property
    def stalled(self) -> int:
        return sum(f.stalled for f in self._by_id.values())

    def load(self, channels: list[Channel]) -> None:
        seen: set[int] = set()
        for channel in channels:
            seen.add(channel.id)
            fanout = self._by_id.get(channel.id)
            if fanout is None:
                fanout = self._by_id[channel.id] = ChannelFanout(channel, self.storage)
            else:
                fanout.channel = channel
                fanout.used_bytes = channel.used_bytes
        for gone in set(self._by_id) - seen:
            self._by_id.pop(gone).reset()
        self._by_slug = {f.channel.slug: f for f in self._by_id.values()}
        self._refreshed = time.monotonic()

    async def refresh(self, *, older_than: float = REFRESH_S) -> None:
        if time.monotonic() - self._refreshed < older_than:
            return
        async with self._lock:
            if time.monotonic() - self._refreshed < older_than:
                return
            self.load(await self.storage.channels(counts=False))

    def name_of(self, slug: str) -> str | None:
        """The name of the channel at ``slug``, as last read (never reads the database)."""
        fanout = self._by_slug.get(slug)
        return fanout.channel.name if fanout is not None else None

    async def by_slug(self, slug: str) -> ChannelFanout | None:
        """The fanout of the channel at ``slug``, or None. When the database cannot be read, the
        channels last read serve; a slug among none of them raises ``RelayStoreError``."""
        with contextlib.suppress(RelayStoreError):  # the channels last read serve, as documented
            await self.refresh()
        fanout = self._by_slug.get(slug)
        if fanout is None and await self.storage.slug_exists(slug):
            await self.refresh(older_than=0)  # added since the last refresh
            fanout = self._by_slug.get(slug)
        return fanout

    def by_id(self, channel: Channel) -> ChannelFanout:
        fanout = self._by_id.get(channel.id)
        if fanout is None:
            fanout = self._by_id[channel.id] = ChannelFanout(channel, self.storage)
            self._by_slug[channel.slug] = fanout
        return fanout

    async def token_channel(self, token: str) -> int | None:
        """The id of the channel a live token opens, or None; ``RelayStoreError`` when the
        database cannot tell. On a shared database the answer is kept a few seconds, and
        forgotten as soon as any channel or token changes: every open stream checks its token at
        every heartbeat, and many share one."""
        if not self.storage.shared:
            channel = await self.storage.channel_for_token(token)
            return channel.id if channel else None
        key = token_hash(token)
        kept = self._tokens.get(key)
        if kept is not None and time.monotonic() - kept[0] < TOKEN_TTL_S:
            return kept[1]
        channel = await self.storage.channel_for_token(token)
        if len(self._tokens) >= TOKENS_KEPT:
            self._tokens.clear()
        self._tokens[key] = (time.monotonic(), channel.id if channel else None)
        return channel.id if channel else None

    # -- what the storage tells (StorageEvents) ------------------------------------------------

    def on_commit(self, stored: list[Stored]) -> None:
        """On the event loop, in commit order: put the events in their rings, wake the waiters."""
        touched: set[ChannelFanout] = set()
        for item in stored:
            fanout = self._by_id.get(item.channel_id)
            if fanout is not None:
                fanout.append(item)
                touched.add(fanout)
        for fanout in touched:
            fanout.wake()

    def on_committed(self, committed: Committed) -> None:
        fanout = self._by_id.get(committed.channel_id)
        if fanout is not None:
            fanout.committed(committed)

    def on_channels_changed(self) -> None:
        self._tokens.clear()  # a revoked token is refused at its streams' next heartbeat
        self._refreshed = -REFRESH_S
        self._refresh_soon()

    def on_database(self, reachable: bool) -> None:
        self.database_ok = reachable
        self._tokens.clear()  # changes made meanwhile were not heard
        if reachable:
            for fanout in self:
                fanout.reset()
            self._refreshed = -REFRESH_S
            self._refresh_soon()
        for fanout in self:
            fanout.wake()  # streams read the database again, and tell their subscribers

    def _refresh_soon(self) -> None:
        if self._refreshing is not None and not self._refreshing.done():
            return

        async def refresh() -> None:
            try:
                await self.refresh(older_than=0)
            except RelayStoreError as exc:
                log.debug("relay: channels not refreshed (%s)", exc)

        self._refreshing = asyncio.get_running_loop().create_task(refresh())

    def close(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()
        for fanout in self:
            fanout.reset()
