"""The delivery engine follows spec section 6: headers, success rule, deadline, retry schedule, stop.

Targets are real aiohttp servers on 127.0.0.1 (the ``start_server`` fixture). Exact service-time
checks use a FakeClock; real-time checks use a ScaledClock with a tiny time scale.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from aiohttp import web
from standardwebhooks import Webhook

from walletpass_tui.sim.clock import FakeClock, ScaledClock
from walletpass_tui.sim.engine import (
    CONNECTION_ERROR,
    RETRY_WAITS,
    TIMEOUT,
    DeliveryEngine,
    DeliveryResult,
    Message,
    SentAttempt,
    Target,
    format_offset,
    format_wait,
)
from walletpass_tui.sim.events import new_secret

SECRET = new_secret()
BODY = {"type": "pass.activated", "data": {"passId": "pass_1"}}
FULL_SCHEDULE_OFFSETS = [0, 5, 305, 2105, 9305, 27305, 63305, 99305]


def reply(status: int, **fields: Any) -> dict[str, Any]:
    """A canned answer for the ``start_server`` fixture."""
    return {"status": status, **fields}


@pytest.fixture
async def engine_factory() -> Any:
    engines: list[DeliveryEngine] = []

    def make(**kwargs: Any) -> DeliveryEngine:
        engine = DeliveryEngine(**kwargs)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        await engine.aclose()


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/webhooks"


def test_the_schedule_is_the_spec_s() -> None:
    assert RETRY_WAITS == (0, 5, 300, 1800, 7200, 18000, 36000, 36000)
    assert format_offset(2105) == "+35 min 5 s"
    assert format_offset(0) == "+0 s"
    assert format_wait(7200) == "2 h"
    assert format_wait(5 * 3600 + 60) == "5 h 1 min"


def test_scaled_deadline_never_drops_below_one_second() -> None:
    assert ScaledClock(1).real_timeout(15) == 15
    assert ScaledClock(0.5).real_timeout(15) == 7.5
    assert ScaledClock(0.001).real_timeout(15) == 1.0
    assert ScaledClock(2).real_timeout(15) == 30
    with pytest.raises(ValueError):
        ScaledClock(0)
    with pytest.raises(ValueError):
        ScaledClock(float("nan"))


async def test_three_failures_then_success_lands_at_35_min_5_s_exactly(
    start_server: Any, engine_factory: Any
) -> None:
    server = await start_server()
    server.reply("POST", "/wh", reply(500), reply(503), reply(404), reply(200))
    clock = FakeClock()
    engine = engine_factory(clock=clock)
    delivery = engine.deliver(
        Target(server.url + "/wh", SECRET, "ep_1"), Message.new("pass.activated", BODY)
    )

    result = await delivery.wait()

    assert result is not None and result.state == "delivered" and result.attempts == 4
    assert [a.offset_s for a in delivery.attempts] == [0, 5, 305, 2105]
    assert format_offset(delivery.attempts[-1].offset_s) == "+35 min 5 s"
    assert [a.next_wait_s for a in delivery.attempts] == [5, 300, 1800, None]
    assert [a.outcome for a in delivery.attempts] == ["500", "503", "404", "200"]
    assert clock.now() == 2105
    assert clock.sleeps == [5, 300, 1800]
    # webhook-timestamp is the time of each attempt, not of the event.
    stamps = [int(r.headers["webhook-timestamp"]) for r in server.requests]
    assert [s - stamps[0] for s in stamps] == [0, 5, 305, 2105]
    assert len(server.requests) == 4


async def test_the_schedule_in_real_scaled_time(start_server: Any, engine_factory: Any) -> None:
    scale = 0.0002  # 35 min 5 s -> 0.421 s
    arrivals: list[float] = []
    statuses = [500, 500, 500, 200]

    async def handler(request: web.Request) -> web.Response:
        arrivals.append(asyncio.get_running_loop().time())
        return web.Response(status=statuses[len(arrivals) - 1])

    server = await start_server()
    server.reply("POST", "/wh", handler)
    engine = engine_factory(time_scale=scale)
    delivery = engine.deliver(Target(server.url + "/wh", SECRET), Message.new("pass.activated", {}))
    result = await delivery.wait()

    assert result is not None and result.state == "delivered"
    real = arrivals[-1] - arrivals[0]
    assert real >= 2105 * scale  # the waits were really waited (a floor: a busy machine only adds)
    # Offsets are service time: the scaled waits, plus each exchange's real duration (short here,
    # longer on a busy machine, so only the waits are exact).
    for attempt, expected in zip(delivery.attempts, [0, 5, 305, 2105], strict=True):
        assert attempt.offset_s >= expected
    assert [a.next_wait_s for a in delivery.attempts] == [5, 300, 1800, None]
    exchanges = [a.offset_s - e for a, e in zip(delivery.attempts, [0, 5, 305, 2105], strict=True)]
    assert exchanges == sorted(exchanges)  # each offset adds the exchanges before it


async def test_same_webhook_id_on_every_retry_and_standardwebhooks_verifies_each(
    start_server: Any, engine_factory: Any
) -> None:
    server = await start_server()
    server.reply("POST", "/wh", reply(500), reply(500), reply(204))
    engine = engine_factory(time_scale=0.0001)
    message = Message.new("pass.activated", BODY)
    result = await engine.deliver(Target(server.url + "/wh", SECRET), message).wait()

    assert result is not None and result.state == "delivered" and result.attempts == 3
    assert len(server.requests) == 3
    for request in server.requests:
        assert request.headers["webhook-id"] == message.id
        assert message.id.startswith("msg_")
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["webhook-signature"].startswith("v1,")
        assert request.body == message.body
        # The receiver side of the contract, by the reference implementation.
        assert Webhook(SECRET).verify(request.body, dict(request.headers)) == BODY


async def test_each_event_gets_its_own_id(start_server: Any, engine_factory: Any) -> None:
    server = await start_server()
    server.reply("POST", "/wh", reply(200))
    engine = engine_factory(clock=FakeClock())
    for _ in range(3):
        engine.deliver(Target(server.url + "/wh", SECRET), Message.new("pass.deactivated", BODY))
    await engine.wait_idle()
    ids = [r.headers["webhook-id"] for r in server.requests]
    assert len(ids) == 3 and len(set(ids)) == 3


async def test_no_answer_within_the_deadline_is_a_failed_attempt(
    start_server: Any, engine_factory: Any
) -> None:
    server = await start_server()
    # 15 s at scale 0.0001 is 1.5 ms, raised to the 1-s minimum; the target takes 1.5 s.
    server.reply("POST", "/wh", reply(200, delay=1.5), reply(200))
    engine = engine_factory(time_scale=0.0001)
    delivery = engine.deliver(Target(server.url + "/wh", SECRET), Message.new("pass.activated", {}))
    result = await delivery.wait()

    first, second = delivery.attempts
    assert first.error == TIMEOUT and first.status is None and not first.ok
    assert first.elapsed_s >= 0.9  # it waited out the deadline (a floor: load only adds)
    assert first.next_wait_s == 5
    assert second.ok
    # The timed-out attempt counts for the service's 15 s, then the 5-s wait.
    assert 20 <= second.offset_s < 21
    assert result is not None and result.state == "delivered" and result.attempts == 2


async def test_an_answer_inside_the_deadline_counts(start_server: Any, engine_factory: Any) -> None:
    server = await start_server()
    server.reply("POST", "/wh", reply(200, delay=0.3))
    engine = engine_factory(time_scale=0.1)  # deadline 1.5 s
    result = await engine.deliver(
        Target(server.url + "/wh", SECRET), Message.new("pass.activated", {})
    ).wait()
    assert result is not None and result.state == "delivered" and result.attempts == 1


async def test_eight_attempts_at_most_then_it_gives_up(
    start_server: Any, engine_factory: Any
) -> None:
    server = await start_server()
    server.reply("POST", "/wh", reply(500))
    clock = FakeClock()
    engine = engine_factory(clock=clock)
    results: list[DeliveryResult] = []
    attempts: list[SentAttempt] = []
    engine.subscribe(lambda e: (results if isinstance(e, DeliveryResult) else attempts).append(e))

    delivery = engine.deliver(Target(server.url + "/wh", SECRET), Message.new("pass.activated", {}))
    result = await delivery.wait()
    await asyncio.sleep(0.05)

    assert result is not None and result.state == "failed" and result.attempts == 8
    assert len(server.requests) == 8
    assert [a.number for a in attempts] == list(range(1, 9))
    assert [a.offset_s for a in attempts] == FULL_SCHEDULE_OFFSETS
    assert [a.next_wait_s for a in attempts] == [*RETRY_WAITS[1:], None]
    assert "giving up" in attempts[-1].describe()
    assert clock.sleeps == list(RETRY_WAITS[1:])
    assert results == [result]
    assert engine.flows() == []


async def test_connection_refused_is_a_failed_attempt(engine_factory: Any) -> None:
    engine = engine_factory(clock=FakeClock())
    delivery = engine.deliver(Target(closed_port_url(), SECRET), Message.new("pass.activated", {}))
    result = await delivery.wait()
    assert result is not None and result.state == "failed" and result.attempts == 8
    assert {a.error for a in delivery.attempts} == {CONNECTION_ERROR}
    assert all(a.status is None for a in delivery.attempts)


@pytest.mark.parametrize(
    ("status", "ok"),
    [(200, True), (204, True), (299, True), (300, False), (302, False), (400, False)],
)
async def test_only_2xx_is_success(
    start_server: Any, engine_factory: Any, status: int, ok: bool
) -> None:
    server = await start_server()
    headers = {"Location": "/elsewhere"} if status == 302 else {}
    server.reply("POST", "/wh", reply(status, headers=headers))
    engine = engine_factory(clock=FakeClock(), waits=(0,))
    delivery = engine.deliver(Target(server.url + "/wh", SECRET), Message.new("pass.activated", {}))
    await delivery.wait()
    assert delivery.attempts[0].ok is ok
    assert len(server.requests) == 1  # a redirect is not followed


async def test_cancelling_stops_a_sleeping_retry(
    start_server: Any, engine_factory: Any, eventually: Any
) -> None:
    server = await start_server()
    server.reply("POST", "/wh", reply(500))
    clock = FakeClock(auto_advance=False)
    engine = engine_factory(clock=clock)
    delivery = engine.deliver(
        Target(server.url + "/wh", SECRET, "ep_a"), Message.new("pass.activated", {})
    )
    other = engine.deliver(
        Target(server.url + "/wh", SECRET, "ep_b"), Message.new("pass.activated", {})
    )
    await eventually(lambda: clock.pending() == [5, 5])
    await clock.advance(5)
    await eventually(lambda: clock.pending() == [305, 305])
    assert len(server.requests) == 4

    assert engine.cancel("ep_a") == 1
    result = await delivery.wait()

    assert result is not None and result.state == "stopped" and result.attempts == 2
    assert clock.pending() == [305]  # ep_b's retry is still scheduled
    assert not other.done
    await clock.advance(300)
    await eventually(lambda: len(server.requests) == 5)
    assert {a.target.endpoint_id for a in engine.flows()} == {"ep_b"}


async def test_subscribers_see_every_attempt_and_a_failing_one_is_harmless(
    start_server: Any, engine_factory: Any
) -> None:
    server = await start_server()
    server.reply("POST", "/wh", reply(500), reply(200))
    engine = engine_factory(clock=FakeClock())
    seen: list[Any] = []

    def broken(event: Any) -> None:
        raise RuntimeError("subscriber bug")

    engine.subscribe(broken)
    unsubscribe = engine.subscribe(seen.append)
    result = await engine.deliver(
        Target(server.url + "/wh", SECRET), Message.new("pass.activated", {})
    ).wait()
    assert result is not None and result.state == "delivered"
    assert [type(e).__name__ for e in seen] == ["SentAttempt", "SentAttempt", "DeliveryResult"]
    assert [a.number for a in engine.attempts] == [1, 2]
    json.dumps(seen[0].to_json())  # serializable for the control API
    unsubscribe()
    await engine.deliver(
        Target(server.url + "/wh", SECRET), Message.new("pass.activated", {})
    ).wait()
    assert len(seen) == 3


async def test_a_bad_secret_is_refused_at_once(engine_factory: Any) -> None:
    engine = engine_factory(clock=FakeClock())
    with pytest.raises(ValueError, match="whsec_"):
        engine.deliver(Target("http://127.0.0.1:9/", "not-a-secret"), Message.new("x", {}))
