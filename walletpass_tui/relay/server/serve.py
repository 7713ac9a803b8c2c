"""The relay process: one aiohttp server for ingress, subscribers and ``/healthz``.

``RelayServer(options)`` opens the database (``options.database``: a PostgreSQL URL, else a
SQLite file, by default in the data directory), creating or upgrading its schema, starts its
writer, binds, and prunes deliveries older than the retention period once at start and then every
``prune_every_s`` (on PostgreSQL one process at a time). ``stop()`` ends the streams, finishes
requests in flight, commits what is queued and closes the database.

While the database cannot be reached, ingress answers 503 with ``Retry-After`` (every 503 of
ingress carries one, so the service retries) and ``/healthz`` says so with a 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TextIO

from aiohttp import web

from walletpass_tui.errors import WalletpassError
from walletpass_tui.relay.server.channels import public_base
from walletpass_tui.relay.server.fanout import Fanouts
from walletpass_tui.relay.server.ingress import INGRESS_PREFIX, Ingress, IngressOptions
from walletpass_tui.relay.server.request_lines import RequestLines, what_was_asked
from walletpass_tui.relay.server.storage import open_storage
from walletpass_tui.relay.server.storage.base import RelayStorage
from walletpass_tui.relay.server.storage.errors import RETRY_AFTER_S, RelayStoreError
from walletpass_tui.relay.server.storage.target import database_target
from walletpass_tui.relay.server.subscribe import (
    CHANNELS_PREFIX,
    DEFAULT_HEARTBEAT_S,
    DEFAULT_MAX_CHANNEL_SUBSCRIBERS,
    DEFAULT_MAX_SUBSCRIBERS,
    Subscriptions,
    health,
)
from walletpass_tui.text import format_duration
from walletpass_tui.webhooks.http_server import MAX_FIELD_BYTES

DEFAULT_RELAY_HOST = "0.0.0.0"  # noqa: S104 - a relay is reached from the internet
DEFAULT_RELAY_PORT = 8080
DEFAULT_RETENTION_DAYS = 7
PRUNE_EVERY_S = 3600.0
PUBLIC_URL_META = "public_url"
DATABASE_WAIT_S = 30.0  # how long a starting relay waits for a PostgreSQL server to answer

log = logging.getLogger(__name__)

_STARTED = "walletpass.started"  # a request's perf_counter when it arrived
_SHOWN = "walletpass.shown"  # its line is printed (a stream's, as it opened)


class RelayError(WalletpassError):
    """The relay cannot start; the message says what to do."""


@dataclass
class RelayOptions:
    home: Path
    database: str | None = None  # a postgresql:// URL, a SQLite file, or None: home's file
    host: str = DEFAULT_RELAY_HOST
    port: int = DEFAULT_RELAY_PORT
    public_url: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    retention_days: float = DEFAULT_RETENTION_DAYS
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS
    max_channel_subscribers: int = DEFAULT_MAX_CHANNEL_SUBSCRIBERS
    prune_every_s: float = PRUNE_EVERY_S
    ingress: IngressOptions = field(default_factory=IngressOptions)
    request_lines: TextIO | None = None  # one line per request (relay serve: its terminal)


class RelayServer:
    def __init__(
        self, options: RelayOptions, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.options = options
        self._clock = clock  # when a post arrived (None: this machine's clock)
        self.bound: tuple[str, int] | None = None
        self._runner: web.BaseRunner | None = None
        self._prune_task: asyncio.Task[None] | None = None
        self.storage: RelayStorage | None = None
        self.fanouts: Fanouts | None = None
        self.ingress: Ingress | None = None
        self.subscriptions: Subscriptions | None = None
        self.pruned = 0
        self.clock_off = False  # this machine's clock is off the database's by more than tolerance
        self.lines = RequestLines(options.request_lines)

    @property
    def scheme(self) -> str:
        return "https" if self.options.tls_cert else "http"

    @property
    def url(self) -> str:
        host, port = self.bound or (self.options.host, self.options.port)
        if host in ("0.0.0.0", "::", ""):  # noqa: S104 - shown as a loopback URL
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"{self.scheme}://{host}:{port}"

    def public_url(self, request: web.BaseRequest | None = None) -> str:
        if self.options.public_url:
            return public_base(self.options.public_url)
        if request is not None:
            return f"{request.scheme}://{request.host}"
        return self.url

    def _ssl(self) -> ssl.SSLContext | None:
        cert, key = self.options.tls_cert, self.options.tls_key
        if not cert and not key:
            return None
        if not cert or not key:
            raise RelayError("TLS needs both --tls-cert and --tls-key.")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as exc:
            raise RelayError(f"Cannot load the TLS certificate or key ({exc}).") from None
        return context

    async def start(self) -> tuple[str, int]:
        """Open the database, start its writer, bind and serve; whatever fails after the
        database is opened (a bad public URL, the database lost, the port in use) gives it and
        everything started back before raising."""
        opts = self.options
        context = self._ssl()
        try:
            target = database_target(opts.database, opts.home)
            self.storage = storage = await open_storage(target, wait_s=DATABASE_WAIT_S)
        except RelayStoreError as exc:
            raise RelayError(str(exc)) from None
        try:
            return await self._serve(storage, context)
        except RelayStoreError as exc:
            await self.stop()
            raise RelayError(str(exc)) from None
        except BaseException:
            await self.stop()
            raise

    async def _serve(
        self, storage: RelayStorage, context: ssl.SSLContext | None
    ) -> tuple[str, int]:
        opts = self.options
        if opts.public_url:
            await storage.set_meta(PUBLIC_URL_META, public_base(opts.public_url))
        self.fanouts = fanouts = Fanouts(storage)
        fanouts.load(await storage.channels(counts=False))
        await storage.serve(fanouts)
        if self._clock is None:
            self.ingress = Ingress(fanouts, storage, opts.ingress)
        else:
            self.ingress = Ingress(fanouts, storage, opts.ingress, clock=self._clock)
        self.subscriptions = Subscriptions(
            fanouts,
            storage,
            public_url=self.public_url,
            heartbeat_s=opts.heartbeat_s,
            max_subscribers=opts.max_subscribers,
            max_channel_subscribers=opts.max_channel_subscribers,
            on_stream=self._stream_opened if self.lines.on else None,
        )
        logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
        server = web.Server(
            self._handle,
            access_log=None,
            max_field_size=MAX_FIELD_BYTES,
            max_line_size=MAX_FIELD_BYTES,
            keepalive_timeout=opts.ingress.read_timeout_s,
            lingering_time=0,
            # A peer that hangs up ends its handler at once: a closed stream frees its place
            # under the subscriber limits now, not at its next heartbeat.
            handler_cancellation=True,
        )
        self._runner = runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, opts.host, opts.port, ssl_context=context, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            raise RelayError(self._bind_error(exc)) from None
        sockets: list[socket.socket] = list(getattr(site._server, "sockets", None) or [])
        port = sockets[0].getsockname()[1] if sockets else opts.port
        self.bound = (opts.host, port)
        self._prune_task = asyncio.create_task(self._prune_loop(), name="relay-prune")
        return self.bound

    async def stop(self) -> None:
        if self._prune_task is not None:
            self._prune_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await self._prune_task
            self._prune_task = None
        if self.subscriptions is not None:
            await self.subscriptions.close()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        await self._close_storage()
        await asyncio.to_thread(self.lines.close)

    async def _close_storage(self) -> None:
        if self.fanouts is not None:
            self.fanouts.close()
        if self.storage is not None:
            storage, self.storage = self.storage, None
            await storage.close()

    async def prune(self) -> int | None:
        """Delete what is older than the retention period; how many deliveries went, or None
        when another relay process on the same database is pruning now."""
        assert self.storage is not None
        removed = await self.storage.prune(int(self.options.retention_days * 86_400_000))
        if removed is None:
            return None
        self.pruned += removed
        if self.fanouts is not None:
            await self.fanouts.refresh(older_than=0)
        return removed

    async def check_clock(self) -> None:
        """Say (once per change) when this machine's clock is further from the database's than
        the signature tolerance: received times and pruning go by the database's, but every
        post's signature is checked against this clock, so the service's would be refused."""
        assert self.storage is not None
        offset_ms = await self.storage.clock_offset_ms()
        tolerance_ms = self.options.ingress.tolerance_s * 1000
        off = abs(offset_ms) > tolerance_ms
        if off == self.clock_off:
            return
        self.clock_off = off
        if off:
            way = "behind" if offset_ms > 0 else "ahead of"
            log.warning(
                "relay: this machine's clock is %s %s the database's; posts are checked against "
                "it, so the service's signatures are refused as too old or too new: set this "
                "machine's clock (NTP). Received times and pruning go by the database's clock, "
                "so nothing stored is lost.",
                _how_far(abs(offset_ms) / 1000),
                way,
            )
        else:
            log.warning("relay: this machine's clock agrees with the database's again")

    async def _prune_loop(self) -> None:
        while True:
            try:
                await self.prune()
            except Exception as exc:  # keep serving; say why once per round
                log.warning("relay: pruning failed (%s)", type(exc).__name__)
            try:
                await self.check_clock()
            except Exception as exc:  # keep serving; the next round asks again
                log.info("relay: the database's clock was not read (%s)", type(exc).__name__)
            await asyncio.sleep(self.options.prune_every_s)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if not self.lines.on:
            return await self._answer(request)
        request[_STARTED] = started = time.perf_counter()
        try:
            response = await self._answer(request)
        except Exception:
            self._line(request, 500, started)  # aiohttp answers 500 and logs it
            raise
        if not request.get(_SHOWN):
            self._line(request, response.status, started)
        return response

    def _stream_opened(self, request: web.BaseRequest) -> None:
        request[_SHOWN] = True
        self._line(request, 200, request[_STARTED], "stream opened")

    def _line(self, request: web.BaseRequest, status: int, started: float, note: str = "") -> None:
        assert self.fanouts is not None
        what = what_was_asked(request.path, self.fanouts.name_of)
        ms = (time.perf_counter() - started) * 1000
        self.lines.add(request.method, what, status, ms, note)

    async def _answer(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        if path.startswith(INGRESS_PREFIX):
            assert self.ingress is not None
            try:
                response = await self.ingress.handle(request)
            except RelayStoreError:  # the channel could not be looked up
                response = web.Response(
                    status=503,
                    text="Service unavailable: the relay's database cannot be reached now; "
                    "retry shortly\n",
                )
            if response.status == 503 and "Retry-After" not in response.headers:
                # Not stored: the service retries after this long.
                response.headers["Retry-After"] = str(RETRY_AFTER_S)
            return response
        if path.startswith(CHANNELS_PREFIX):
            assert self.subscriptions is not None
            return await self.subscriptions.handle(request)
        if path == "/healthz" and request.method in ("GET", "HEAD"):
            assert self.fanouts is not None and self.storage is not None
            return health(self.fanouts, self.storage)
        return web.Response(status=404, text="Not found\n")

    def _bind_error(self, exc: OSError) -> str:
        opts = self.options
        if exc.errno in (98, 48):
            return f"Port {opts.port} is already in use on {opts.host}; pick another with --port."
        if exc.errno == 13:
            return f"Not allowed to listen on {opts.host}:{opts.port}; use a port above 1024."
        return f"Cannot listen on {opts.host}:{opts.port} ({exc.strerror or exc})."


def _how_far(seconds: float) -> str:
    """``8.0 days`` for a clock days off, ``4 min 10 s`` for one minutes off."""
    return f"{seconds / 86400:.1f} days" if seconds >= 2 * 86400 else format_duration(seconds)
