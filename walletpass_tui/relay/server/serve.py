"""The relay process: one aiohttp server for ingress, subscribers and ``/healthz``.

``RelayServer(options)`` opens the database (its own file in the data directory), starts the
writer thread, binds, and prunes deliveries older than the retention period once at start and
then every ``prune_every_s``. ``stop()`` ends the streams, finishes requests in flight, commits
what is queued and closes the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from walletpass_tui.errors import WalletpassError
from walletpass_tui.relay.server.channels import public_base
from walletpass_tui.relay.server.fanout import Feeds
from walletpass_tui.relay.server.ingress import INGRESS_PREFIX, Ingress, IngressOptions
from walletpass_tui.relay.server.storage import RelayDB, database_path, now_ms
from walletpass_tui.relay.server.subscribe import (
    CHANNELS_PREFIX,
    DEFAULT_HEARTBEAT_S,
    DEFAULT_MAX_CHANNEL_SUBSCRIBERS,
    DEFAULT_MAX_SUBSCRIBERS,
    Subscriptions,
    health,
)
from walletpass_tui.relay.server.writer import RelayWriter, prune_before
from walletpass_tui.webhooks.http_server import MAX_FIELD_BYTES

DEFAULT_RELAY_HOST = "0.0.0.0"  # noqa: S104 - a relay is reached from the internet
DEFAULT_RELAY_PORT = 8080
DEFAULT_RETENTION_DAYS = 7
PRUNE_EVERY_S = 3600.0
PUBLIC_URL_META = "public_url"

log = logging.getLogger(__name__)


class RelayError(WalletpassError):
    """The relay cannot start; the message says what to do."""


@dataclass
class RelayOptions:
    home: Path
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


class RelayServer:
    def __init__(self, options: RelayOptions) -> None:
        self.options = options
        self.bound: tuple[str, int] | None = None
        self._runner: web.BaseRunner | None = None
        self._prune_task: asyncio.Task[None] | None = None
        self.db: RelayDB | None = None
        self.writer: RelayWriter | None = None
        self.feeds: Feeds | None = None
        self.ingress: Ingress | None = None
        self.subscriptions: Subscriptions | None = None
        self.pruned = 0

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
        opts = self.options
        context = self._ssl()
        loop = asyncio.get_running_loop()
        path = database_path(opts.home)
        self.db = RelayDB(path)
        if opts.public_url:
            self.db.set_meta(PUBLIC_URL_META, public_base(opts.public_url))
        self.feeds = feeds = Feeds(self.db)
        feeds.load(self.db.channels(counts=False))
        self.writer = RelayWriter(
            path, lambda stored: loop.call_soon_threadsafe(feeds.on_commit, stored)
        )
        self.ingress = Ingress(feeds, self.writer, opts.ingress)
        self.subscriptions = Subscriptions(
            feeds,
            self.db,
            public_url=self.public_url,
            heartbeat_s=opts.heartbeat_s,
            max_subscribers=opts.max_subscribers,
            max_channel_subscribers=opts.max_channel_subscribers,
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
        runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, opts.host, opts.port, ssl_context=context, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            self._close_storage()
            raise RelayError(self._bind_error(exc)) from None
        self._runner = runner
        sockets: list[socket.socket] = list(getattr(site._server, "sockets", None) or [])
        port = sockets[0].getsockname()[1] if sockets else opts.port
        self.bound = (opts.host, port)
        self._prune_task = asyncio.create_task(self._prune_loop(), name="relay-prune")
        return self.bound

    async def stop(self) -> None:
        if self._prune_task is not None:
            self._prune_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._prune_task
            self._prune_task = None
        if self.subscriptions is not None:
            await self.subscriptions.close()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        await asyncio.to_thread(self._close_storage)

    def _close_storage(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.db is not None:
            self.db.close()
            self.db = None

    async def prune(self) -> int:
        """Delete what is older than the retention period; how many deliveries went."""
        assert self.writer is not None
        cutoff = now_ms() - int(self.options.retention_days * 86_400_000)
        removed = int(await self.writer.submit(prune_before(cutoff)))
        self.pruned += removed
        if self.feeds is not None:
            await self.feeds.refresh(older_than=0)
        return removed

    async def _prune_loop(self) -> None:
        while True:
            try:
                await self.prune()
            except Exception as exc:  # keep serving; say why once per round
                log.warning("relay: pruning failed (%s)", type(exc).__name__)
            await asyncio.sleep(self.options.prune_every_s)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        if path.startswith(INGRESS_PREFIX):
            assert self.ingress is not None
            return await self.ingress.handle(request)
        if path.startswith(CHANNELS_PREFIX):
            assert self.subscriptions is not None
            return await self.subscriptions.handle(request)
        if path == "/healthz" and request.method in ("GET", "HEAD"):
            assert self.feeds is not None
            return health(self.feeds)
        return web.Response(status=404, text="Not found\n")

    def _bind_error(self, exc: OSError) -> str:
        opts = self.options
        if exc.errno in (98, 48):
            return f"Port {opts.port} is already in use on {opts.host}; pick another with --port."
        if exc.errno == 13:
            return f"Not allowed to listen on {opts.host}:{opts.port}; use a port above 1024."
        return f"Cannot listen on {opts.host}:{opts.port} ({exc.strerror or exc})."
