"""The simulated Wallet Pass Service: the two documented API calls, a control API, and delivery.

Served on one port (both of the spec's hosts point at it):

* ``GET  /api/v0/passTemplates`` (base_url) and ``POST /v0/webhookEndpoints`` (registration_url),
  exactly as spec section 4 shows them: ``Authorization: Bearer <key>`` is required (401 otherwise),
  answers are JSON, the create body is validated (400 with a JSON message), and 201 returns the
  endpoint with its ``ep_`` id, ``whsec_`` secret and millisecond ``createdAt``. The sim accepts
  ``http://`` URLs too, so a local receiver can be the target.
* The control API under ``/_sim`` (same bearer key): emit an event, enable/disable/remove an
  endpoint, list endpoints (secrets masked) and the delivery log. This API is the simulator's own.

The error body shape ``{"error": {"type": ..., "message": ...}}`` is the simulator's invention: the
spec leaves the service's error format open (section 7).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from aiohttp import web

from walletpass_tui.config import mask_secret
from walletpass_tui.sim.clock import Clock
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
    templates_response,
)

log = logging.getLogger(__name__)

TEMPLATES_PATH = "/api/v0/passTemplates"
ENDPOINTS_PATH = "/v0/webhookEndpoints"
CONTROL_PREFIX = "/_sim"
CREATE_FIELDS = ("enabledTopics", "enabled", "url")
MAX_BODY = 256 * 1024
MAX_URL_LENGTH = 2048


class SimError(Exception):
    """The simulator cannot do what was asked; the message says why."""


class UnknownEndpointError(SimError, LookupError):
    """No endpoint with that id (it was never created, or was removed)."""


@dataclass
class SimEndpoint:
    """A webhook endpoint as the simulator stores it."""

    id: str
    url: str
    enabled_topics: tuple[str, ...]
    enabled: bool
    secret: str = field(repr=False)
    created_at: str  # ISO 8601 UTC with milliseconds, as returned

    def created_json(self) -> dict[str, Any]:
        """The create response (spec section 2): the only time the secret is returned."""
        return {
            "id": self.id,
            "url": self.url,
            "enabledTopics": list(self.enabled_topics),
            "enabled": self.enabled,
            "secret": self.secret,
            "createdAt": self.created_at,
        }

    def public_json(self) -> dict[str, Any]:
        """For the control API: the secret masked."""
        data = self.created_json()
        data["secret"] = mask_secret(self.secret)
        return data


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be an endpoint URL for the sim: it needs an http(s) scheme and a host."""
    if not isinstance(url, str):
        return "url must be a string."
    if not url or len(url) > MAX_URL_LENGTH:
        return f"url must be an http or https URL of at most {MAX_URL_LENGTH} characters."
    if re.search(r"[\s\x00-\x1f\x7f]", url):
        return "url must not contain spaces or control characters."
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        return "url is not a valid URL."
    if parts.scheme not in ("http", "https") or not host:
        return "url must be an http or https URL with a host, e.g. https://example.com/webhooks."
    return None


def validate_create_body(payload: Any) -> tuple[str, tuple[str, ...], bool]:
    """(url, topics, enabled) from a create body, or ValueError with one sentence."""
    if not isinstance(payload, dict):
        raise ValueError(
            "The request body must be a JSON object with enabledTopics, enabled and url."
        )
    unknown = [k for k in payload if k not in CREATE_FIELDS]
    if unknown:
        raise ValueError(
            f"Unknown field(s): {', '.join(unknown)}; the allowed fields are enabledTopics, "
            "enabled and url."
        )
    missing = [k for k in CREATE_FIELDS if k not in payload]
    if missing:
        raise ValueError(f"Missing required field(s): {', '.join(missing)}.")
    topics = payload["enabledTopics"]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise ValueError("enabledTopics must be an array of topic strings.")
    if not topics:
        raise ValueError(
            "enabledTopics must name at least one topic (pass.activated, pass.deactivated)."
        )
    for topic in topics:
        if topic not in TOPICS:
            raise ValueError(
                f"Unknown topic {topic!r} in enabledTopics; the allowed topics are "
                "pass.activated and pass.deactivated."
            )
    repeated = sorted({t for t in topics if topics.count(t) > 1})
    if repeated:
        raise ValueError(f"The topic {repeated[0]} appears more than once in enabledTopics.")
    enabled = payload["enabled"]
    if not isinstance(enabled, bool):
        raise ValueError("enabled must be a boolean (true or false).")
    problem = url_problem(payload["url"])
    if problem:
        raise ValueError(problem)
    return payload["url"], tuple(topics), enabled


def _error(status: int, kind: str, message: str, **headers: str) -> web.Response:
    return web.json_response(
        {"error": {"type": kind, "message": message}}, status=status, headers=headers or None
    )


_STATUS_KIND = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("application/json", "application/*", "*/*") or media.endswith("+json"):
            return True
    return False


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Every delivery Attempt and DeliveryResult (see DeliveryEngine.subscribe)."""
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
        app = web.Application(client_max_size=self.max_body, middlewares=[self._errors, self._auth])
        app.router.add_get(TEMPLATES_PATH, self._templates)
        app.router.add_post(ENDPOINTS_PATH, self._create_endpoint)
        app.router.add_get(CONTROL_PREFIX, self._status)
        app.router.add_post(f"{CONTROL_PREFIX}/events", self._emit)
        app.router.add_get(f"{CONTROL_PREFIX}/endpoints", self._list_endpoints)
        app.router.add_post(f"{CONTROL_PREFIX}/endpoints/{{id}}/enable", self._enable)
        app.router.add_post(f"{CONTROL_PREFIX}/endpoints/{{id}}/disable", self._disable)
        app.router.add_delete(f"{CONTROL_PREFIX}/endpoints/{{id}}", self._remove)
        app.router.add_get(f"{CONTROL_PREFIX}/deliveries", self._deliveries)
        return app

    # -- middlewares ------------------------------------------------------------------------------

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every error answer is JSON, aiohttp's own (404, 405, 413) included."""
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            kind = _STATUS_KIND.get(exc.status, "error")
            message = {
                404: f"No such path: {request.method} {request.path}.",
                405: f"{request.method} is not allowed on {request.path}.",
                413: f"The request body is larger than {self.max_body} bytes.",
            }.get(exc.status, exc.reason)
            return _error(exc.status, kind, message)
        except Exception:
            log.exception("simulator error on %s %s", request.method, request.path)
            return _error(500, "internal", "The simulator failed; see its log.")

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if not header or scheme.lower() != "bearer" or not token.strip():
            return _error(
                401,
                "unauthorized",
                "Missing API key: send the header Authorization: Bearer <API key>.",
                **{"WWW-Authenticate": "Bearer"},
            )
        if not hmac.compare_digest(token.strip().encode(), self.api_key.encode()):
            return _error(
                401,
                "unauthorized",
                "The API key is not valid.",
                **{"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        if not _accepts_json(request.headers.get("Accept")):
            return _error(
                406, "not_acceptable", "This API answers only with JSON (Accept: application/json)."
            )
        return await handler(request)

    async def _json_body(self, request: web.Request, *, required: bool) -> Any:
        raw = await request.read()
        if not raw.strip():
            if required:
                raise _Invalid(
                    "The request body must be a JSON object with enabledTopics, enabled and url."
                )
            return None
        if request.content_type != "application/json":
            raise _Unsupported(
                "Send the body as JSON with Content-Type: application/json "
                f"(got {request.content_type or 'none'})."
            )
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _Invalid(f"The request body is not valid JSON ({exc}).") from None

    # -- the documented API -----------------------------------------------------------------------

    async def _templates(self, request: web.Request) -> web.Response:
        return web.json_response(templates_response())

    async def _create_endpoint(self, request: web.Request) -> web.Response:
        try:
            if request.content_type != "application/json":
                raise _Unsupported(
                    "Send the body as JSON with Content-Type: application/json "
                    f"(got {request.content_type or 'none'})."
                )
            payload = await self._json_body(request, required=True)
            url, topics, enabled = validate_create_body(payload)
        except _Unsupported as exc:
            return _error(415, "unsupported_media_type", str(exc))
        except ValueError as exc:
            return _error(400, "invalid_request", str(exc))
        endpoint = SimEndpoint(
            id=self._unique_endpoint_id(),
            url=url,
            enabled_topics=topics,
            enabled=enabled,
            secret=new_secret(),
            created_at=iso_millis(self.engine.clock.wall()),
        )
        self._endpoints[endpoint.id] = endpoint
        log.info("created endpoint %s -> %s", endpoint.id, endpoint.url)
        return web.json_response(endpoint.created_json(), status=201)

    def _unique_endpoint_id(self) -> str:
        while True:
            ep_id = endpoint_id()
            if ep_id not in self._endpoints:
                return ep_id

    # -- the control API --------------------------------------------------------------------------

    async def _status(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "service": "walletpass-tui simulated Wallet Pass Service",
                "timeScale": self.engine.time_scale,
                "endpoints": len(self._endpoints),
                "messages": len(self.messages),
                "inFlight": len(self.engine.flows()),
                "attempts": len(self.engine.attempts),
            }
        )

    async def _emit(self, request: web.Request) -> web.Response:
        try:
            payload = await self._json_body(request, required=True)
            if not isinstance(payload, dict):
                raise _Invalid('Send a JSON object like {"topic": "pass.activated"}.')
            unknown = [k for k in payload if k not in ("topic", "body")]
            if unknown:
                raise _Invalid(
                    f"Unknown field(s): {', '.join(unknown)}; the allowed fields are topic and body."
                )
            topic = payload.get("topic")
            if topic not in TOPICS:
                raise _Invalid(f"topic must be pass.activated or pass.deactivated, not {topic!r}.")
            message, endpoint_ids = self.publish(topic, payload.get("body"))
        except _Unsupported as exc:
            return _error(415, "unsupported_media_type", str(exc))
        except _Invalid as exc:
            return _error(400, "invalid_request", str(exc))
        return web.json_response(
            {"messageId": message.id, "topic": topic, "endpoints": endpoint_ids}, status=202
        )

    async def _list_endpoints(self, request: web.Request) -> web.Response:
        return web.json_response({"data": [ep.public_json() for ep in self._endpoints.values()]})

    async def _enable(self, request: web.Request) -> web.Response:
        return self._set(request, True)

    async def _disable(self, request: web.Request) -> web.Response:
        return self._set(request, False)

    def _set(self, request: web.Request, enabled: bool) -> web.Response:
        try:
            endpoint = self.set_enabled(request.match_info["id"], enabled)
        except UnknownEndpointError as exc:
            return _error(404, "not_found", str(exc))
        return web.json_response(endpoint.public_json())

    async def _remove(self, request: web.Request) -> web.Response:
        try:
            endpoint = self.remove(request.match_info["id"])
        except UnknownEndpointError as exc:
            return _error(404, "not_found", str(exc))
        return web.json_response({"removed": endpoint.id})

    async def _deliveries(self, request: web.Request) -> web.Response:
        attempts: Sequence[Any] = list(self.engine.attempts)
        message = request.query.get("messageId")
        endpoint = request.query.get("endpointId")
        if message:
            attempts = [a for a in attempts if a.message_id == message]
        if endpoint:
            attempts = [a for a in attempts if a.endpoint_id == endpoint]
        limit_text = request.query.get("limit", "1000")
        if not limit_text.isdigit():
            return _error(400, "invalid_request", "limit must be a whole number.")
        limit = int(limit_text)
        shown = attempts[-limit:] if limit else []
        return web.json_response({"data": [a.to_json() for a in shown], "total": len(attempts)})


class _Invalid(ValueError):
    pass


class _Unsupported(ValueError):
    pass
