"""``POST /in/{slug}``: route -> source -> quota -> bounded body -> verify -> commit -> answer.

The same limits and answers as the local receiver (``webhooks/receiver.py``): 404 for an unknown
path or slug (nothing stored), 405 for other methods, 403 for a source outside the allow-list, 413
past the body limit (never read further), 408 when the body does not arrive in time, 400/401 with
the verifier's reason. Over its quota a channel answers 503 so the service retries later. A 2xx
means the delivery is committed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web

from walletpass_tui.config import DEFAULT_MAX_BODY, DEFAULT_TOLERANCE_S
from walletpass_tui.relay.events import delivery_data
from walletpass_tui.relay.server.fanout import Feed, Feeds
from walletpass_tui.relay.server.storage import RelayStoreError
from walletpass_tui.relay.server.writer import NewDelivery, NewRejection, RelayWriter
from walletpass_tui.webhooks.listening import DEFAULT_READ_TIMEOUT_S
from walletpass_tui.webhooks.reasons import Reason
from walletpass_tui.webhooks.request_body import BodyTooLarge, read_body
from walletpass_tui.webhooks.sources import SourcePolicy
from walletpass_tui.webhooks.verify import HEADER_ID, verify

INGRESS_PREFIX = "/in/"
RETRY_AFTER_S = 60
REJECTED_HEADERS_LIMIT = 16 * 1024  # of a rejection's headers, kept for debugging


@dataclass
class IngressOptions:
    max_body: int = DEFAULT_MAX_BODY
    tolerance_s: float = DEFAULT_TOLERANCE_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    sources: SourcePolicy = field(default_factory=SourcePolicy)


class Ingress:
    def __init__(
        self,
        feeds: Feeds,
        writer: RelayWriter,
        options: IngressOptions,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.feeds = feeds
        self.writer = writer
        self.options = options
        self._clock = clock
        self.accepted = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        opts = self.options
        received = self._clock()
        received_ms = int(received.timestamp() * 1000)
        slug = request.path[len(INGRESS_PREFIX) :].rstrip("/")
        feed = await self.feeds.by_slug(slug) if slug and "/" not in slug else None
        if feed is None:
            return _answer(404, "Not found: no relay channel at this address", close=False)
        if request.method != "POST":
            return _answer(
                405, "Method not allowed: webhooks are POSTed", headers={"Allow": "POST"}
            )

        peer = request.remote
        xff = request.headers.get("X-Forwarded-For")
        client = opts.sources.client_address(peer, xff)
        webhook_id = request.headers.get(HEADER_ID)
        webhook_id = webhook_id[:200] if webhook_id else None

        async def reject(status: int, reason: str, text: str, body: bytes = b"") -> web.Response:
            await self._keep_rejection(feed, request, received_ms, status, reason, body, client)
            return _answer(status, text, close=status in (408, 413))

        if not opts.sources.allows(client):
            return await reject(
                403, "source not allowed", f"Forbidden: {client} is not an allowed source"
            )
        if feed.over_quota:
            return _answer(
                503,
                "Service unavailable: this relay channel is over its storage quota; retry later",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )

        try:
            body = await read_body(request, opts.max_body, opts.read_timeout_s)
        except TimeoutError:
            return await reject(
                408, "request timed out", "Request timeout: the body did not arrive in time"
            )
        except BodyTooLarge:
            return await reject(
                413, "body too large", f"Payload too large: the limit is {opts.max_body} bytes"
            )

        headers = [(k, v) for k, v in request.headers.items()]
        if not all(_is_utf8(k) and _is_utf8(v) for k, v in headers):
            return await reject(
                400,
                "malformed header",
                "Bad request: malformed header: a header is not UTF-8 text",
                body,
            )

        key = feed.key
        verdict = verify(
            request.headers,
            body,
            [key] if key else [],
            now=received,
            tolerance_s=opts.tolerance_s,
        )
        well_formed = verdict.ok or (key is None and verdict.reason is Reason.NO_SECRET)
        if not well_formed:
            label = "Bad request" if verdict.status == 400 else "Unauthorized"
            return await reject(verdict.status, verdict.text, f"{label}: {verdict.text}", body)

        data = delivery_data(
            received_at_ms=received_ms,
            method=request.method,
            path=request.path_qs,
            headers=headers,
            body=body,
            source=peer,
            forwarded_for=xff,
            client=str(client) if client is not None else None,
            channel=feed.channel.name,
        )
        try:
            await self.writer.submit(NewDelivery(feed.channel.id, received_ms, webhook_id, data))
        except RelayStoreError as exc:
            return _answer(503, f"Service unavailable: not stored ({exc})")
        self.accepted += 1
        return web.Response(status=200, text="OK: stored\n")

    async def _keep_rejection(
        self,
        feed: Feed,
        request: web.Request,
        received_ms: int,
        status: int,
        reason: str,
        body: bytes,
        client: object,
    ) -> None:
        """Rejections are kept (bounded per channel) so a misconfigured sender can be debugged."""
        headers = _kept_headers(list(request.headers.items()))
        webhook_id = request.headers.get(HEADER_ID)
        job = NewRejection(
            channel_id=feed.channel.id,
            received_at_ms=received_ms,
            status=status,
            reason=reason,
            webhook_id=webhook_id[:200] if webhook_id else None,
            source=str(client) if client is not None else request.remote,
            headers=headers,
            body=body,
        )
        with contextlib.suppress(RelayStoreError):
            await self.writer.submit(job)


def _answer(
    status: int, text: str, *, headers: dict[str, str] | None = None, close: bool = False
) -> web.Response:
    response = web.Response(status=status, text=text + "\n", headers=headers)
    if close:
        response.force_close()
    return response


def _kept_headers(headers: list[tuple[str, str]]) -> str:
    """A rejection's headers as JSON, in order, up to ``REJECTED_HEADERS_LIMIT`` characters of
    names and values; what does not fit is counted, not kept (a rejection is not billed to the
    channel's quota, so its size is bounded here)."""
    kept: list[list[str]] = []
    room = REJECTED_HEADERS_LIMIT
    for name, value in headers:
        room -= len(name) + len(value)
        if room < 0:
            break
        kept.append([name, value])
    if len(kept) < len(headers):
        kept.append(["...", f"{len(headers) - len(kept)} more headers not kept"])
    return json.dumps(kept, ensure_ascii=True, default=str)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
