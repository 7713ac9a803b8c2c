"""The simulated Wallet Pass Service: the two documented API calls, a control API, and delivery.

Served on one port (both of the spec's hosts point at it):

* ``GET  /api/v0/passTemplates`` (base_url) and ``POST /v0/webhookEndpoints`` (registration_url),
  exactly as spec section 4 shows them: ``Authorization: Bearer <key>`` is required (401 otherwise),
  answers are JSON, the create body is validated (400 with a JSON message), and 201 returns the
  endpoint with its ``ep_`` id, ``whsec_`` secret and millisecond ``createdAt``. The sim accepts
  ``http://`` URLs too, so a local receiver can be the target.
* The control API under ``/_sim`` (same bearer key): emit an event, enable/disable/remove an
  endpoint, list endpoints (secrets masked) and the delivery log. This API is the simulator's own.

The HTTP side lives in :mod:`walletpass_tui.sim.http_api`, the endpoint record and the create-body
checks in :mod:`walletpass_tui.sim.endpoints`, the delivery engine and its retry schedule in
:mod:`walletpass_tui.sim.engine`; only ``SimulatedService`` is imported from here.

The error body shape ``{"error": {"type": ..., "message": ...}}`` is the simulator's invention: the
spec leaves the service's error format open (section 7).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from aiohttp import web

from walletpass_tui.sim.clock import Clock
from walletpass_tui.sim.endpoints import (
    SimEndpoint,
    SimError,
    UnknownEndpointError,
)
from walletpass_tui.sim.engine import (
    DeliveryEngine,
    Message,
    Subscriber,
    Target,
)
from walletpass_tui.sim.events import (
    TOPICS,
    endpoint_id,
    event_body,
    iso_millis,
    new_api_key,
    new_secret,
)
from walletpass_tui.sim.http_api import (
    MAX_BODY,
    make_app,
)

__all__ = ["SimulatedService"]

log = logging.getLogger(__name__)


class SimulatedService:
    """The simulated service. ``start()`` serves it on the running event loop.

    ``time_scale`` scales every retry wait and the 15-s answer deadline (min 1 s); ``clock`` (a
    :class:`~walletpass_tui.sim.clock.FakeClock`, say) replaces the scaled clock entirely.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        time_scale: float = 1.0,
        clock: Clock | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_body: int = MAX_BODY,
    ) -> None:
        self.api_key = api_key or new_api_key()
        self.engine = DeliveryEngine(time_scale=time_scale, clock=clock, transport=transport)
        self.max_body = max_body
        self.messages: deque[Message] = deque(maxlen=10_000)
        self._endpoints: dict[str, SimEndpoint] = {}
        self._runner: web.AppRunner | None = None
        self.url: str | None = None

    def __repr__(self) -> str:
        return f"SimulatedService(url={self.url!r}, endpoints={len(self._endpoints)})"

    async def __aenter__(self) -> SimulatedService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- in-process control -----------------------------------------------------------------------

    @property
    def endpoints(self) -> list[SimEndpoint]:
        return list(self._endpoints.values())

    def endpoint(self, ep_id: str) -> SimEndpoint:
        try:
            return self._endpoints[ep_id]
        except KeyError:
            raise UnknownEndpointError(f"No endpoint {ep_id!r} in the simulator.") from None

    def add_endpoint(self, url: str, topics: Sequence[str], enabled: bool = True) -> SimEndpoint:
        """Create an endpoint as ``POST /v0/webhookEndpoints`` does (new ``ep_`` id and secret).

        The arguments are trusted: the HTTP route checks them with ``validate_create_body`` first.
        """
        endpoint = SimEndpoint(
            id=self._unique_endpoint_id(),
            url=url,
            enabled_topics=tuple(topics),
            enabled=enabled,
            secret=new_secret(),
            created_at=iso_millis(self.engine.clock.wall()),
        )
        self._endpoints[endpoint.id] = endpoint
        log.info("created endpoint %s -> %s", endpoint.id, endpoint.url)
        return endpoint

    def _unique_endpoint_id(self) -> str:
        while True:
            ep_id = endpoint_id()
            if ep_id not in self._endpoints:
                return ep_id

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Every delivery SentAttempt and DeliveryResult (see DeliveryEngine.subscribe)."""
        return self.engine.subscribe(callback)

    def emit(self, topic: str, body: Any = None) -> str:
        """Send an event to every enabled endpoint subscribed to ``topic``; returns its message id.

        ``body``: None makes a plausible one (sim.events.event_body); bytes/str are sent as they are;
        anything else is serialized as JSON. Needs a running event loop.
        """
        return self.publish(topic, body)[0].id

    def publish(self, topic: str, body: Any = None) -> tuple[Message, list[str]]:
        """Like :meth:`emit`, returning the message and the ids of the endpoints it goes to."""
        if topic not in TOPICS:
            raise ValueError(f"Unknown topic {topic!r}; the service knows {', '.join(TOPICS)}.")
        if body is None:
            body = event_body(topic, when=self.engine.clock.wall())
        message = Message.new(topic, body)
        self.messages.append(message)
        targets = [
            ep for ep in self._endpoints.values() if ep.enabled and topic in ep.enabled_topics
        ]
        for ep in targets:
            self.engine.deliver(Target(ep.url, ep.secret, ep.id), message)
        log.info("event %s %s -> %d endpoint(s)", message.id, topic, len(targets))
        return message, [ep.id for ep in targets]

    def set_enabled(self, ep_id: str, enabled: bool) -> SimEndpoint:
        """Enable or disable an endpoint; disabling stops its deliveries, sleeping retries included."""
        endpoint = self.endpoint(ep_id)
        endpoint.enabled = bool(enabled)
        stopped = 0 if endpoint.enabled else self.engine.cancel(ep_id)
        log.info(
            "endpoint %s %s%s",
            ep_id,
            "enabled" if endpoint.enabled else "disabled",
            f" ({stopped} delivery flow(s) stopped)" if stopped else "",
        )
        return endpoint

    def remove(self, ep_id: str) -> SimEndpoint:
        """Remove an endpoint; its deliveries stop, sleeping retries included."""
        endpoint = self.endpoint(ep_id)
        del self._endpoints[ep_id]
        stopped = self.engine.cancel(ep_id)
        log.info(
            "endpoint %s removed%s",
            ep_id,
            f" ({stopped} delivery flow(s) stopped)" if stopped else "",
        )
        return endpoint

    async def wait_idle(self) -> None:
        """Wait until no delivery is in progress."""
        await self.engine.wait_idle()

    # -- serving ----------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on ``host:port`` (0: any free port); returns the base URL (``http://host:port``)."""
        if self._runner is not None:
            raise SimError("The simulator is already running.")
        runner = web.AppRunner(
            self.make_app(), access_log=None, shutdown_timeout=0.5, handler_cancellation=True
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise SimError(
                f"The simulator cannot listen on {host}:{port} ({exc.strerror or exc}); "
                "pick another --port."
            ) from None
        self._runner = runner
        actual_host, actual_port = runner.addresses[0][:2]
        shown = host if host not in ("", "0.0.0.0", "::") else actual_host  # noqa: S104
        if ":" in shown and not shown.startswith("["):
            shown = f"[{shown}]"
        self.url = f"http://{shown}:{actual_port}"
        return self.url

    async def stop(self) -> None:
        """Stop every delivery and the server."""
        await self.engine.aclose()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    def make_app(self) -> web.Application:
        """The aiohttp application serving this simulator (see :mod:`walletpass_tui.sim.http_api`)."""
        return make_app(self)
