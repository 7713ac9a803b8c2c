"""``GET /channels/{slug}/events``: Server-Sent Events for a subscriber holding a channel token.

A stream opens with ``: connected head=N pending=K`` (the channel's newest cursor, and how many
deliveries wait after the subscriber's cursor, when at most ``PENDING_COUNTED``). Every stored
delivery after the cursor (``Last-Event-ID`` or ``?after=``) is sent in order, then new ones as
they are committed, with a heartbeat comment (``: heartbeat head=N``, N the channel's
newest cursor) when nothing else was sent for a while. The token is checked again at every
heartbeat, so a revoked token ends its streams. ``GET /channels/{slug}`` answers the channel's name,
URLs and creation time as JSON. A wrong or revoked token gets 401 whether or not the channel exists.

When the database cannot be reached, a subscriber is told by a comment (``: database
unavailable``) and its stream waits; a new stream (or ``GET /channels/{slug}``) gets 503 with
``Retry-After`` instead of a 401 that would stop the laptop for good. Once the database is back the
stream says so, reads after its cursor and goes on.

Streams are counted: past ``max_channel_subscribers`` on one channel a token holder gets 429, past
``max_subscribers`` on the whole relay anyone gets 503, both with ``Retry-After``. Each stream is
written what its transport has room for, in one write, never ahead of its socket (``stream.py``):
a subscriber that stops reading holds at most one event past that room, and is dropped after two
heartbeats without progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import time
from collections.abc import Callable

from aiohttp import web

from walletpass_tui import __version__
from walletpass_tui.relay.events import sse_comment
from walletpass_tui.relay.server.channels import Channel, bearer_token, ingress_url, subscribe_url
from walletpass_tui.relay.server.fanout import ChannelFanout, Fanouts
from walletpass_tui.relay.server.storage.base import RelayStorage
from walletpass_tui.relay.server.storage.errors import RETRY_AFTER_S, RelayStoreError
from walletpass_tui.relay.server.stream import EventStream, PeerStalled
from walletpass_tui.text import parse_ascii_int

CHANNELS_PREFIX = "/channels/"
DEFAULT_HEARTBEAT_S = 15.0
DEFAULT_MAX_SUBSCRIBERS = 1000  # streams on the whole relay
DEFAULT_MAX_CHANNEL_SUBSCRIBERS = 100  # streams on one channel
FULL_RETRY_AFTER_S = 30
RETRY_MS = 2000
MAX_CURSOR = 2**63 - 1
PENDING_COUNTED = 100_000  # deliveries counted for a new stream's "connected ... pending=N"

_UNAUTHORIZED = "Unauthorized: the token is wrong or revoked"
_DOWN = "database unavailable; this stream waits for it"
_BACK = "database available again"


class Subscriptions:
    def __init__(
        self,
        fanouts: Fanouts,
        storage: RelayStorage,
        *,
        public_url: Callable[[web.BaseRequest], str],
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
        max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS,
        max_channel_subscribers: int = DEFAULT_MAX_CHANNEL_SUBSCRIBERS,
        on_stream: Callable[[web.BaseRequest], None] | None = None,
    ) -> None:
        """``on_stream(request)``: a stream opened (its 200 and headers are sent)."""
        self.on_stream = on_stream
        self.fanouts = fanouts
        self.storage = storage
        self.public_url = public_url
        self.heartbeat_s = heartbeat_s
        self.max_subscribers = max_subscribers
        self.max_channel_subscribers = max_channel_subscribers
        self.streams = 0  # open streams on every channel
        self.stopping = asyncio.Event()
        self._stopped: asyncio.Future[None] | None = None

    @property
    def stopped(self) -> asyncio.Future[None]:
        """Done once the relay stops: ends the streams waiting for a slow peer too."""
        if self._stopped is None:
            self._stopped = asyncio.get_running_loop().create_future()
            if self.stopping.is_set():
                self._stopped.set_result(None)
        return self._stopped

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        rest = request.path[len(CHANNELS_PREFIX) :].rstrip("/")
        slug, _, tail = rest.partition("/")
        if not slug or tail not in ("", "events"):
            return _text(404, "Not found")
        if request.method != "GET":
            return _text(405, "Method not allowed: use GET", headers={"Allow": "GET"})
        try:
            channel = await self._authorize(request, slug)
        except RelayStoreError:  # answered 503; the database's outage is logged where it is noticed
            return _text(
                503,
                "Service unavailable: the relay's database cannot be reached now; retry shortly",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        if channel is None:
            return _text(401, _UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
        if tail == "":
            base = self.public_url(request)
            return web.json_response(
                {
                    "name": channel.name,
                    "ingress_url": ingress_url(base, channel.slug),
                    "subscribe_url": subscribe_url(base, channel.slug),
                    "verifies_at_edge": channel.verifies_at_edge,
                    "created_at_ms": channel.created_at_ms,
                    "version": __version__,
                }
            )
        after = _cursor(request)
        if after is None:
            return _text(400, "Bad request: Last-Event-ID and ?after= take a cursor (0 or more)")
        return await self._stream(request, channel, after)

    async def _authorize(self, request: web.BaseRequest, slug: str) -> Channel | None:
        """The channel the request's token opens at ``slug``, or None; ``RelayStoreError`` when
        the database cannot tell (never taken for a wrong token)."""
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            return None
        channel = await self.storage.channel_for_token(token)
        if channel is None or not hmac.compare_digest(channel.slug.encode(), slug.encode()):
            return None
        return channel

    async def _still_valid(self, token: str | None, channel: Channel) -> bool:
        if token is None:
            return False
        try:
            current = await self.fanouts.token_channel(token)
        except RelayStoreError:
            return True  # a busy database is not a revocation
        return current == channel.id

    async def _stream(
        self, request: web.BaseRequest, channel: Channel, after: int
    ) -> web.StreamResponse:
        fanout = self.fanouts.by_id(channel)
        if fanout.subscribers >= self.max_channel_subscribers:
            return _text(
                429,
                f"Too many requests: this channel already has {fanout.subscribers} open streams, "
                "the relay's limit; close one or retry later",
                headers={"Retry-After": str(FULL_RETRY_AFTER_S)},
            )
        if self.streams >= self.max_subscribers:
            return _text(
                503,
                f"Service unavailable: the relay already serves {self.streams} streams, "
                "its limit; retry later",
                headers={"Retry-After": str(FULL_RETRY_AFTER_S)},
            )
        fanout.subscribers += 1
        self.streams += 1
        try:
            return await self._serve(request, fanout, channel, after)
        finally:
            fanout.subscribers -= 1
            self.streams -= 1

    async def _serve(
        self, request: web.BaseRequest, fanout: ChannelFanout, channel: Channel, after: int
    ) -> web.StreamResponse:
        token = bearer_token(request.headers.get("Authorization"))
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",  # nginx and friends: do not buffer the stream
            }
        )

        async def still_valid() -> bool:
            return await self._still_valid(token, channel)

        cursor = after
        try:
            writer = await response.prepare(request)
            assert writer is not None  # None only from a response already ended
            if self.on_stream is not None:
                self.on_stream(request)
            out = EventStream(
                request,
                writer,
                fanout,
                heartbeat_s=self.heartbeat_s,
                stopped=self.stopped,
            )
            try:
                head = await self.storage.head(channel.id)
                if self.fanouts.database_ok:
                    fanout.prime(head)
                head = max(head, fanout.head_hint)
            except RelayStoreError:  # the database is down: the fanout's last known head
                head = fanout.head_hint
            connected = f"connected head={head}"
            waiting = await self._waiting(channel, cursor, head)
            if waiting is not None:
                connected += f" pending={waiting}"
            await out.write(b"retry: %d\n" % RETRY_MS + sse_comment(connected))
            checked = time.monotonic()
            told_down = False
            rewinds = fanout.rewinds
            while not self.stopping.is_set():
                if fanout.rewinds != rewinds:  # the database went back: the laptop is told
                    rewinds = fanout.rewinds
                    if fanout.rewound_to < cursor:
                        cursor = fanout.rewound_to
                        await out.write(sse_comment(f"heartbeat head={cursor}"))
                if self.fanouts.database_ok == told_down:
                    told_down = not told_down
                    await out.write(sse_comment(_DOWN if told_down else _BACK))
                if time.monotonic() - checked >= self.heartbeat_s:
                    # A busy stream is re-checked as often as an idle one: revoking cuts both.
                    if not await still_valid():
                        break
                    checked = time.monotonic()
                changed = fanout.changed
                try:
                    sent = await _send_page(out, fanout, self.storage, cursor)
                except RelayStoreError:
                    sent = cursor  # wait for the database as for new events, then read again
                    if not told_down:
                        told_down = True
                        await out.write(sse_comment(_DOWN))
                if sent != cursor:
                    cursor = sent
                    if not await out.drained(still_valid):
                        return response
                    continue
                done, _ = await asyncio.wait(
                    {changed, self.stopped},
                    timeout=self.heartbeat_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not done and not self.stopping.is_set():
                    if not await still_valid():
                        break
                    checked = time.monotonic()
                    head = max(cursor, fanout.head_hint)
                    await out.write(sse_comment(f"heartbeat head={head}"))
                    if not await out.drained(still_valid):
                        return response
        except (ConnectionError, PeerStalled):  # the subscriber went away, or read nothing
            return response
        with contextlib.suppress(ConnectionError, RuntimeError):  # the subscriber went away
            await response.write_eof()
        return response

    async def _waiting(self, channel: Channel, after: int, head: int) -> int | None:
        """How many deliveries wait after the cursor (for the subscriber to say how many it is
        catching up on); None when more than ``PENDING_COUNTED`` or the database cannot say."""
        if head <= after:
            return 0
        try:
            count = await self.storage.count_after(channel.id, after, PENDING_COUNTED + 1)
        except RelayStoreError:  # the database is down: the subscriber goes by cursors
            return None
        return count if count <= PENDING_COUNTED else None

    async def close(self) -> None:
        """End every stream, those waiting for new events and those waiting for a slow peer."""
        self.stopping.set()
        if not self.stopped.done():
            self.stopped.set_result(None)
        for fanout in self.fanouts:
            fanout.wake()


async def _send_page(
    out: EventStream, fanout: ChannelFanout, storage: RelayStorage, cursor: int
) -> int:
    """Write the next page after ``cursor``, as much of it as the transport has room for (at
    least one event), in one write; the cursor of the last event written. The rest of the page
    is let go of here, read again once drained."""
    room = out.room
    batch: list[bytes] = []
    size = 0
    for next_cursor, event in await fanout.read_after(storage, cursor):
        batch.append(event)
        size += len(event)
        cursor = next_cursor
        if size >= room:
            break
    if batch:
        await out.write(batch[0] if len(batch) == 1 else b"".join(batch))
    return cursor


def _cursor(request: web.BaseRequest) -> int | None:
    text = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    value = parse_ascii_int(text, max_digits=19)
    return value if value is not None and value <= MAX_CURSOR else None


def _text(status: int, text: str, *, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=headers)


def health(fanouts: Fanouts, storage: RelayStorage) -> web.Response:
    """Counts, and which database this process uses (no user, no password) and whether it
    reaches it: 200 when it does, 503 when not (a balancer's health check then sends traffic to
    the processes that do)."""
    reachable = storage.reachable
    return web.Response(
        status=200 if reachable else 503,
        text=json.dumps(
            {
                "status": "ok" if reachable else "database unreachable",
                "version": __version__,
                "channels": len(fanouts),
                "subscribers": fanouts.subscribers,
                "stalled": fanouts.stalled,
                "database": {**storage.target.describe(), "reachable": reachable},
            }
        ),
        content_type="application/json",
    )
