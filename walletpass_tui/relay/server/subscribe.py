"""``GET /channels/{slug}/events``: Server-Sent Events for a subscriber holding a channel token.

Every stored delivery after the cursor (``Last-Event-ID`` or ``?after=``) is sent in order, then
new ones as they are committed, with a heartbeat comment (``: heartbeat head=N``, N the channel's
newest cursor) when nothing else was sent for a while. The token is checked again at every
heartbeat, so a revoked token ends its streams. ``GET /channels/{slug}`` answers the channel's name,
URLs and creation time as JSON. A wrong or revoked token gets 401 whether or not the channel exists.
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
from walletpass_tui.relay.server.fanout import Feeds
from walletpass_tui.relay.server.storage import RelayDB, RelayStoreError

CHANNELS_PREFIX = "/channels/"
DEFAULT_HEARTBEAT_S = 15.0
RETRY_MS = 2000
MAX_CURSOR = 2**63 - 1

_UNAUTHORIZED = "Unauthorized: the token is wrong or revoked"


class Subscriptions:
    def __init__(
        self,
        feeds: Feeds,
        db: RelayDB,
        *,
        public_url: Callable[[web.Request], str],
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
    ) -> None:
        self.feeds = feeds
        self.db = db
        self.public_url = public_url
        self.heartbeat_s = heartbeat_s
        self.stopping = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        rest = request.path[len(CHANNELS_PREFIX) :].rstrip("/")
        slug, _, tail = rest.partition("/")
        if not slug or tail not in ("", "events"):
            return _text(404, "Not found")
        if request.method != "GET":
            return _text(405, "Method not allowed: use GET", headers={"Allow": "GET"})
        channel = await self._authorize(request, slug)
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

    async def _authorize(self, request: web.Request, slug: str) -> Channel | None:
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            return None
        try:
            channel = await asyncio.to_thread(self.db.channel_for_token, token)
        except RelayStoreError:
            return None
        if channel is None or not hmac.compare_digest(channel.slug.encode(), slug.encode()):
            return None
        return channel

    async def _still_valid(self, token: str | None, channel: Channel) -> bool:
        if token is None:
            return False
        try:
            current = await asyncio.to_thread(self.db.channel_for_token, token)
        except RelayStoreError:
            return True  # a busy database is not a revocation
        return current is not None and current.id == channel.id

    async def _stream(
        self, request: web.Request, channel: Channel, after: int
    ) -> web.StreamResponse:
        feed = self.feeds.by_id(channel)
        token = bearer_token(request.headers.get("Authorization"))
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",  # nginx and friends: do not buffer the stream
            }
        )
        await response.prepare(request)
        feed.subscribers += 1
        cursor = after
        try:
            head = await asyncio.to_thread(self.db.head, channel.id)
            await response.write(b"retry: %d\n" % RETRY_MS + sse_comment(f"connected head={head}"))
            checked = time.monotonic()
            while not self.stopping.is_set():
                if time.monotonic() - checked >= self.heartbeat_s:
                    # A busy stream is re-checked as often as an idle one: revoking cuts both.
                    if not await self._still_valid(token, channel):
                        break
                    checked = time.monotonic()
                changed = feed.changed
                page = await feed.read_after(self.db, cursor)
                if page:
                    await response.write(b"".join(event for _, event in page))
                    cursor = page[-1][0]
                    continue
                done, _ = await asyncio.wait({changed}, timeout=self.heartbeat_s)
                if not done and not self.stopping.is_set():
                    if not await self._still_valid(token, channel):
                        break
                    checked = time.monotonic()
                    head = max(cursor, feed.head_hint)
                    await response.write(sse_comment(f"heartbeat head={head}"))
        except ConnectionError:  # the subscriber went away
            return response
        finally:
            feed.subscribers -= 1
        with contextlib.suppress(ConnectionError, RuntimeError):
            await response.write_eof()
        return response

    async def close(self) -> None:
        """End every stream that is waiting (one blocked on a full socket is cut by the runner)."""
        self.stopping.set()
        for feed in self.feeds:
            feed.wake()


def _cursor(request: web.Request) -> int | None:
    text = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    text = text.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if value <= MAX_CURSOR else None


def _text(status: int, text: str, *, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=headers)


def health(feeds: Feeds) -> web.Response:
    return web.Response(
        text=json.dumps(
            {
                "status": "ok",
                "version": __version__,
                "channels": len(feeds),
                "subscribers": feeds.subscribers,
            }
        ),
        content_type="application/json",
    )
