"""The simulator's HTTP face: the two documented API calls and the ``/_sim`` control API.

``make_app(service)`` builds the aiohttp application for a
:class:`~walletpass_tui.sim.service.SimulatedService`; every handler here only parses the request,
calls one of the service's public methods and answers JSON. Middlewares turn every error (aiohttp's
own 404, 405 and 413 included) into ``{"error": {"type": ..., "message": ...}}`` and require the
bearer key on every path.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from walletpass_tui.sim.endpoints import UnknownEndpointError, validate_create_body
from walletpass_tui.sim.events import TOPICS, templates_response
from walletpass_tui.text import parse_ascii_int

if TYPE_CHECKING:
    from collections.abc import Sized

    from walletpass_tui.sim.endpoints import SimEndpoint
    from walletpass_tui.sim.engine import DeliveryEngine, Message


class Served(Protocol):
    """What the handlers ask of the service they serve (``service.SimulatedService``)."""

    @property
    def api_key(self) -> str: ...

    @property
    def engine(self) -> DeliveryEngine: ...

    @property
    def max_body(self) -> int: ...

    @property
    def messages(self) -> Sized: ...

    @property
    def endpoints(self) -> list[SimEndpoint]: ...

    def add_endpoint(
        self, url: str, topics: Sequence[str], enabled: bool = True
    ) -> SimEndpoint: ...

    def publish(self, topic: str, body: Any = None) -> tuple[Message, list[str]]: ...

    def set_enabled(self, ep_id: str, enabled: bool) -> SimEndpoint: ...

    def remove(self, ep_id: str) -> SimEndpoint: ...


# The service's logger, as before the routes had their own module (log filters name it).
log = logging.getLogger("walletpass_tui.sim.service")

TEMPLATES_PATH = "/api/v0/passTemplates"
ENDPOINTS_PATH = "/v0/webhookEndpoints"
CONTROL_PREFIX = "/_sim"
MAX_BODY = 256 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_STATUS_KIND = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


class _Invalid(ValueError):
    pass


class _Unsupported(ValueError):
    pass


def _error(status: int, kind: str, message: str, **headers: str) -> web.Response:
    return web.json_response(
        {"error": {"type": kind, "message": message}}, status=status, headers=headers or None
    )


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("application/json", "application/*", "*/*") or media.endswith("+json"):
            return True
    return False


def _not_json(content_type: str) -> _Unsupported:
    return _Unsupported(
        f"Send the body as JSON with Content-Type: application/json (got {content_type or 'none'})."
    )


def make_app(service: Served) -> web.Application:
    """The aiohttp application serving ``service`` (both of the spec's hosts on one port)."""
    return _Routes(service).app()


class _Routes:
    """The request handlers, bound to one service."""

    def __init__(self, service: Served) -> None:
        self.service = service

    def app(self) -> web.Application:
        app = web.Application(
            client_max_size=self.service.max_body, middlewares=[self._errors, self._auth]
        )
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
                413: f"The request body is larger than {self.service.max_body} bytes.",
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
        if not hmac.compare_digest(token.strip().encode(), self.service.api_key.encode()):
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
            raise _not_json(request.content_type)
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
                raise _not_json(request.content_type)
            payload = await self._json_body(request, required=True)
            url, topics, enabled = validate_create_body(payload)
        except _Unsupported as exc:  # answered 415 with its reason
            return _error(415, "unsupported_media_type", str(exc))
        except ValueError as exc:  # answered 400 with its reason
            return _error(400, "invalid_request", str(exc))
        endpoint = self.service.add_endpoint(url, topics, enabled)
        return web.json_response(endpoint.created_json(), status=201)

    # -- the control API --------------------------------------------------------------------------

    async def _status(self, request: web.Request) -> web.Response:
        service = self.service
        return web.json_response(
            {
                "service": "walletpass-tui simulated Wallet Pass Service",
                "timeScale": service.engine.time_scale,
                "endpoints": len(service.endpoints),
                "messages": len(service.messages),
                "inFlight": len(service.engine.flows()),
                "attempts": len(service.engine.attempts),
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
            message, endpoint_ids = self.service.publish(topic, payload.get("body"))
        except _Unsupported as exc:  # answered 415 with its reason
            return _error(415, "unsupported_media_type", str(exc))
        except _Invalid as exc:  # answered 400 with its reason
            return _error(400, "invalid_request", str(exc))
        return web.json_response(
            {"messageId": message.id, "topic": topic, "endpoints": endpoint_ids}, status=202
        )

    async def _list_endpoints(self, request: web.Request) -> web.Response:
        return web.json_response({"data": [ep.public_json() for ep in self.service.endpoints]})

    async def _enable(self, request: web.Request) -> web.Response:
        return self._set(request, True)

    async def _disable(self, request: web.Request) -> web.Response:
        return self._set(request, False)

    def _set(self, request: web.Request, enabled: bool) -> web.Response:
        try:
            endpoint = self.service.set_enabled(request.match_info["id"], enabled)
        except UnknownEndpointError as exc:  # answered 404 with its reason
            return _error(404, "not_found", str(exc))
        return web.json_response(endpoint.public_json())

    async def _remove(self, request: web.Request) -> web.Response:
        try:
            endpoint = self.service.remove(request.match_info["id"])
        except UnknownEndpointError as exc:  # answered 404 with its reason
            return _error(404, "not_found", str(exc))
        return web.json_response({"removed": endpoint.id})

    async def _deliveries(self, request: web.Request) -> web.Response:
        attempts: Sequence[Any] = list(self.service.engine.attempts)
        message = request.query.get("messageId")
        endpoint = request.query.get("endpointId")
        if message:
            attempts = [a for a in attempts if a.message_id == message]
        if endpoint:
            attempts = [a for a in attempts if a.endpoint_id == endpoint]
        limit = parse_ascii_int(request.query.get("limit", "1000"), max_digits=9)
        if limit is None:
            return _error(
                400,
                "invalid_request",
                "limit must be a whole number (the digits 0-9, at most 9 of them).",
            )
        shown = attempts[-limit:] if limit else []
        return web.json_response({"data": [a.to_json() for a in shown], "total": len(attempts)})
