"""The delivery engine: spec section 6, to the letter, on a scalable clock.

* Each message is POSTed with ``Content-Type: application/json`` and the three Standard Webhooks
  headers: ``webhook-id`` (the message's id, identical on every retry), ``webhook-timestamp`` (the time
  of *that* attempt) and ``webhook-signature`` (a ``v1,`` entry, made by ``verify.sign``).
* A 2xx answer within 15 s is a success. Any other status, no answer within the deadline, or no
  connection at all is a failed attempt.
* 8 attempts; the waits before them are 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each starting when
  the previous attempt failed. Three failures then a success land 35 min 5 s after the first attempt.
* Cancelling an endpoint's flows (it was disabled or removed) stops its attempts, a sleeping retry
  included.

Times are *service* time: the clock (``ScaledClock`` or ``FakeClock``) decides how long a wait really
takes. Every attempt is recorded as an :class:`SentAttempt` and every finished flow as a
:class:`DeliveryResult`; both go to subscribers as they happen.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import httpx

from walletpass_tui import __version__
from walletpass_tui.listeners import Listeners
from walletpass_tui.sim.clock import Clock, ScaledClock
from walletpass_tui.sim.events import iso_millis, message_id
from walletpass_tui.text import format_duration
from walletpass_tui.webhooks.verify import parse_secret, sign

log = logging.getLogger(__name__)

# Spec section 6, rule 5: the wait before each of the 8 attempts, in seconds.
RETRY_WAITS: tuple[float, ...] = (0, 5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600)
# Spec section 6, rule 2 and section 8: the receiver must answer within 15 seconds.
ANSWER_DEADLINE_S = 15.0
USER_AGENT = f"walletpass-tui-sim/{__version__}"
TIMEOUT = "timeout"
CONNECTION_ERROR = "connection error"
EXCERPT_BYTES = 2048
ATTEMPT_LOG_LIMIT = 10_000


@dataclass(frozen=True)
class Message:
    """One webhook message: its id is reused on every attempt to every endpoint."""

    id: str
    topic: str
    body: bytes

    @classmethod
    def new(cls, topic: str, body: Any, *, msg_id: str | None = None) -> Message:
        """``body``: bytes or str are sent as they are; anything else is serialized as JSON."""
        if isinstance(body, bytes):
            raw = body
        elif isinstance(body, str):
            raw = body.encode("utf-8")
        else:
            raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return cls(id=msg_id or message_id(), topic=topic, body=raw)


@dataclass(frozen=True)
class Target:
    """Where a message goes. ``endpoint_id`` is None for an ad-hoc receiver (``sim deliver``)."""

    url: str
    secret: str = field(repr=False)
    endpoint_id: str | None = None


@dataclass(frozen=True)
class SentAttempt:
    """One attempt the simulated service made and what it heard back. ``offset_s`` is service time
    since the flow's first attempt."""

    message_id: str
    topic: str
    endpoint_id: str | None
    url: str
    number: int
    max_attempts: int
    offset_s: float
    timestamp: datetime  # the webhook-timestamp sent (the time of this attempt)
    status: int | None  # the receiver's HTTP status, None when there was no answer
    error: str | None  # TIMEOUT or CONNECTION_ERROR when there was no answer
    detail: str  # reason phrase, or what went wrong
    elapsed_s: float  # real seconds the exchange took
    next_wait_s: float | None  # service seconds until the next attempt; None after the last
    response_excerpt: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status <= 299

    @property
    def outcome(self) -> str:
        """``"200"``, ``"500"``, ``"timeout"`` or ``"connection error"``."""
        return str(self.status) if self.status is not None else (self.error or "?")

    def describe(self) -> str:
        """One line: ``attempt 3/8  +5 min 5 s  500 Internal Server Error  next in 30 min``."""
        answer = self.outcome + (f" {self.detail}" if self.detail else "")
        if self.ok:
            tail = "delivered"
        elif self.next_wait_s is None:
            tail = "giving up"
        else:
            tail = f"next in {format_wait(self.next_wait_s)}"
        return (
            f"attempt {self.number}/{self.max_attempts}  {format_offset(self.offset_s)}  "
            f"{answer} ({self.elapsed_s * 1000:.0f} ms)  {tail}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "topic": self.topic,
            "endpointId": self.endpoint_id,
            "url": self.url,
            "attempt": self.number,
            "maxAttempts": self.max_attempts,
            "offsetSeconds": round(self.offset_s, 3),
            "offset": format_offset(self.offset_s),
            "timestamp": iso_millis(self.timestamp),
            "status": self.status,
            "error": self.error,
            "detail": self.detail,
            "elapsedMs": round(self.elapsed_s * 1000, 1),
            "nextWaitSeconds": self.next_wait_s,
            "ok": self.ok,
        }


DeliveryState = Literal["delivered", "failed", "stopped"]


@dataclass(frozen=True)
class DeliveryResult:
    """How a flow ended: ``delivered``, ``failed`` (every attempt failed) or ``stopped``."""

    message_id: str
    topic: str
    endpoint_id: str | None
    url: str
    state: DeliveryState
    attempts: int

    def to_json(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "topic": self.topic,
            "endpointId": self.endpoint_id,
            "url": self.url,
            "state": self.state,
            "attempts": self.attempts,
        }


Event = SentAttempt | DeliveryResult
Subscriber = Callable[[Event], None]


class Flow:
    """A running flow (one message to one target)."""

    def __init__(self, message: Message, target: Target) -> None:
        self.message = message
        self.target = target
        self.attempts: list[SentAttempt] = []
        self.result: DeliveryResult | None = None
        self.task: asyncio.Task[DeliveryResult | None]

    def __repr__(self) -> str:
        return f"Flow({self.message.id} -> {self.target.endpoint_id or self.target.url})"

    @property
    def done(self) -> bool:
        return self.task.done()

    async def wait(self) -> DeliveryResult | None:
        """The result once the flow ends (None if it was cancelled before recording one)."""
        try:
            await asyncio.shield(self.task)
        except asyncio.CancelledError:
            if not self.task.cancelled():
                raise
        return self.result


def format_wait(seconds: float) -> str:
    """``5 s``, ``5 min``, ``2 h``, ``1 h 30 min``."""
    return _duration(seconds) or "0 s"


def format_offset(seconds: float) -> str:
    """Service time since the first attempt: ``+0 s``, ``+5 s``, ``+35 min 5 s``."""
    return "+" + (_duration(seconds) or "0 s")


def _duration(seconds: float) -> str:
    return format_duration(seconds, fine=False)  # durations are shown the way text.py decides


class DeliveryEngine:
    """Delivers messages on the spec's retry schedule.

    ``clock`` defaults to a :class:`ScaledClock` with ``time_scale``. ``transport`` lets tests swap
    the HTTP layer (httpx). Every attempt is kept in ``attempts`` (the last 10,000) and sent to
    subscribers; so is every :class:`DeliveryResult`.
    """

    def __init__(
        self,
        *,
        time_scale: float = 1.0,
        clock: Clock | None = None,
        waits: Sequence[float] = RETRY_WAITS,
        deadline_s: float = ANSWER_DEADLINE_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not waits:
            raise ValueError("The retry schedule needs at least one attempt.")
        self.clock: Clock = clock or ScaledClock(time_scale)
        self.waits = tuple(float(w) for w in waits)
        self.deadline_s = deadline_s
        self.attempts: deque[SentAttempt] = deque(maxlen=ATTEMPT_LOG_LIMIT)
        self.results: deque[DeliveryResult] = deque(maxlen=ATTEMPT_LOG_LIMIT)
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._subscribers: Listeners[[Event]] = Listeners(__name__, "delivery")
        self._flows: dict[str | None, set[Flow]] = {}
        self._closed = False

    @property
    def max_attempts(self) -> int:
        return len(self.waits)

    @property
    def time_scale(self) -> float:
        return self.clock.time_scale

    # -- subscribers ------------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with every SentAttempt and DeliveryResult; returns an unsubscribe function.

        Callbacks run on the event loop, inside the delivery flow: keep them quick. An exception in one
        is logged and does not affect the delivery.
        """
        return self._subscribers.subscribe(callback)

    def _publish(self, event: Event) -> None:
        self._subscribers.notify(event)

    # -- flows ------------------------------------------------------------------------------------

    def deliver(self, target: Target, message: Message) -> Flow:
        """Start delivering ``message`` to ``target`` (needs a running event loop).

        Raises ``SecretError`` (a ValueError) at once when the target's secret is unusable.
        """
        if self._closed:
            raise RuntimeError("The delivery engine is closed.")
        parse_secret(target.secret)
        loop = asyncio.get_running_loop()
        delivery = Flow(message, target)
        hold = self.clock.hold()  # before the task exists, so a virtual clock waits for it
        delivery.task = loop.create_task(
            self._run(delivery), name=f"deliver {message.id} -> {target.endpoint_id or target.url}"
        )
        flows = self._flows.setdefault(target.endpoint_id, set())
        flows.add(delivery)

        def finished(task: asyncio.Task[Any]) -> None:
            hold.release()
            flows.discard(delivery)
            if delivery.result is None:  # cancelled before it ever ran
                self._finish(delivery, "stopped")
            if not task.cancelled() and task.exception() is not None:
                log.error("delivery %r crashed", delivery, exc_info=task.exception())

        delivery.task.add_done_callback(finished)
        return delivery

    def flows(self, endpoint_id: str | None = None) -> list[Flow]:
        """Flows still running (to one endpoint, or to all when ``endpoint_id`` is None)."""
        if endpoint_id is None:
            return [d for group in self._flows.values() for d in group if not d.done]
        return [d for d in self._flows.get(endpoint_id, ()) if not d.done]

    def cancel(self, endpoint_id: str | None) -> int:
        """Stop every flow to ``endpoint_id`` (disabled or removed), sleeping retries included.

        ``None`` stops the ad-hoc flows. Returns how many flows were stopped.
        """
        flows = [d for d in self._flows.get(endpoint_id, ()) if not d.done]
        for delivery in flows:
            delivery.task.cancel()
        return len(flows)

    async def wait_idle(self) -> None:
        """Wait until no flow is running (flows started meanwhile are waited for too)."""
        while True:
            tasks = [d.task for d in self.flows()]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop every flow and close the HTTP client."""
        self._closed = True
        tasks = [d.task for d in self.flows()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _run(self, delivery: Flow) -> DeliveryResult:
        offset = 0.0
        try:
            for index, wait in enumerate(self.waits):
                number = index + 1
                if number > 1:
                    await self.clock.sleep(wait)
                    offset += wait
                attempt, service_duration = await self._attempt(delivery, number, offset)
                delivery.attempts.append(attempt)
                self.attempts.append(attempt)
                self._publish(attempt)
                if attempt.ok:
                    return self._finish(delivery, "delivered")
                offset += service_duration
            return self._finish(delivery, "failed")
        except asyncio.CancelledError:
            self._finish(delivery, "stopped")
            raise

    def _finish(self, delivery: Flow, state: DeliveryState) -> DeliveryResult:
        if delivery.result is not None:
            return delivery.result
        result = DeliveryResult(
            message_id=delivery.message.id,
            topic=delivery.message.topic,
            endpoint_id=delivery.target.endpoint_id,
            url=delivery.target.url,
            state=state,
            attempts=len(delivery.attempts),
        )
        delivery.result = result
        self.results.append(result)
        self._publish(result)
        return result

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                transport=self._transport,
                # The deadline is enforced around the whole exchange; this is a backstop.
                timeout=httpx.Timeout(self.clock.real_timeout(self.deadline_s) + 5.0),
                follow_redirects=False,  # a redirect is not a 2xx: a failed attempt
                trust_env=False,  # never route local receivers through a proxy
                headers={"User-Agent": USER_AGENT},
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            )
        return self._http

    async def _attempt(
        self, delivery: Flow, number: int, offset: float
    ) -> tuple[SentAttempt, float]:
        """One POST; returns the record and the service time the exchange took."""
        message, target = delivery.message, delivery.target
        when = self.clock.wall()
        headers = sign(target.secret, message.id, message.body, when)
        headers["Content-Type"] = "application/json"
        loop = asyncio.get_running_loop()
        started = loop.time()
        status: int | None = None
        error: str | None = None
        detail = ""
        excerpt = b""
        try:
            async with asyncio.timeout(self.clock.real_timeout(self.deadline_s)):
                async with self._client().stream(
                    "POST", target.url, content=message.body, headers=headers
                ) as response:
                    status = response.status_code
                    detail = response.reason_phrase
                    async for chunk in response.aiter_bytes():
                        excerpt += chunk
                        if len(excerpt) >= EXCERPT_BYTES:
                            break
        except TimeoutError:  # recorded as the delivery's outcome
            status, error = None, TIMEOUT
            detail = f"no answer within {format_wait(self.deadline_s)}"
        except (httpx.HTTPError, OSError) as exc:  # recorded as the delivery's outcome
            if status is None:
                error = CONNECTION_ERROR
                detail = _describe_http_error(exc)
            else:
                # The status arrived but the body broke off: the answer never completed.
                status, error = None, CONNECTION_ERROR
                detail = f"answer broke off ({type(exc).__name__})"
        elapsed = loop.time() - started
        if error == TIMEOUT:
            service_duration = self.deadline_s
        else:
            service_duration = min(self.deadline_s, self.clock.exchange_seconds(elapsed))
        ok = status is not None and 200 <= status <= 299
        next_wait = None if ok or number >= len(self.waits) else self.waits[number]
        attempt = SentAttempt(
            message_id=message.id,
            topic=message.topic,
            endpoint_id=target.endpoint_id,
            url=target.url,
            number=number,
            max_attempts=len(self.waits),
            offset_s=offset,
            timestamp=when,
            status=status,
            error=error,
            detail=detail,
            elapsed_s=elapsed,
            next_wait_s=next_wait,
            response_excerpt=excerpt[:EXCERPT_BYTES].decode("utf-8", errors="replace"),
        )
        return attempt, service_duration


def _describe_http_error(exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "could not connect"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
