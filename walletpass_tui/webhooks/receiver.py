"""The embedded webhook receiver: route -> intake (method, source, bounded body, headers) ->
verify -> store (durable) -> answer.

It runs on the caller's event loop (``http_server``: a small HTTP/1.1 protocol over llhttp), so the
dashboard hosts it in-process and ``listen`` runs it headless. Every request that reaches it is recorded, including
rejected ones (bounded by the store), so a misconfigured sender can be debugged from the history.
The checks are ``intake.py``'s, the same for a POST, a relayed delivery (``accept``) and the relay's
ingress; the route, the keys, storing and answering are the receiver's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from walletpass_tui.webhooks.attempts import attempt_of
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.forward import ACK_TARGET_BUDGET_S, Forwarder, ack_status
from walletpass_tui.webhooks.http_server import HttpServer, Request, Response
from walletpass_tui.webhooks.injection import PAUSED_ANSWER, PAUSED_NOTE, Injection
from walletpass_tui.webhooks.intake import Intake, IntakeRequest
from walletpass_tui.webhooks.listening import (
    ReceiverError,
    ReceiverOptions,
    bind_error,
    listening_socket,
    receiver_url,
)
from walletpass_tui.webhooks.models import (
    CHECK_HEADER,
    FORWARD,
    ORIGINAL,
    VERIFIED,
    Attempt,
    ForwardResult,
    StoreError,
    check_copy_note,
    evolve,
)
from walletpass_tui.webhooks.reasons import Reason, Rejected
from walletpass_tui.webhooks.relayed import RelayedRequest
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey, Verdict

__all__ = ["Receiver"]

REGISTRY_CHECK_S = 1.0


class Receiver:
    """Serves ``options.path`` on the caller's event loop.

    ``bind()`` takes the port (a port in use fails there) and ``serve()`` starts accepting, so a
    dashboard can draw its first frame in between; ``start()`` does both. With a ``forwarder``
    verified deliveries are queued for it in the delivery's own transaction, or with
    ``ack_target`` forwarded before the answer, the sender getting the target's status.
    """

    def __init__(
        self,
        store: Store,
        options: ReceiverOptions,
        *,
        registry: EndpointRegistry | None = None,
        forwarder: Forwarder | None = None,
        ack_target: bool = False,
        ack_budget_s: float = ACK_TARGET_BUDGET_S,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.options = options
        self.registry = registry
        self.forwarder = forwarder
        self.ack_target = ack_target and forwarder is not None
        self.ack_budget_s = ack_budget_s
        self._injection = options.injection
        self._intake = Intake(options)
        self._clock = clock
        self._http: HttpServer | None = None
        self._server: asyncio.Server | None = None
        self._registry_keys: list[SigningKey] = []
        self._registry_stamp: tuple[int, int, int] | None = None
        self._registry_checked = -REGISTRY_CHECK_S
        self._keys: list[SigningKey] = list(options.secrets)
        self.bound: tuple[str, int] | None = None

    # -- failure injection ---------------------------------------------------------------------

    @property
    def injection(self) -> Injection:
        return self._injection

    def set_injection(self, injection: Injection) -> None:
        """Deliveries from now on are answered as ``injection`` says (the runtime's methods call it)."""
        self._injection = injection

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> tuple[str, int]:
        """Bind and serve; returns the (host, port) actually bound (port 0 picks a free one)."""
        bound = await self.bind()
        await self.serve()
        return bound

    async def bind(self, sock: socket.socket | None = None) -> tuple[str, int]:
        """Take the port without accepting yet; raises ReceiverError when it cannot be had.
        ``sock``: a socket already listening (``listening.listening_socket``) to serve on."""
        if self.bound is not None:
            return self.bound
        http = HttpServer(self._handle, read_timeout_s=self.options.read_timeout_s)
        try:
            # The socket listens from here on: a sender connecting before serve() waits in the
            # backlog and is answered once serving starts, instead of being refused.
            sock = sock or await listening_socket(self.options.host, self.options.port)
            listening = await http.bind(sock)
        except OSError as exc:
            raise ReceiverError(bind_error(self.options.host, self.options.port, exc)) from None
        self._http, self._server = http, listening
        sockets = list(listening.sockets)
        port = sockets[0].getsockname()[1] if sockets else self.options.port
        self.bound = (self.options.host, port)
        return self.bound

    async def serve(self) -> None:
        """Accept deliveries on the bound port (binding first if needed)."""
        if self._server is None:
            await self.bind()
        assert self._server is not None
        if not self._server.is_serving():
            await self._server.start_serving()

    @property
    def serving(self) -> bool:
        return self._server is not None and self._server.is_serving()

    async def stop(self) -> None:
        """Stop accepting, finish requests in flight, release the port."""
        http, self._http = self._http, None
        self._server = None
        if http is not None:
            await http.stop()
        self.bound = None

    @property
    def url(self) -> str:
        return receiver_url(self.options, self.bound)

    # -- keys ----------------------------------------------------------------------------------

    def keys(self, *, fresh: bool = False) -> list[SigningKey]:
        """The explicit secrets plus those of endpoints known locally (re-read when the file changes).

        The file is looked at no more than once a second, or at once when ``fresh`` (a delivery no
        key matched: an endpoint may just have been imported).
        """
        if self.registry is not None:
            now = time.monotonic()
            if not fresh and now - self._registry_checked < REGISTRY_CHECK_S:
                return self._keys
            self._registry_checked = now
            try:
                stat = self.registry.path.stat()
                stamp: tuple[int, int, int] | None = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            except OSError:  # no registry file: no stamp
                stamp = None
            if stamp != self._registry_stamp:
                self._registry_stamp = stamp
                try:
                    self._registry_keys = self.registry.signing_keys() if stamp else []
                except Exception:  # a damaged file: keep the keys we had
                    self._registry_keys = self._registry_keys
        self._keys = [*self.options.secrets, *self._registry_keys]
        return self._keys

    # -- one request: small steps; any of them may raise Rejected, caught in _handle -------------

    async def _handle(self, request: Request) -> Response:
        intake = self._intake
        arrived = IntakeRequest.from_http(request, self._clock(), time.perf_counter())
        from_check = self._from_check(arrived)
        try:
            endpoint_id = self._route(request.path)
            intake.check_head(arrived)
            body = await intake.read(arrived)
            record = self._verified(arrived, body, endpoint_id)
        except Rejected as rejection:  # kept as a rejected attempt and answered with its reason
            record = attempt_of(arrived, rejection.reason, rejection.detail, **rejection.record)
            if from_check:
                record = evolve(record, note=check_copy_note(record.note))
            return await self._reject(record, rejection)
        return await self._deliver(record, arrived.started, from_check=from_check)

    def _from_check(self, request: IntakeRequest) -> bool:
        """Whether ``check`` of this home sent ``request`` (it carries the home's check token):
        kept as the check's, not as a delivery."""
        token = self.options.check_token
        if token is None:
            return False
        given = request.headers.getall(CHECK_HEADER, [])
        sent = given[0].encode("utf-8", "surrogateescape") if len(given) == 1 else b""
        return hmac.compare_digest(sent, token.encode())

    def _route(self, path: str) -> str | None:
        """``{path}`` (None) or ``{path}/{endpoint_id}``."""
        base = self.options.path.rstrip("/")
        if path.rstrip("/") == base:
            return None
        rest = path[len(base) + 1 :] if path.startswith(base + "/") else None
        if not rest or "/" in rest.rstrip("/"):
            where = f"post to {self.options.path}"
            raise Rejected(Reason.WRONG_PATH, where, answer=where)
        return rest.rstrip("/")

    def _verified(self, request: IntakeRequest, body: bytes, endpoint_id: str | None) -> Attempt:
        """The attempt to store for a verified delivery; raises Rejected with what was learnt."""
        _, detail, fields = self._signed(request, body, endpoint_id)
        return attempt_of(request, Reason.OK, detail, verdict=VERIFIED, **fields)

    def _signed(
        self, request: IntakeRequest, body: bytes, endpoint_id: str | None
    ) -> tuple[Verdict, str, dict[str, Any]]:
        """The verdict, its detail and the attempt's fields known so far; raises Rejected."""
        verdict = self._verify(request, body, endpoint_id)
        detail = verdict.detail
        if verdict.reason is Reason.NO_SECRET and endpoint_id is not None:
            detail = f"no endpoint {endpoint_id} is known locally; import it with its secret"
        fields: dict[str, Any] = {
            "body": body,
            "endpoint_id": verdict.endpoint_id or endpoint_id,
            "body_size": len(body),
        }
        if not verdict.ok:
            raise Rejected(verdict.reason, detail, record=fields)
        return verdict, detail, fields

    async def accept(self, relayed: RelayedRequest) -> Attempt:
        """A delivery that came another way (a relay): the same intake, verify, store and forward
        steps as a POST, the timestamp checked against ``relayed.received_at``. Its source was
        the relay's to check (a relayed delivery brings no socket of this door's). Returns the
        stored attempt (verified or rejected); raises StoreError when it could not be stored.
        Failure injection and ``--ack target`` are about answering a sender and do not apply."""
        started = time.perf_counter()
        arrived = relayed.intake_request(started)
        body = relayed.body
        try:
            self._intake.check_head(arrived)
            await self._intake.read(arrived)
            _, detail, fields = self._signed(arrived, body, None)
        except Rejected as rejection:  # the body is here whatever the reason: kept (bounded)
            fields = {"body": body, "body_size": len(body), **rejection.record}
            rejected = relayed.attempt(arrived, rejection.reason, rejection.detail, **fields)
            return await self.store.record(rejected)
        record = relayed.attempt(arrived, Reason.OK, detail, verdict=VERIFIED, **fields)
        queued = self.forwarder.targets(record) if self.forwarder is not None else ()
        return await self.store.record(record, forward_to=queued)

    async def _deliver(
        self, record: Attempt, started: float, *, from_check: bool = False
    ) -> Response:
        """Forward (``--ack target``) or queue forwards, store (commit), then answer."""
        injection = self._injection

        def finalize(numbered: Attempt) -> Attempt:
            decided = injection.decide(numbered)
            if from_check:  # answered as any delivery, kept as the check's
                decided = evolve(decided, note=check_copy_note(decided.note))
            return evolve(decided, processing_ms=(time.perf_counter() - started) * 1000)

        queued = self.forwarder.targets(record) if self.forwarder is not None else ()
        forwarded: tuple[str, ForwardResult] | None = None
        if self.ack_target and queued and self.forwarder is not None:
            # The first target's answer is the service's; any others are queued as usual.
            forwarded = await self.forwarder.forward_now(record, self.ack_budget_s)
            if forwarded is not None:
                status, note = ack_status(forwarded[1], self.ack_budget_s)
                record = replace(record, status=status, note=note)
                queued = queued[1:]
        try:
            stored = await self.store.record(record, finalize, forward_to=queued)
            if forwarded is not None:
                target, result = forwarded
                await self.store.add_forward_result(
                    stored, kind=FORWARD, mode=ORIGINAL, target=target, result=result
                )
        except StoreError as exc:  # answered 503 with its reason; the store reports it
            return Response(503, f"Service unavailable: not stored ({exc})")
        if injection.delay_s:
            await asyncio.sleep(injection.delay_s)
        if 200 <= stored.status < 300:
            return Response(stored.status, "OK: stored\n")
        if stored.note is not None and stored.note.endswith(PAUSED_NOTE):
            return Response(stored.status, PAUSED_ANSWER)
        return Response(stored.status, f"Refused: {stored.note or 'refused'}\n")

    def _verify(self, request: IntakeRequest, body: bytes, endpoint_id: str | None) -> Verdict:
        """``{path}`` is checked against every key, ``{path}/{endpoint_id}`` only against its own."""
        for fresh in (False, True):
            keys = self.keys(fresh=fresh)
            if endpoint_id is not None:
                keys = [k for k in keys if k.endpoint_id == endpoint_id]
            verdict = self._intake.verify(request, body, keys)
            if verdict.reason not in (Reason.NO_MATCH, Reason.NO_SECRET) or self.registry is None:
                break
        return verdict

    async def _reject(self, record: Attempt, rejection: Rejected) -> Response:
        """Record the rejected request (a store failure does not change the answer) and answer."""
        with contextlib.suppress(StoreError):  # the store reports it; the answer is the same
            await self.store.record(record)
        headers = tuple(rejection.headers.items()) if rejection.headers else ()
        return Response(rejection.status, rejection.answer_text(), headers, close=rejection.close)
