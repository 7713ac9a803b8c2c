"""Receivers people write, right and wrong, as aiohttp handlers for the check to judge.

Each is a small, honest version of a real mistake: the check must tell them apart by their answers
alone.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable

from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SLEEP_S = 16.0  # past the service's 15 s


def _headers(request: web.Request) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


def _expected(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def correct(secret: str = SECRET) -> Handler:
    """The standardwebhooks package over the raw body: what the spec asks for."""
    hook = Webhook(secret)

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        try:
            hook.verify(body, _headers(request))
        except (WebhookVerificationError, ValueError):
            return web.Response(status=401, text="invalid signature")
        return web.Response(status=204)

    return handle


def accepts_everything(secret: str = SECRET) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.Response(text="ok")

    return handle


def reserializes(secret: str = SECRET) -> Handler:
    """Parses the JSON first (as a web framework does) and verifies ``json.dumps`` of it."""
    hook = Webhook(secret)

    async def handle(request: web.Request) -> web.StreamResponse:
        doc = await request.json()
        again = json.dumps(doc, separators=(",", ":"))
        try:
            hook.verify(again, _headers(request))
        except (WebhookVerificationError, ValueError):
            return web.Response(status=401, text="invalid signature")
        return web.Response(status=200)

    return handle


def first_entry_only(secret: str = SECRET) -> Handler:
    """Compares only the first entry of webhook-signature (and checks the timestamp)."""
    hook = Webhook(secret)

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = _headers(request)
        try:
            hook.verify(body, headers)  # only for the headers and the timestamp ...
        except WebhookVerificationError as exc:
            if "signature" not in str(exc).lower():
                return web.Response(status=400, text=str(exc))
        first = headers.get("webhook-signature", "").split(" ")[0]
        want = _expected(
            secret, headers.get("webhook-id", ""), headers.get("webhook-timestamp", ""), body
        )
        if not hmac.compare_digest(first, want):
            return web.Response(status=401, text="invalid signature")
        return web.Response(status=200)

    return handle


def ignores_timestamp(secret: str = SECRET) -> Handler:
    """Verifies every v1 entry over the raw body, but never looks at the timestamp's age."""

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        h = _headers(request)
        if not (h.get("webhook-id") and h.get("webhook-timestamp") and h.get("webhook-signature")):
            return web.Response(status=400, text="missing headers")
        want = _expected(secret, h["webhook-id"], h["webhook-timestamp"], body)
        if any(hmac.compare_digest(e, want) for e in h["webhook-signature"].split(" ")):
            return web.Response(status=200)
        return web.Response(status=401, text="invalid signature")

    return handle


def fails_duplicates(secret: str = SECRET) -> Handler:
    """Correct, except that a webhook-id it has seen makes its insert fail: 500."""
    verify = correct(secret)
    seen: set[str] = set()

    async def handle(request: web.Request) -> web.StreamResponse:
        answer = await verify(request)
        msg_id = request.headers.get("webhook-id", "")
        if answer.status < 300:
            if msg_id in seen:
                return web.Response(status=500, text="UNIQUE constraint failed: events.id")
            seen.add(msg_id)
        return answer

    return handle


def sleeps(secret: str = SECRET) -> Handler:
    """Does its slow work before answering: 16 s, past the service's deadline."""

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        await asyncio.sleep(SLEEP_S)
        return web.Response(status=200)

    return handle


def slow_but_in_time(delay_s: float) -> Callable[[str], Handler]:
    """Correct, but takes ``delay_s`` before every answer."""

    def make(secret: str = SECRET) -> Handler:
        verify = correct(secret)

        async def handle(request: web.Request) -> web.StreamResponse:
            answer = await verify(request)
            await asyncio.sleep(delay_s)
            return answer

        return handle

    return make
