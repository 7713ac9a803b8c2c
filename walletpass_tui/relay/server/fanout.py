"""What the running relay knows about each channel: the recent events, who waits, the quota used.

No subscriber has a queue. Each one holds only its cursor and asks its channel's ``Feed`` for what
comes after it: recent events come from a ring bounded in count and bytes (each event's bytes built
once and shared by every subscriber), anything older from the database, a small page at a time.
Either way a page is bounded in bytes (``PAGE_BYTES``, at least one event), and a subscriber lets
go of the rest of its page as soon as its socket is full (``stream.py``). A slow subscriber
therefore costs a cursor, at most one event and a socket buffer, and ingress never waits for it.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import Iterator

from walletpass_tui.relay.events import sse_event
from walletpass_tui.relay.server.channels import Channel
from walletpass_tui.relay.server.storage import RelayDB
from walletpass_tui.relay.server.writer import Stored
from walletpass_tui.webhooks.verify import SigningKey, parse_secret

RING_EVENTS = 512
RING_BYTES = 4 * 1024 * 1024
PAGE_EVENTS = 256
PAGE_BYTES = 64 * 1024  # what one subscriber reads at a time: at least one event, about this much
REFRESH_S = 1.0  # how often the channel table is re-read (``relay channel`` runs elsewhere)


class Feed:
    """One channel's live state."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.used_bytes = channel.used_bytes
        self.subscribers = 0
        self.stalled = 0  # subscribers waiting for their peer to read what was sent
        self.head_hint = 0  # the newest cursor seen by this process
        self._ring: deque[tuple[int, bytes]] = deque()
        self._ring_cursors: deque[int] = deque()
        self._ring_bytes = 0
        # The ring holds every event with a cursor above ``_floor``; None until the first event.
        self._floor: int | None = None
        self._changed: asyncio.Future[None] | None = None
        self._key: SigningKey | None = None
        self._key_secret: str | None = None

    @property
    def key(self) -> SigningKey | None:
        """The edge-verification key, parsed once per secret."""
        secret = self.channel.secret
        if not secret:
            return None
        if secret != self._key_secret:
            self._key = SigningKey(key=parse_secret(secret), label=self.channel.name)
            self._key_secret = secret
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

    def append(self, stored: Stored) -> None:
        if self._floor is None:
            self._floor = stored.cursor - 1
        event = sse_event(stored.cursor, stored.data)
        self._ring.append((stored.cursor, event))
        self._ring_cursors.append(stored.cursor)
        self._ring_bytes += len(event)
        while len(self._ring) > RING_EVENTS or (
            self._ring_bytes > RING_BYTES and len(self._ring) > 1
        ):
            cursor, old = self._ring.popleft()
            self._ring_cursors.popleft()
            self._ring_bytes -= len(old)
            self._floor = cursor
        self.used_bytes = stored.used_bytes
        self.head_hint = stored.cursor

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

    async def read_after(self, db: RelayDB, after: int) -> list[tuple[int, bytes]]:
        """The next page of events after the cursor: from the ring, else from the database."""
        ring = self.from_ring(after)
        if ring is not None:
            return ring
        rows = await asyncio.to_thread(
            db.read_after, self.channel.id, after, PAGE_EVENTS, PAGE_BYTES
        )
        return [(cursor, sse_event(cursor, data)) for cursor, data in rows]


class Feeds:
    """Every channel's feed, by id and by ingress slug, refreshed from the database."""

    def __init__(self, db: RelayDB) -> None:
        self.db = db
        self._by_id: dict[int, Feed] = {}
        self._by_slug: dict[str, Feed] = {}
        self._refreshed = -REFRESH_S
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Feed]:
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
            feed = self._by_id.get(channel.id)
            if feed is None:
                feed = self._by_id[channel.id] = Feed(channel)
            else:
                feed.channel = channel
                feed.used_bytes = channel.used_bytes
        for gone in set(self._by_id) - seen:
            del self._by_id[gone]
        self._by_slug = {f.channel.slug: f for f in self._by_id.values()}
        self._refreshed = time.monotonic()

    async def refresh(self, *, older_than: float = REFRESH_S) -> None:
        if time.monotonic() - self._refreshed < older_than:
            return
        async with self._lock:
            if time.monotonic() - self._refreshed < older_than:
                return
            channels = await asyncio.to_thread(self.db.channels, counts=False)
            self.load(channels)

    async def by_slug(self, slug: str) -> Feed | None:
        await self.refresh()
        feed = self._by_slug.get(slug)
        if feed is None and await asyncio.to_thread(self.db.slug_exists, slug):
            await self.refresh(older_than=0)  # added since the last refresh
            feed = self._by_slug.get(slug)
        return feed

    def by_id(self, channel: Channel) -> Feed:
        feed = self._by_id.get(channel.id)
        if feed is None:
            feed = self._by_id[channel.id] = Feed(channel)
            self._by_slug[channel.slug] = feed
        return feed

    def on_commit(self, stored: list[Stored]) -> None:
        """On the event loop, in commit order: put the events in their rings, wake the waiters."""
        touched: set[Feed] = set()
        for item in stored:
            feed = self._by_id.get(item.channel_id)
            if feed is not None:
                feed.append(item)
                touched.add(feed)
        for feed in touched:
            feed.wake()
