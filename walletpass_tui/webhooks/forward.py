"""Forward and replay stored deliveries to the user's own app, recording every answer.

* Forwarding (``listen --forward-to``) sends a verified delivery's raw body byte for byte with the
  original ``webhook-*`` headers and content type, so the app verifies the real signature with the
  real secret. With ``--ack stored`` forwards are queued in the store in the same transaction as the
  delivery and sent afterwards, in arrival order per target, retried with a backoff capped at a few
  seconds until they succeed or the user gives up; a restart resumes the queue. With
  ``--ack target`` the delivery is forwarded before the answer and the service gets the target's
  status, within a budget safely under the service's 15-second deadline.
* Both, and the check, carry what :mod:`walletpass_tui.webhooks.target_options` adds for a target:
  the user's headers (``--header``, after the request's own, never replacing
  one) and the certificates an https target may present (``--ca-bundle``, ``--insecure``).
* Replay sends a stored message again: ``original`` (the stored bytes and headers exactly, old
  timestamp included) or ``resign`` (same webhook-id, a fresh timestamp, signed with the endpoint's
  secret, as the service would send a retry). An edited body is always re-signed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from walletpass_tui import __version__
from walletpass_tui.api.http_failures import (
    TIMED_OUT,
    received,
    to_target,
    watched_transport,
    why_no_answer,
)
from walletpass_tui.api.urls import UrlError, check_url
from walletpass_tui.errors import WalletpassError
from walletpass_tui.text import printable
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import (
    ORIGINAL,
    REPLAY,
    RESIGN,
    RESPONSE_BODY_LIMIT,
    Attempt,
    ForwardResult,
    ForwardRow,
)
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.target_options import TargetOptions, Trust, with_added
from walletpass_tui.webhooks.verify import (
    HEADER_ID,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    SecretError,
    compute_signature,
    parse_secret,
    sign,
)

USER_AGENT = f"walletpass-tui/{__version__} (forwarding)"
# Headers carried over from the original delivery.
_KEPT_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature", "content-type")
DEFAULT_TIMEOUT_S = 10.0
# --ack target must answer the service well inside its 15 s deadline.
ACK_TARGET_BUDGET_S = 10.0
BACKOFF_START_S = 0.25
BACKOFF_CAP_S = 3.0
# Past this age the target would refuse the original timestamp (the usual tolerance is 300 s):
# a queued forward sent later is re-signed, as the service's own retry would be.
RESIGN_AFTER_S = 240
# On stop, a forward already sent gets this long to be answered and recorded: one cut off would
# be pending at the next start and sent again, a second copy the app has already taken.
STOP_GRACE_S = 5.0


class ForwardError(WalletpassError, ValueError):
    """A forward or replay cannot be made as asked; the message says why."""


@dataclass(frozen=True)
class Route:
    target: str
    topic: str | None = None  # None: every topic
    # Added headers and trusted certificates, for this target only.
    options: TargetOptions = field(default_factory=TargetOptions)

    def matches(self, topic: str | None) -> bool:
        return self.topic is None or self.topic == topic


def parse_route(text: str, options: TargetOptions | None = None) -> Route:
    """``URL`` or ``TOPIC=URL``; ``options``: what every forward to it carries."""
    options = options or TargetOptions()
    topic, sep, url = text.partition("=")
    if sep and not topic.startswith(("http://", "https://")):
        route = Route(target=url.strip(), topic=topic.strip(), options=options)
    else:
        route = Route(target=text.strip(), options=options)
    try:
        check_url(route.target, what="The --forward-to URL")
    except UrlError as error:
        raise ForwardError(
            f"{error} Give a URL like http://localhost:3000/webhooks, optionally TOPIC=URL."
        ) from None
    return route


def targets_for(routes: Iterable[Route], topic: str | None) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for route in routes:
        if route.matches(topic):
            seen.setdefault(route.target)
    return tuple(seen)


def target_client(trust: Trust | None = None) -> httpx.AsyncClient:
    """The client for the user's own app: it talks only to the URL it is given (no proxy from the
    environment, no redirect followed: a 3xx is recorded as the answer) and keeps no cookie an
    answer sets, so one request never carries what another's answer left. ``trust``: which
    certificates an https app may present (default: the usual public roots)."""
    verify = (trust or Trust()).verify()
    return httpx.AsyncClient(
        transport=watched_transport(trust_env=False, verify=verify),
        trust_env=False,
        follow_redirects=False,
        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
    )


def original_headers(attempt: Attempt) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT}
    for key, value in attempt.headers:
        if key.lower() in _KEPT_HEADERS:
            headers[key] = value
    return headers


async def send(
    client: httpx.AsyncClient,
    target: str,
    body: bytes | AsyncIterator[bytes],
    headers: Mapping[str, str] | Sequence[tuple[str, str]],
    timeout_s: float,
) -> ForwardResult:
    """POST once; the answer (its body read up to the store's limit), or why there was none, as
    a ForwardResult. Forwards, replays and the check all send through here. ``headers``: a pair
    given twice is sent twice."""
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    started = time.perf_counter()
    try:
        # httpx's timeout applies to each read; the deadline covers the whole answer, so an app
        # that trickles its response cannot hold --ack target past its budget.
        with received() as first:
            async with (
                asyncio.timeout(timeout_s),
                client.stream(
                    "POST", target, content=body, headers=pairs, timeout=timeout_s
                ) as response,
            ):
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= RESPONSE_BODY_LIMIT:
                        break
                return ForwardResult(
                    status=response.status_code,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    headers=tuple(response.headers.items()),
                    body=b"".join(chunks)[:RESPONSE_BODY_LIMIT],
                )
    except (httpx.HTTPError, TimeoutError) as exc:  # recorded as the forward's outcome
        failure = to_target(why_no_answer(exc, target, timeout_s, bytes(first)))
    return ForwardResult(
        status=None,
        latency_ms=(time.perf_counter() - started) * 1000,
        error=failure.text,
        no_connection=failure.kind.no_connection,
    )


def replay_request(
    attempt: Attempt,
    *,
    mode: str,
    secret: str | None,
    body: bytes | None = None,
    now: datetime | None = None,
) -> tuple[bytes, dict[str, str], str]:
    """(body, headers, mode actually used) for a replay of ``attempt``."""
    if body is not None and body != attempt.body:
        mode = "edited"
    if mode == ORIGINAL:
        return attempt.body, original_headers(attempt), ORIGINAL
    if not attempt.webhook_id:
        raise ForwardError(
            "This attempt has no webhook-id to re-sign; replay it with --mode original."
        )
    if not secret:
        raise ForwardError(no_secret_to_resign(attempt))
    payload = attempt.body if body is None else body
    headers = original_headers(attempt)
    for key in list(headers):
        if key.lower().startswith("webhook-"):
            del headers[key]
    headers.update(sign(secret, attempt.webhook_id, payload, now or datetime.now(UTC)))
    if not any(key.lower() == "content-type" for key in headers):
        # The original's own Content-Type (whatever its spelling) is kept as it was; adding a
        # second spelling would send the header twice, which apps refuse.
        headers["Content-Type"] = "application/json"
    return payload, headers, mode if mode == "edited" else RESIGN


def no_secret_to_resign(attempt: Attempt) -> str:
    """Why ``attempt`` cannot be re-signed, naming it: a verified one needs the secret that
    verified it given again; a rejected one was verified by none, so it takes a secret to sign
    it with, or is sent as it came."""
    shown = f"{printable(attempt.webhook_id or '-', 80)} #{attempt.attempt_no}"
    if attempt.verified:
        return (
            f"Re-signing {shown} needs the secret that verified it, and no secret known here "
            "made its signature: give it (WALLETPASS_SECRET, --secret-file or --secret -), "
            "import its endpoint, or use --mode original."
        )
    return (
        f"{shown} was rejected ({printable(attempt.reason, 80)}) and no secret known here made "
        "its signature, so there is none to re-sign it with: give one (WALLETPASS_SECRET, "
        "--secret-file or --secret -), or use --mode original to send it exactly as it came."
    )


async def replay(
    store: Store,
    attempt: Attempt,
    target: str,
    *,
    mode: str = RESIGN,
    secret: str | None = None,
    body: bytes | None = None,
    client: httpx.AsyncClient | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    options: TargetOptions | None = None,
) -> ForwardResult:
    """Send ``attempt`` again to ``target`` and record it in the message's history. ``options``:
    headers to add and the certificates to trust (those of ``client`` when one is given)."""
    options = options or TargetOptions()
    payload, headers, used = replay_request(attempt, mode=mode, secret=secret, body=body)
    own = client is None
    client = client or target_client(options.trust)
    try:
        result = await send(
            client, target, payload, with_added(headers, options.headers), timeout_s
        )
    finally:
        if own:
            await client.aclose()
    await store.add_forward_result(
        attempt,
        kind=REPLAY,
        mode=used,
        target=target,
        result=result,
        request_body=payload if used == "edited" else None,
    )
    return result


SecretLookup = Callable[[Attempt], str | None]


def secret_lookup(
    registry: EndpointRegistry, explicit: Sequence[str], test_secret: str | None = None
) -> SecretLookup:
    """The secret to re-sign an attempt with: the one that verified it, found again among the
    known secrets (those given, the endpoints', the home's test secret) by the signature it
    made, which the history keeps (the secret itself never is); else its endpoint's, or the only
    secret given."""

    def lookup(attempt: Attempt) -> str | None:
        known = [*explicit, *(e.secret.reveal() for e in registry.load())]
        if test_secret:
            known.append(test_secret)
        found = signed_by(attempt, known)
        if found is not None:
            return found
        if attempt.endpoint_id:
            endpoint = registry.get(attempt.endpoint_id)
            return endpoint.secret.reveal() if endpoint else None
        return explicit[0] if len(explicit) == 1 else None

    return lookup


def signed_by(attempt: Attempt, secrets: Sequence[str]) -> str | None:
    """The secret among ``secrets`` whose signature the attempt carries, or None."""
    headers = {name.lower(): value for name, value in attempt.headers}
    msg_id = headers.get(HEADER_ID, "")
    timestamp = headers.get(HEADER_TIMESTAMP, "").strip()
    entries = headers.get(HEADER_SIGNATURE, "").split(" ")
    if not (msg_id and timestamp and entries):
        return None
    for secret in dict.fromkeys(secrets):
        try:
            key = parse_secret(secret)
        except SecretError:  # not a secret: it verified nothing either
            continue
        if compute_signature(key, msg_id, timestamp, attempt.body) in entries:
            return secret
    return None


class Forwarder:
    """Sends queued forwards, one worker per target, in arrival order, until each succeeds."""

    def __init__(
        self,
        store: Store,
        routes: Sequence[Route],
        *,
        secret_for: SecretLookup | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        on_result: Callable[[ForwardRow, ForwardResult], None] | None = None,
    ) -> None:
        self.store = store
        self.routes = list(routes)
        self.secret_for = secret_for
        self.timeout_s = timeout_s
        self.backoff_cap_s = backoff_cap_s
        self.on_result = on_result
        # What each target named by a route carries; a target only an earlier run queued gets the
        # defaults (no added header: those were given for the targets named now).
        self._options: dict[str, TargetOptions] = {}
        for route in self.routes:
            self._options.setdefault(route.target, route.options)
        self._clients: dict[Trust, httpx.AsyncClient] = {}
        self._wake: dict[str, asyncio.Event] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._sending: set[str] = set()  # targets with a forward on the wire
        self._stopping = False
        self._unsubscribe: Callable[[], None] | None = None

    def targets(self, attempt: Attempt) -> tuple[str, ...]:
        return targets_for(self.routes, attempt.topic)

    def options(self, target: str) -> TargetOptions:
        return self._options.get(target) or TargetOptions()

    def _client(self, trust: Trust) -> httpx.AsyncClient:
        client = self._clients.get(trust)
        if client is None:
            client = self._clients[trust] = target_client(trust)
        return client

    async def _send(
        self, target: str, body: bytes, headers: dict[str, str], timeout_s: float
    ) -> ForwardResult:
        options = self.options(target)
        added = with_added(headers, options.headers)
        return await send(self._client(options.trust), target, body, added, timeout_s)

    async def start(self) -> None:
        """Resume every target with pending forwards (a restart resumes the queue) and listen."""
        self._stopping = False
        for target in {
            *(r.target for r in self.routes),
            *await self.store.pending_forward_targets(),
        }:
            self._ensure_worker(target)
        self._unsubscribe = self.store.subscribe(self._on_batch)

    async def stop(self) -> None:
        """Stop sending (what is pending stays queued for the next run); calling it again is fine.
        A forward on the wire gets STOP_GRACE_S to be answered and recorded first, so the app is
        not sent it again at the next start; no new one begins."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._stopping = True
        on_the_wire = [t for target, t in self._tasks.items() if target in self._sending]
        if on_the_wire:
            await asyncio.wait(on_the_wire, timeout=STOP_GRACE_S)
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await task
        self._tasks.clear()
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    def _on_batch(self, batch: Sequence[Attempt]) -> None:
        for attempt in batch:
            if attempt.verified:
                for target in self.targets(attempt):
                    self._ensure_worker(target).set()

    def _ensure_worker(self, target: str) -> asyncio.Event:
        event = self._wake.setdefault(target, asyncio.Event())
        if target not in self._tasks or self._tasks[target].done():
            self._tasks[target] = asyncio.create_task(self._work(target), name=f"forward {target}")
        return event

    async def _work(self, target: str) -> None:
        wake = self._wake[target]
        while not self._stopping:
            wake.clear()  # before looking: a delivery stored while we look sets it again
            row = await self.store.next_pending_forward(target)
            if row is None:
                await wake.wait()
                continue
            delay = (row.next_try_at_ms - int(time.time() * 1000)) / 1000
            if delay > 0:
                # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows the cancel
                # stop() sends when a delivery wakes the worker at the same moment (stop() would
                # then wait forever).
                with contextlib.suppress(TimeoutError):  # the retry's time came
                    async with asyncio.timeout(delay):
                        await wake.wait()
                wake.clear()
                continue
            if self._stopping:
                return
            self._sending.add(target)
            try:
                await self._try(row)
            finally:
                self._sending.discard(target)

    async def _try(self, row: ForwardRow) -> None:
        attempt = await self.store.attempt(row.attempt_id)
        if attempt is None:  # pruned meanwhile
            gone = ForwardResult(
                status=None, latency_ms=0, error="the delivery was pruned from the history"
            )
            await self.store.update_forward(row, gone, next_try_at_ms=None)
            return
        body, headers = attempt.body, original_headers(attempt)
        note = None
        age = time.time() - attempt.received_at_ms / 1000
        secret = self.secret_for(attempt) if self.secret_for else None
        if row.tries > 0 and age > RESIGN_AFTER_S and secret and attempt.webhook_id:
            body, headers, _ = replay_request(attempt, mode=RESIGN, secret=secret)
            note = "re-signed: the original timestamp had grown too old"
        result = await self._send(row.target, body, headers, self.timeout_s)
        if note:
            result = replace(result, note=note)
        next_try = None
        if not result.ok:
            wait = min(self.backoff_cap_s, BACKOFF_START_S * (2**row.tries))
            next_try = int((time.time() + wait) * 1000)
        await self.store.update_forward(row, result, next_try_at_ms=next_try)
        if self.on_result is not None:
            self.on_result(row, result)

    async def forward_now(
        self, attempt: Attempt, budget_s: float = ACK_TARGET_BUDGET_S
    ) -> tuple[str, ForwardResult] | None:
        """``--ack target``: forward before answering; (target, result) of the first target."""
        targets = self.targets(attempt)
        if not targets:
            return None
        target = targets[0]
        result = await self._send(target, attempt.body, original_headers(attempt), budget_s)
        return target, result


def ack_status(result: ForwardResult, budget_s: float) -> tuple[int, str]:
    """The status the service gets under ``--ack target``, and a note saying why."""
    if result.status is not None:
        return result.status, f"ack target: the app answered {result.status}"
    if result.error and result.error.startswith(TIMED_OUT):
        return 504, f"ack target: the app did not answer within {budget_s:g} s"
    return 502, f"ack target: {result.error}"
