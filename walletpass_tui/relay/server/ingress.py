"""``POST /in/{slug}``: route -> intake -> quota -> bounded body -> verify -> commit -> answer.

The checks are the local receiver's (``webhooks/intake.py``, one set for every door), with the same
reasons and answers: 405 for other methods, 403 for a source outside the allow-list (the client by
the one rule: every X-Forwarded-For line counts, believed only from a trusted proxy), 413 past the
body limit (never read further), 408 when the body does not arrive in time, 400 for a header that
is not UTF-8 text, 400/401 with the verifier's reason. What is the relay's own: the route (404 for
an unknown path or slug, nothing stored), the quota (over it a channel answers 503 so the service
retries later), storing (a 2xx means the delivery is committed; rejections are kept, bounded, the
405s aside) and one rule: a channel with no secret stores well-formed posts for the laptops to
verify.
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
from walletpass_tui.relay.server.fanout import ChannelFanout, Fanouts, UnusableSecret
from walletpass_tui.relay.server.storage.base import RelayStorage
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.relay.server.storage.records import NewDelivery, NewRejection
from walletpass_tui.webhooks.intake import Intake, IntakeRequest, forwarded_for_text
from walletpass_tui.webhooks.listening import DEFAULT_READ_TIMEOUT_S
from walletpass_tui.webhooks.reasons import Reason, Rejected
from walletpass_tui.webhooks.sources import IPAddress, SourcePolicy

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
        fanouts: Fanouts,
        storage: RelayStorage,
        options: IngressOptions,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.fanouts = fanouts
        self.storage = storage
        self.options = options
        self.intake = Intake(options)
        self._clock = clock
        self.accepted = 0

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        arrived = IntakeRequest.from_aiohttp(request, self._clock())
        slug = request.path[len(INGRESS_PREFIX) :].rstrip("/")
        fanout = await self.fanouts.by_slug(slug) if slug and "/" not in slug else None
        if fanout is None:  # nothing is kept: there is no channel to keep it under
            return _answer(
                Rejected(Reason.WRONG_PATH, slug, answer="no relay channel at this address")
            )
        sources = self.options.sources
        try:
            self.intake.check_head(arrived)
        except Rejected as rejection:
            if rejection.reason is not Reason.METHOD_NOT_ALLOWED:  # a wrong method is not kept
                await self._keep_rejection(fanout, arrived, rejection, b"", arrived.client(sources))
            return _answer(rejection)
        client = arrived.client(sources)
        if fanout.over_quota:
            return _unavailable(
                "this relay channel is over its storage quota; retry later",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        try:
            key = fanout.key
        except UnusableSecret:  # said once in the log; the service retries meanwhile
            return _unavailable(
                "this relay channel's signing secret cannot be used; its operator must replace "
                "it; retry later",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        body = b""
        try:
            body = await self.intake.read(arrived)
            verdict = self.intake.verify(arrived, body, [key] if key else [])
            # No secret on the channel: a well-formed post is stored for the laptops to verify.
            if not (verdict.ok or (key is None and verdict.reason is Reason.NO_SECRET)):
                raise Rejected(verdict.reason, verdict.detail)
        except Rejected as rejection:  # kept as a rejection and answered with its reason
            await self._keep_rejection(fanout, arrived, rejection, body, client)
            return _answer(rejection)

        received_ms = _ms(arrived.received)
        data = delivery_data(
            received_at_ms=received_ms,
            method=arrived.method,
            path=arrived.target,
            headers=list(arrived.headers.items()),
            body=body,
            source=arrived.peer,
            forwarded_for=forwarded_for_text(arrived.forwarded_for()),
            client=str(client) if client is not None else None,
            channel=fanout.channel.name,
        )
        job = NewDelivery(fanout.channel.id, received_ms, arrived.webhook_id(), data)
        try:
            await self.storage.submit(job)
        except RelayStoreError as exc:  # answered 503 with its reason
            return _unavailable(f"not stored ({exc})")
        self.accepted += 1
        return web.Response(status=200, text="OK: stored\n")

    async def _keep_rejection(
        self,
        fanout: ChannelFanout,
        arrived: IntakeRequest,
        rejection: Rejected,
        body: bytes,
        client: IPAddress | None,
    ) -> None:
        """Rejections are kept (bounded per channel) so a misconfigured sender can be debugged:
        the reason's words and its detail, as the laptops' history has them."""
        reason = rejection.reason.value
        job = NewRejection(
            channel_id=fanout.channel.id,
            received_at_ms=_ms(arrived.received),
            status=rejection.status,
            reason=f"{reason}: {rejection.detail}" if rejection.detail else reason,
            webhook_id=arrived.webhook_id(),
            source=str(client) if client is not None else arrived.peer,
            headers=_kept_headers(list(arrived.headers.items())),
            body=body,
        )
        with contextlib.suppress(RelayStoreError):  # a rejection not kept: its answer is the same
            await self.storage.submit(job)


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def _answer(rejection: Rejected) -> web.Response:
    """A refusal: the status, words and headers ``reasons.py`` gives it, as every door answers."""
    response = web.Response(
        status=rejection.status, text=rejection.answer_text(), headers=rejection.headers
    )
    if rejection.close:
        response.force_close()
    return response


def _unavailable(why: str, *, headers: dict[str, str] | None = None) -> web.Response:
    """503: the relay's own (its quota, its storage), so the sender retries later."""
    return web.Response(status=503, text=f"Service unavailable: {why}\n", headers=headers)


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
