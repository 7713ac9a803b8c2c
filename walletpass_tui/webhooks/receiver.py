"""The embedded webhook receiver: POST -> limits -> verify -> store (durable) -> answer.

It runs on the caller's event loop (aiohttp ``AppRunner`` + ``TCPSite``), so the dashboard hosts it
in-process and ``listen`` runs it headless. Every request that reaches it is recorded, including
rejected ones (bounded by the store), so a misconfigured sender can be debugged from the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from aiohttp import web

from walletpass_tui.endpoints import EndpointRegistry
from walletpass_tui.webhooks.body_fields import labels
from walletpass_tui.webhooks.sources import SourcePolicy
from walletpass_tui.webhooks.store import REJECTED, VERIFIED, Attempt, Store, StoreError
from walletpass_tui.webhooks.verify import SigningKey, verify

DEFAULT_READ_TIMEOUT_S = 10.0
MAX_HEADER_BYTES = 16 * 1024


class ReceiverError(Exception):
    """The receiver cannot start (the port is taken, say); the message says what to do."""


@dataclass
class Injection:
    """Deliberate failures, to watch a sender's retry schedule. Mutable while running."""

    fail_first: int = 0  # answer 500 to the first N attempts of each message
    respond_status: int | None = None  # answer every verified delivery with this status
    delay_s: float = 0.0  # wait this long before answering
    paused: bool = False  # answer 503 to verified deliveries until unpaused

    def decide(self, attempt: Attempt) -> Attempt:
        if not attempt.verified:
            return attempt
        if self.paused:
            return replace(attempt, status=503, note="injected: acknowledgements paused")
        if self.fail_first and attempt.attempt_no <= self.fail_first:
            return replace(
                attempt,
                status=500,
                note=f"injected: fail first {self.fail_first} (attempt {attempt.attempt_no})",
            )
        if self.respond_status is not None:
            return replace(
                attempt, status=self.respond_status, note=f"injected: respond {self.respond_status}"
            )
        return attempt

    @property
    def active(self) -> bool:
        return bool(
            self.paused or self.fail_first or self.respond_status is not None or self.delay_s
        )


@dataclass
class ReceiverOptions:
    host: str = "127.0.0.1"
    port: int = 8787
    path: str = "/webhooks"
    tolerance_s: float = 300
    max_body: int = 1024 * 1024
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    secrets: Sequence[SigningKey] = ()
    sources: SourcePolicy = field(default_factory=SourcePolicy)
    injection: Injection = field(default_factory=Injection)


class Receiver:
    def __init__(
        self,
        store: Store,
        options: ReceiverOptions,
        *,
        registry: EndpointRegistry | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.options = options
        self.registry = registry
        self._clock = clock
        self._runner: web.AppRunner | None = None
        self._registry_keys: list[SigningKey] = []
        self._registry_stamp: tuple[float, int] | None = None
        self.bound: tuple[str, int] | None = None
        # Called with a stored verified attempt before the answer goes out; returns the attempt
        # whose status is sent (``--ack target`` forwards first and answers with the target's).
        self.before_answer: Callable[[Attempt], Awaitable[Attempt]] | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.options.max_body)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def start(self) -> tuple[str, int]:
        """Bind and serve; returns the (host, port) actually bound (port 0 picks a free one)."""
        # aiohttp logs malformed requests (which it answers 400 itself) with a traceback on
        # stderr; a hostile sender must not be able to scribble over the terminal or the dashboard.
        logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
        runner = web.AppRunner(
            self.app(),
            access_log=None,
            handle_signals=False,
            shutdown_timeout=2.0,
            max_field_size=MAX_HEADER_BYTES,
            max_line_size=MAX_HEADER_BYTES,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.options.host, self.options.port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ReceiverError(self._bind_error(exc)) from None
        self._runner = runner
        server = site._server  # the asyncio server: read the port actually bound
        sockets: list[socket.socket] = list(getattr(server, "sockets", None) or [])
        port = sockets[0].getsockname()[1] if sockets else self.options.port
        self.bound = (self.options.host, port)
        return self.bound

    async def stop(self) -> None:
        """Stop accepting, finish requests in flight, release the port."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    @property
    def url(self) -> str:
        host, port = self.bound or (self.options.host, self.options.port)
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}{self.options.path}"

    def _bind_error(self, exc: OSError) -> str:
        where = f"{self.options.host}:{self.options.port}"
        if exc.errno in (98, 48):  # EADDRINUSE (Linux, macOS)
            return f"Port {self.options.port} is already in use on {self.options.host}; pick another with --port."
        if exc.errno in (13,):
            return f"Not allowed to listen on {where}; use a port above 1024."
        return f"Cannot listen on {where} ({exc.strerror or exc})."

    # -- keys ----------------------------------------------------------------------------------

    def keys(self) -> list[SigningKey]:
        """The explicit secrets plus those of endpoints known locally (re-read when the file changes)."""
        if self.registry is not None:
            try:
                stat = self.registry.path.stat()
                stamp = (stat.st_mtime, stat.st_size)
            except OSError:
                stamp = None
            if stamp != self._registry_stamp:
                self._registry_stamp = stamp
                try:
                    self._registry_keys = self.registry.signing_keys() if stamp else []
                except Exception:  # a damaged file: keep the keys we had
                    self._registry_keys = self._registry_keys
        return [*self.options.secrets, *self._registry_keys]

    # -- one request ---------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        received = self._clock()
        opts = self.options
        headers = tuple((k, v) for k, v in request.headers.items())
        peer = request.remote
        xff = request.headers.get("X-Forwarded-For")
        client = opts.sources.client_address(peer, xff)

        def attempt(
            status: int, reason: str, detail: str = "", body: bytes = b"", **kw: object
        ) -> Attempt:
            webhook_id = request.headers.get("webhook-id") or None
            return Attempt(
                received_at_ms=int(received.timestamp() * 1000),
                method=request.method,
                path=request.path_qs,
                headers=headers,
                body=body,
                verdict=REJECTED,
                reason=reason,
                detail=detail,
                status=status,
                webhook_id=webhook_id[:200] if webhook_id else None,
                remote_addr=peer,
                forwarded_for=xff,
                **kw,  # type: ignore[arg-type]
            )

        # Route: {path} or {path}/{endpoint_id}
        endpoint_id: str | None = None
        path = request.path
        if path.rstrip("/") != opts.path.rstrip("/"):
            prefix = opts.path.rstrip("/") + "/"
            rest = path[len(prefix) :] if path.startswith(prefix) else None
            if not rest or "/" in rest.rstrip("/"):
                return await self._reject(
                    attempt(404, "wrong path", f"post to {opts.path}"),
                    started,
                    f"Not found: post to {opts.path}",
                )
            endpoint_id = rest.rstrip("/")
        if request.method != "POST":
            return await self._reject(
                attempt(405, "method not allowed", request.method),
                started,
                "Method not allowed: webhooks are POSTed",
                headers={"Allow": "POST"},
            )
        if not opts.sources.allows(client):
            return await self._reject(
                attempt(403, "source not allowed", str(client)),
                started,
                f"Forbidden: {client} is not an allowed source",
            )

        # Body: bounded, never read past the limit, within the read timeout.
        declared = request.content_length
        if declared is not None and declared > opts.max_body:
            return await self._reject(
                attempt(
                    413, "body too large", f"{declared} bytes > {opts.max_body}", body_size=declared
                ),
                started,
                f"Payload too large: the limit is {opts.max_body} bytes",
                close=True,
            )
        try:
            async with asyncio.timeout(opts.read_timeout_s):
                body = await _read_bounded(request, opts.max_body)
        except TimeoutError:
            return await self._reject(
                attempt(
                    408, "request timed out", f"body not received within {opts.read_timeout_s:g} s"
                ),
                started,
                "Request timeout: the body did not arrive in time",
                close=True,
            )
        except _TooLarge as exc:
            return await self._reject(
                attempt(
                    413, "body too large", f"more than {opts.max_body} bytes", body_size=exc.size
                ),
                started,
                f"Payload too large: the limit is {opts.max_body} bytes",
                close=True,
            )

        # Verify.
        keys = self.keys()
        if endpoint_id is not None:
            keys = [k for k in keys if k.endpoint_id == endpoint_id]
        verdict = verify(request.headers, body, keys, now=received, tolerance_s=opts.tolerance_s)
        if not verdict.ok and endpoint_id is not None and not keys:
            detail = f"no endpoint {endpoint_id} is known locally; import it with its secret"
        else:
            detail = verdict.detail
        topic, pass_id = labels(body)
        record = replace(
            attempt(
                verdict.status, verdict.reason.value, detail, body, topic=topic, pass_id=pass_id
            ),
            verdict=VERIFIED if verdict.ok else REJECTED,
            endpoint_id=verdict.endpoint_id or endpoint_id,
            body_size=len(body),
        )

        def finalize(numbered: Attempt) -> Attempt:
            decided = opts.injection.decide(numbered)
            return replace(decided, processing_ms=(time.perf_counter() - started) * 1000)

        try:
            stored = await self.store.record(record, finalize)
        except StoreError as exc:
            return web.Response(status=503, text=f"Service unavailable: not stored ({exc})")
        if stored.verified and self.before_answer is not None:
            stored = await self.before_answer(stored)
        if opts.injection.delay_s:
            await asyncio.sleep(opts.injection.delay_s)
        if stored.verified and 200 <= stored.status < 300:
            return web.Response(status=stored.status, text="OK: stored\n")
        text = stored.reason if not stored.verified else (stored.note or "refused")
        if stored.detail and not stored.verified:
            text = f"{text}: {stored.detail}"
        return web.Response(status=stored.status, text=_reason_text(stored.status, text))

    async def _reject(
        self,
        record: Attempt,
        started: float,
        text: str,
        *,
        headers: dict[str, str] | None = None,
        close: bool = False,
    ) -> web.Response:
        record = replace(record, processing_ms=(time.perf_counter() - started) * 1000)
        with contextlib.suppress(StoreError):
            await self.store.record(record)
        response = web.Response(status=record.status, text=text + "\n", headers=headers)
        if close:
            response.force_close()
        return response


def _reason_text(status: int, reason: str) -> str:
    label = {400: "Bad request", 401: "Unauthorized", 403: "Forbidden"}.get(status, "Refused")
    return f"{label}: {reason}\n"


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


async def _read_bounded(request: web.Request, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = await request.content.read(64 * 1024)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            raise _TooLarge(total)
        chunks.append(chunk)
    return b"".join(chunks)
