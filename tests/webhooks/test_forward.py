"""Forwarding against a real target app on 127.0.0.1 that verifies signatures itself: routes,
raw bytes and original headers, per-topic routing, the pending queue across outages and restarts.

The ``--ack`` target and replay are in test_forward_ack_replay.py.
"""

from __future__ import annotations

import asyncio
import base64

import pytest
from forward_helpers import (
    Env,
    body_for,
    eventually,
    forward_env,  # noqa: F401  (the "env" fixture)
    free_port,
    signed,
)

from walletpass_tui.webhooks import forward
from walletpass_tui.webhooks.forward import (
    Forwarder,
    ForwardError,
    Route,
    parse_route,
    targets_for,
)
from walletpass_tui.webhooks.models import DONE, FORWARD, ORIGINAL, PENDING
from walletpass_tui.webhooks.store import Store

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
        # The result is told once its row is on disk, a moment after the row can be read.
        return rows[0].state == DONE and bool(results) and results[-1] == 202

    await eventually(done)
    [row] = await env.store.forwards_for_message("msg_500")
    assert row.status == 202 and row.tries == len(target.got) >= 3
    assert results[:2] == [500, 500] and results[-1] == 202


async def test_forwarding_stops_when_asked_as_a_delivery_for_its_target_arrives(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target that is down waits for its next try; stopping the forwarder at the moment a new
    delivery for that target is stored still stops it (on Python 3.11, a wait_for finishing as
    it is cancelled would swallow the cancel, and stop() would wait forever)."""
    monkeypatch.setattr(forward, "BACKOFF_START_S", 3600.0)  # the next try: an hour away
    url = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there
    receiver = await env.receiver([Route(url)], backoff_cap_s=3600.0)
    assert (await env.post(receiver, "msg_down1", body_for("pass.activated"))).status_code == 200

    async def waiting_for_its_next_try() -> bool:
        rows = await env.store.forwards_for_message("msg_down1")
        return bool(rows) and rows[0].tries == 1

    await eventually(waiting_for_its_next_try)
    [forwarder] = env.forwarders
    stopping: list[asyncio.Task[None]] = []
    # A commit listener after the forwarder's: the new delivery wakes the target's worker and
    # the stop cancels it in the same turn of the loop.
    env.store.subscribe(lambda batch: stopping.append(asyncio.create_task(forwarder.stop())))
    assert (await env.post(receiver, "msg_down2", body_for("pass.activated"))).status_code == 200

    async def asked() -> bool:
        return bool(stopping)

    await eventually(asked)
    # A bound against a hang, not a timing (stop() cannot be cancelled from outside: it waits
    # for the workers it cancelled).
    done, _ = await asyncio.wait({stopping[0]}, timeout=60)
    assert stopping[0] in done, "a forwarding worker went on after stop() cancelled it"


async def test_a_forward_on_the_wire_when_forwarding_stops_is_answered_and_recorded(
    env: Env,
) -> None:
    """Stopping (Ctrl-C, SIGTERM) while the app is still answering a forward lets that answer be
    recorded: the next start finds nothing pending, so the app is never sent the same delivery
    twice; what was not yet sent stays queued."""
    target = await env.target(delay=0.5)
    receiver = await env.receiver([Route(target.url)])
    assert (await env.post(receiver, "msg_wire", body_for("pass.activated"))).status_code == 200

    async def on_the_wire() -> bool:
        return len(target.got) == 1

    await eventually(on_the_wire)
    [forwarder] = env.forwarders
    await forwarder.stop()  # the app has the request and has not answered yet
    [row] = await env.store.forwards_for_message("msg_wire")
    assert (row.state, row.status, row.tries) == (DONE, 200, 1)
    assert await env.store.pending_forward_count(None) == 0
