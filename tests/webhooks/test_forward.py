"""Forwarding and replay against a real target app on 127.0.0.1 that verifies signatures itself.

The target verifies every request with the ``standardwebhooks`` package (``Webhook.verify``), as a
user's app would, and records the raw body and headers it got.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from multidict import CIMultiDict
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from walletpass_tui.webhooks.endpoints import EndpointRegistry
from walletpass_tui.webhooks.forward import (
    ACK_TARGET_BUDGET_S,
    Forwarder,
    ForwardError,
    Route,
    ack_status,
    parse_route,
    replay,
    replay_request,
    targets_for,
)
from walletpass_tui.webhooks.receiver import Receiver, ReceiverOptions
from walletpass_tui.webhooks.store import (
    DONE,
    FAILED,
    FORWARD,
    ORIGINAL,
    PENDING,
    REPLAY,
    RESIGN,
    VERIFIED,
    Attempt,
    ForwardResult,
    Store,
)
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"f" * 32).decode()


def body_for(topic: str, pass_id: str = "pass_0001") -> bytes:  # noqa: S107
    return f'{{"type": "{topic}", "data": {{"passId": "{pass_id}"}}}}'.encode()


def signed(msg_id: str, body: bytes, ts: datetime | None = None) -> dict[str, str]:
    headers = sign(SECRET, msg_id, body, ts or datetime.now(UTC))
    headers["content-type"] = "application/json; charset=utf-8"
    return headers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Got:
    body: bytes
    headers: CIMultiDict[str]
    verified: bool
    error: str | None


@dataclass
class TargetApp:
    """The user's app: verifies with standardwebhooks, answers ``status`` after ``delay``."""

    port: int = 0
    status: int = 200
    delay: float = 0.0
    got: list[Got] = field(default_factory=list)
    runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            Webhook(SECRET).verify(body, dict(request.headers))
            verified, error = True, None
        except WebhookVerificationError as exc:
            verified, error = False, str(exc)
        self.got.append(Got(body, CIMultiDict(request.headers), verified, error))
        if self.delay:
            await asyncio.sleep(self.delay)
        if not verified:
            return web.Response(status=400, text=f"bad signature: {error}")
        return web.Response(status=self.status, text="thanks", headers={"X-Target": "yes"})

    async def start(self) -> TargetApp:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self.runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = self.runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


@dataclass
class Env:
    path: Path
    store: Store
    registry: EndpointRegistry
    client: httpx.AsyncClient
    targets: list[TargetApp]
    receivers: list[Receiver]
    forwarders: list[Forwarder]

    async def target(self, **kw: object) -> TargetApp:
        app = await TargetApp(**kw).start()  # type: ignore[arg-type]
        self.targets.append(app)
        return app

    async def receiver(
        self,
        routes: list[Route],
        *,
        ack_target: bool = False,
        ack_budget_s: float = ACK_TARGET_BUDGET_S,
        **fw: object,
    ) -> Receiver:
        forwarder = Forwarder(self.store, routes, **fw)  # type: ignore[arg-type]
        receiver = Receiver(
            self.store,
            ReceiverOptions(secrets=[SigningKey.from_secret(SECRET)], port=0),
            registry=self.registry,
            forwarder=forwarder,
            ack_target=ack_target,
            ack_budget_s=ack_budget_s,
        )
        await forwarder.start()
        await receiver.start()
        self.receivers.append(receiver)
        self.forwarders.append(forwarder)
        return receiver

    async def post(self, receiver: Receiver, msg_id: str, body: bytes) -> httpx.Response:
        return await self.client.post(receiver.url, content=body, headers=signed(msg_id, body))

    async def shutdown(self) -> None:
        for receiver in self.receivers:
            await receiver.stop()
        for forwarder in self.forwarders:
            await forwarder.stop()
        self.receivers.clear()
        self.forwarders.clear()


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    path = tmp_path / "h" / "deliveries.sqlite3"
    store = await Store.open(path)
    registry = EndpointRegistry(tmp_path / "h" / "endpoints.json")
    async with httpx.AsyncClient(timeout=10) as client:
        e = Env(path, store, registry, client, [], [], [])
        yield e
        await e.shutdown()
        for target in e.targets:
            await target.stop()
    await e.store.close()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def stored_attempt(store: Store, msg_id: str) -> Attempt:
    attempts = await store.message_attempts(msg_id)
    assert attempts, msg_id
    return attempts[-1]


# -- routes ---------------------------------------------------------------------------------------


def test_parse_route_plain_topic_and_query_urls() -> None:
    assert parse_route("http://localhost:3000/webhooks") == Route("http://localhost:3000/webhooks")
    assert parse_route("pass.activated=http://x:1/a") == Route("http://x:1/a", "pass.activated")
    # An '=' inside the URL's query is not a topic.
    assert parse_route("http://x/h?a=b") == Route("http://x/h?a=b")
    for bad in ("localhost:3000", "pass.activated=ftp://x", "", "t=http://"):
        with pytest.raises(ForwardError):
            parse_route(bad)
    routes = [Route("http://a/"), Route("http://b/", "pass.activated"), Route("http://a/", "x")]
    assert targets_for(routes, "pass.activated") == ("http://a/", "http://b/")
    assert targets_for(routes, "pass.deactivated") == ("http://a/",)


# -- forwarding -----------------------------------------------------------------------------------


async def test_forward_sends_raw_bytes_and_original_headers_and_records_the_answer(
    env: Env,
) -> None:
    target = await env.target()
    receiver = await env.receiver([Route(target.url)])
    # Odd but valid JSON spacing and non-ASCII text: the bytes must arrive untouched.
    body = '{"type":"pass.activated",  "data": {"passId": "pass_ü", "n": 1.50}}\n'.encode()
    headers = signed("msg_fwd", body)
    answer = await env.client.post(receiver.url, content=body, headers=headers)
    assert answer.status_code == 200

    async def done() -> bool:
        rows = await env.store.forwards_for_message("msg_fwd")
        return bool(rows) and rows[0].state == DONE

    await eventually(done)
    assert len(target.got) == 1
    got = target.got[0]
    assert got.verified, got.error
    assert got.body == body
    for key in ("webhook-id", "webhook-timestamp", "webhook-signature", "content-type"):
        assert got.headers[key] == headers[key]
    [row] = await env.store.forwards_for_message("msg_fwd")
    assert (row.kind, row.mode, row.target, row.status, row.tries) == (
        FORWARD,
        ORIGINAL,
        target.url,
        200,
        1,
    )
    assert row.latency_ms is not None and row.latency_ms > 0
    assert ("x-target", "yes") in [(k.lower(), v) for k, v in row.response_headers]
    assert row.response_body == b"thanks"
    assert row.error is None and row.finished_at_ms is not None


async def test_rejected_deliveries_are_not_forwarded(env: Env) -> None:
    target = await env.target()
    receiver = await env.receiver([Route(target.url)])
    headers = signed("msg_bad", b"{}")
    headers["webhook-signature"] = "v1," + base64.b64encode(b"x" * 32).decode()
    answer = await env.client.post(receiver.url, content=b"{}", headers=headers)
    assert answer.status_code == 401
    await asyncio.sleep(0.1)
    assert target.got == [] and await env.store.pending_forward_count() == 0


async def test_per_topic_routing(env: Env) -> None:
    one, two = await env.target(), await env.target()
    receiver = await env.receiver(
        [parse_route(f"pass.activated={one.url}"), parse_route(f"pass.deactivated={two.url}")]
    )
    assert (await env.post(receiver, "msg_a", body_for("pass.activated"))).status_code == 200
    assert (await env.post(receiver, "msg_d", body_for("pass.deactivated"))).status_code == 200
    assert (await env.post(receiver, "msg_o", body_for("pass.updated"))).status_code == 200

    async def both() -> bool:
        return len(one.got) == 1 and len(two.got) == 1

    await eventually(both)
    await asyncio.sleep(0.1)
    assert [g.headers["webhook-id"] for g in one.got] == ["msg_a"]
    assert [g.headers["webhook-id"] for g in two.got] == ["msg_d"]
    assert one.got[0].verified and two.got[0].verified
    assert await env.store.forwards_for_message("msg_o") == []


async def test_target_down_then_up_loses_nothing_and_keeps_order(env: Env) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    receiver = await env.receiver([Route(url)], backoff_cap_s=0.05)
    ids = [f"msg_{i}" for i in range(5)]
    for i, msg_id in enumerate(ids):
        answer = await env.post(receiver, msg_id, body_for("pass.activated", f"pass_{i}"))
        assert answer.status_code == 200  # --ack stored: the service never waits for the app

    async def tried() -> bool:
        rows = await env.store.forwards_for_message("msg_0")
        return bool(rows) and rows[0].tries >= 2

    await eventually(tried)
    [first] = await env.store.forwards_for_message("msg_0")
    assert first.state == PENDING and first.status is None
    assert first.error is not None and "connection refused" in first.error
    assert await env.store.pending_forward_count() == 5

    target = await env.target(port=port)

    async def drained() -> bool:
        return await env.store.pending_forward_count() == 0

    await eventually(drained)
    assert [g.headers["webhook-id"] for g in target.got] == ids
    assert all(g.verified for g in target.got)
    for msg_id in ids:
        [row] = await env.store.forwards_for_message(msg_id)
        assert row.state == DONE and row.status == 200


async def test_a_restart_resumes_the_pending_queue_in_order(env: Env) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    receiver = await env.receiver([Route(url)], backoff_cap_s=0.05)
    ids = [f"msg_r{i}" for i in range(4)]
    for msg_id in ids:
        assert (await env.post(receiver, msg_id, body_for("pass.activated"))).status_code == 200
    await env.store.settled()
    assert await env.store.pending_forward_count() == 4

    # Everything stops (app still down), the store is closed and reopened.
    await env.shutdown()
    await env.store.close()
    env.store = await Store.open(env.path)
    assert await env.store.pending_forward_count() == 4
    assert await env.store.pending_forward_targets() == [url]

    target = await env.target(port=port)
    # No routes given at all: the pending queue alone tells the new forwarder where to send.
    forwarder = Forwarder(env.store, [], backoff_cap_s=0.05)
    env.forwarders.append(forwarder)
    await forwarder.start()

    async def drained() -> bool:
        return await env.store.pending_forward_count() == 0

    await eventually(drained)
    assert [g.headers["webhook-id"] for g in target.got] == ids
    assert all(g.verified for g in target.got)


async def test_a_failing_answer_is_retried_until_success(env: Env) -> None:
    target = await env.target(status=500)
    results: list[int | None] = []
    receiver = await env.receiver(
        [Route(target.url)], backoff_cap_s=0.05, on_result=lambda row, r: results.append(r.status)
    )
    assert (await env.post(receiver, "msg_500", body_for("pass.activated"))).status_code == 200

    async def failed_twice() -> bool:
        return len(target.got) >= 2

    await eventually(failed_twice)
    target.status = 202

    async def done() -> bool:
        rows = await env.store.forwards_for_message("msg_500")
        return rows[0].state == DONE

    await eventually(done)
    [row] = await env.store.forwards_for_message("msg_500")
    assert row.status == 202 and row.tries == len(target.got) >= 3
    assert results[:2] == [500, 500] and results[-1] == 202


# -- --ack target ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "expected"), [(200, 200), (503, 503), (409, 409)])
async def test_ack_target_passes_the_app_status_through(
    env: Env, status: int, expected: int
) -> None:
    target = await env.target(status=status)
    receiver = await env.receiver([Route(target.url)], ack_target=True)
    answer = await env.post(receiver, "msg_ack", body_for("pass.activated"))
    assert answer.status_code == expected
    assert target.got[0].verified
    a = await stored_attempt(env.store, "msg_ack")
    assert a.status == expected and a.verdict == VERIFIED
    [row] = await env.store.forwards_for_message("msg_ack")
    assert (row.kind, row.status, row.state) == (
        FORWARD,
        status,
        DONE if status < 300 else FAILED,
    )
    assert await env.store.pending_forward_count() == 0  # nothing queued on top


async def test_ack_target_down_answers_502(env: Env) -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"
    receiver = await env.receiver([Route(url)], ack_target=True)
    answer = await env.post(receiver, "msg_down", body_for("pass.activated"))
    assert answer.status_code == 502
    assert "connection refused" in answer.text
    [row] = await env.store.forwards_for_message("msg_down")
    assert row.status is None and row.state == FAILED


async def test_ack_target_slow_app_answers_504_within_the_budget(env: Env) -> None:
    """The app would answer in a minute, past the client's own 10-s timeout: a 504 at all shows
    the budget cut the wait short."""
    target = await env.target(delay=60.0)
    receiver = await env.receiver([Route(target.url)], ack_target=True, ack_budget_s=0.4)
    answer = await env.post(receiver, "msg_slow", body_for("pass.activated"))
    assert answer.status_code == 504
    stored = await stored_attempt(env.store, "msg_slow")
    assert stored.status == 504 and "did not answer within 0.4 s" in (stored.note or "")


async def test_ack_target_budget_covers_a_trickling_answer(env: Env) -> None:
    """The budget is for the whole answer, not for each read."""

    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        await response.prepare(request)
        for _ in range(600):  # a minute of trickling, past the client's own 10-s timeout
            await response.write(b".")
            await asyncio.sleep(0.1)
        return response

    app = web.Application()
    app.router.add_post("/hook", trickle)
    runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
        receiver = await env.receiver([Route(url)], ack_target=True, ack_budget_s=0.4)
        answer = await env.post(receiver, "msg_trickle", body_for("pass.activated"))
        assert answer.status_code == 504
    finally:
        await env.shutdown()
        await runner.cleanup()


def test_ack_status_mapping() -> None:
    assert ack_status(ForwardResult(status=201, latency_ms=1), 10)[0] == 201
    assert ack_status(ForwardResult(None, 1, error="no answer within 10 s"), 10)[0] == 504
    assert ack_status(ForwardResult(None, 1, error="connection refused"), 10)[0] == 502


# -- replay ---------------------------------------------------------------------------------------

OLD_S = 1000  # older than any target's tolerance (standardwebhooks allows 300 s)


async def old_attempt(store: Store, msg_id: str = "msg_old") -> Attempt:
    body = body_for("pass.activated", "pass_0042")
    headers = signed(msg_id, body, ts=datetime.fromtimestamp(time.time() - OLD_S, UTC))
    headers["X-Other"] = "not forwarded"
    return await store.record(
        Attempt(
            received_at_ms=int((time.time() - OLD_S) * 1000),
            method="POST",
            path="/webhooks",
            headers=tuple(headers.items()),
            body=body,
            verdict=VERIFIED,
            reason="verified",
            status=200,
            webhook_id=msg_id,
            topic="pass.activated",
        )
    )


async def test_replays_resign_original_and_edited_are_each_recorded(env: Env) -> None:
    target = await env.target()
    attempt = await old_attempt(env.store)
    old_ts = attempt.header("webhook-timestamp")

    resigned = await replay(env.store, attempt, target.url, mode=RESIGN, secret=SECRET)
    assert resigned.status == 200
    got = target.got[-1]
    assert got.verified and got.body == attempt.body
    assert got.headers["webhook-id"] == "msg_old"
    assert abs(int(got.headers["webhook-timestamp"]) - time.time()) < 5
    assert got.headers["content-type"] == "application/json; charset=utf-8"
    assert "X-Other" not in got.headers

    original = await replay(env.store, attempt, target.url, mode=ORIGINAL, secret=SECRET)
    got = target.got[-1]
    assert got.body == attempt.body
    assert got.headers["webhook-timestamp"] == old_ts
    assert got.headers["webhook-signature"] == attempt.header("webhook-signature")
    assert not got.verified and "too old" in (got.error or "").lower()
    assert original.status == 400  # the app's replay protection did its job

    edited_body = body_for("pass.activated", "pass_EDITED")
    edited = await replay(
        env.store, attempt, target.url, mode=ORIGINAL, secret=SECRET, body=edited_body
    )
    got = target.got[-1]
    assert edited.status == 200 and got.verified and got.body == edited_body
    assert got.headers["webhook-id"] == "msg_old"

    rows = await env.store.forwards_for_message("msg_old")
    assert [(r.kind, r.mode, r.status, r.state) for r in rows] == [
        (REPLAY, RESIGN, 200, DONE),
        (REPLAY, ORIGINAL, 400, FAILED),
        (REPLAY, "edited", 200, DONE),
    ]
    assert rows[0].request_body is None and rows[2].request_body == edited_body
    assert all(r.target == target.url and r.latency_ms for r in rows)
    assert b"bad signature" in rows[1].response_body


async def test_replay_to_a_dead_target_is_recorded_as_failed(env: Env) -> None:
    attempt = await old_attempt(env.store, "msg_dead")
    url = f"http://127.0.0.1:{free_port()}/hook"
    result = await replay(env.store, attempt, url, mode=RESIGN, secret=SECRET)
    assert result.status is None and result.error and not result.ok
    [row] = await env.store.forwards_for_message("msg_dead")
    assert row.state == FAILED and row.error == result.error


async def test_replay_request_refuses_what_it_cannot_sign(env: Env) -> None:
    attempt = await old_attempt(env.store, "msg_nosecret")
    with pytest.raises(ForwardError, match="secret"):
        replay_request(attempt, mode=RESIGN, secret=None)
    with pytest.raises(ForwardError, match="secret"):
        replay_request(attempt, mode=ORIGINAL, secret=None, body=b"{}")
    body, headers, mode = replay_request(attempt, mode=ORIGINAL, secret=None)
    assert (body, mode) == (attempt.body, ORIGINAL)
    assert headers["webhook-timestamp"] == attempt.header("webhook-timestamp")


async def test_a_forward_queued_past_the_tolerance_is_resent_re_signed(env: Env) -> None:
    """An app down for ten minutes would refuse the original timestamp forever: after the first
    refusal the queued forward goes out re-signed (same webhook-id, fresh timestamp)."""
    target = await env.target()
    body = body_for("pass.activated", "pass_late")
    then = datetime.fromtimestamp(time.time() - 600, UTC)
    headers = signed("msg_late", body, then)
    attempt = Attempt(
        received_at_ms=int(then.timestamp() * 1000),
        method="POST",
        path="/webhooks",
        headers=tuple(headers.items()),
        body=body,
        verdict=VERIFIED,
        reason="verified",
        status=200,
        webhook_id="msg_late",
        topic="pass.activated",
    )
    await env.store.record(attempt, forward_to=(target.url,))
    await env.store.settled()
    forwarder = Forwarder(env.store, [], secret_for=lambda a: SECRET, backoff_cap_s=0.05)
    env.forwarders.append(forwarder)
    await forwarder.start()

    async def done() -> bool:
        rows = await env.store.forwards_for_message("msg_late")
        return rows[0].state == DONE

    await eventually(done)
    first, second = target.got
    assert not first.verified and "too old" in (first.error or "").lower()
    assert first.headers["webhook-timestamp"] == headers["webhook-timestamp"]  # original first
    assert second.verified and second.body == body
    assert second.headers["webhook-id"] == "msg_late"
    assert int(second.headers["webhook-timestamp"]) > time.time() - 60
    [row] = await env.store.forwards_for_message("msg_late")
    assert row.tries == 2 and "re-signed" in (row.note or "")


def test_parse_route_refuses_what_check_url_refuses_with_its_reason() -> None:
    # The same rules as every other URL the program takes (api.urls.check_url).
    cases = {
        "http://user:pw@localhost:3000/h": "user name or password",
        "http://localhost:3000/h#part": "#fragment",
        "pass.activated=http://local host/h": "spaces or control characters",
        "http://localhost:0/h": "port",
    }
    for text, reason in cases.items():
        with pytest.raises(ForwardError) as caught:
            parse_route(text)
        assert reason in str(caught.value)
        assert "pw" not in str(caught.value)
