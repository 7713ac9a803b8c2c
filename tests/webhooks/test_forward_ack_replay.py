"""The ``--ack`` target (the app's answer passed through, within the budget) and replay
(original, re-signed and edited), against a real target app on 127.0.0.1 that verifies
signatures itself with the ``standardwebhooks`` package.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest
from aiohttp import web
from forward_helpers import (
    SECRET,
    Env,
    body_for,
    eventually,
    forward_env,  # noqa: F401  (the "env" fixture)
    free_port,
    signed,
    stored_attempt,
)

from walletpass_tui.webhooks.forward import (
    Forwarder,
    ForwardError,
    Route,
    ack_status,
    parse_route,
    replay,
    replay_request,
)
from walletpass_tui.webhooks.models import (
    DONE,
    FAILED,
    FORWARD,
    ORIGINAL,
    REPLAY,
    RESIGN,
    VERIFIED,
    Attempt,
    ForwardResult,
)
from walletpass_tui.webhooks.store import Store

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
    assert (
        ack_status(ForwardResult(None, 1, error="timed out: no answer within 10 s"), 10)[0] == 504
    )
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
