"""The receiver over real HTTP: verified deliveries, storage, concurrency, injection, lifecycle.

Rejections, size and time limits and source allow-lists are in test_receiver_rejections.py.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import sqlite3
import time

import aiohttp
import h11
import pytest
from receiver_helpers import (
    BODY,
    EP_A,
    EP_B,
    OTHER,
    SECRET,
    Env,
    only_attempt,
    post,
    receiver_env,  # noqa: F401  (the "env" fixture)
    signed,
)

from walletpass_tui.webhooks.injection import Injection
from walletpass_tui.webhooks.listening import ReceiverError
from walletpass_tui.webhooks.models import REJECTED, VERIFIED
from walletpass_tui.webhooks.verify import SigningKey

# -- verified deliveries -------------------------------------------------------------------------


async def test_a_hand_signed_delivery_is_verified_stored_and_acknowledged(env: Env) -> None:
    receiver = await env.start()
    assert receiver.bound is not None and receiver.bound[0] == "127.0.0.1"
    headers = signed("msg_ok")
    answer = await post(env, receiver, headers)
    assert answer.status_code == 200 and answer.text == "OK: stored\n"
    a = await only_attempt(env)
    assert (a.webhook_id, a.verdict, a.reason, a.status, a.attempt_no) == (
        "msg_ok",
        VERIFIED,
        "verified",
        200,
        1,
    )
    assert a.body == BODY and a.body_size == len(BODY)
    assert a.topic == "pass.activated" and a.pass_id == "pass_0001"
    assert a.remote_addr == "127.0.0.1" and a.forwarded_for is None
    assert a.header("webhook-signature") == headers["webhook-signature"]
    assert a.method == "POST" and a.path == "/webhooks"
    assert a.processing_ms > 0
    assert abs(a.received_at_ms - time.time() * 1000) < 5000


async def test_the_2xx_goes_out_only_after_the_commit(env: Env) -> None:
    receiver = await env.start()
    # Hold the writer: the delivery is verified but cannot be committed yet.
    async with env.store.hold_writes():
        pending = asyncio.ensure_future(post(env, receiver, signed("msg_wait")))
        await asyncio.sleep(0.3)
        assert not pending.done()
        with contextlib.closing(sqlite3.connect(env.store.path)) as db:
            assert db.execute("SELECT COUNT(*) FROM attempts").fetchone() == (0,)
    answer = await pending
    assert answer.status_code == 200
    with contextlib.closing(sqlite3.connect(env.store.path)) as db:
        assert db.execute("SELECT webhook_id FROM attempts").fetchall() == [("msg_wait",)]


async def test_a_redelivery_is_acknowledged_and_recorded_as_attempt_two(env: Env) -> None:
    receiver = await env.start()
    headers = signed("msg_again")
    assert (await post(env, receiver, headers)).status_code == 200
    assert (await post(env, receiver, headers)).status_code == 200
    attempts = await env.store.message_attempts("msg_again")
    assert [(a.attempt_no, a.status, a.verdict) for a in attempts] == [
        (1, 200, VERIFIED),
        (2, 200, VERIFIED),
    ]
    [message] = await env.store.list_messages()
    assert message.attempts == 2


async def test_v2_entries_next_to_v1_do_not_hide_it(env: Env) -> None:
    receiver = await env.start()
    headers = signed("msg_v2")
    v1 = headers["webhook-signature"]
    headers["webhook-signature"] = f"v2,{base64.b64encode(b'x' * 64).decode()} v1,@@@ {v1} v1a,zz"
    assert (await post(env, receiver, headers)).status_code == 200


async def test_a_body_that_is_not_utf8_is_verified_and_stored_byte_exact(env: Env) -> None:
    receiver = await env.start()
    body = b"\xff\xfe\x00\x80 binary \xc3\x28 {not json"
    answer = await post(env, receiver, signed("msg_bin", body), body)
    assert answer.status_code == 200
    a = await only_attempt(env)
    assert a.body == body and a.verified and a.topic is None


async def test_several_secrets_any_one_verifies(env: Env) -> None:
    receiver = await env.start(
        secrets=[SigningKey.from_secret(OTHER), SigningKey.from_secret(SECRET)]
    )
    assert (await post(env, receiver, signed("msg_s1", secret=SECRET))).status_code == 200
    assert (await post(env, receiver, signed("msg_s2", secret=OTHER))).status_code == 200
    assert (await post(env, receiver, signed("msg_s3", secret=EP_A))).status_code == 401


async def test_endpoint_secrets_and_routes(env: Env) -> None:
    env.registry.import_endpoint("ep_a", "https://a.example/wh", ["pass.activated"], EP_A)
    env.registry.import_endpoint("ep_b", "https://b.example/wh", ["pass.activated"], EP_B)
    receiver = await env.start()
    # {path}: every secret, the --secret ones and the endpoints'; the match is recorded.
    assert (await post(env, receiver, signed("m1", secret=EP_B))).status_code == 200
    assert (await post(env, receiver, signed("m2", secret=SECRET))).status_code == 200
    # {path}/{endpoint_id}: only that endpoint's secret.
    assert (await post(env, receiver, signed("m3", secret=EP_A), suffix="/ep_a")).status_code == 200
    assert (await post(env, receiver, signed("m4", secret=EP_B), suffix="/ep_a")).status_code == 401
    assert (await post(env, receiver, signed("m5", secret=SECRET), suffix="/ep_a")).status_code == (
        401
    )
    unknown = await post(env, receiver, signed("m6"), suffix="/ep_zzz")
    assert unknown.status_code == 401 and "no endpoint ep_zzz is known locally" in unknown.text
    rows = {m.webhook_id: m for m in await env.store.list_messages()}
    assert rows["m1"].endpoint_id == "ep_b" and rows["m1"].verdict == VERIFIED
    assert rows["m2"].endpoint_id is None
    assert rows["m3"].endpoint_id == "ep_a"
    assert rows["m4"].verdict == REJECTED and rows["m4"].reason == "no signature matches"
    assert rows["m6"].reason == "no secret configured" and rows["m6"].endpoint_id == "ep_zzz"


async def test_an_endpoint_imported_while_running_is_used_at_once(env: Env) -> None:
    receiver = await env.start(secrets=[])
    assert (await post(env, receiver, signed("early", secret=EP_A))).status_code == 401
    env.registry.import_endpoint("ep_a", "https://a.example/wh", ["pass.activated"], EP_A)
    assert (await post(env, receiver, signed("late", secret=EP_A))).status_code == 200


# -- concurrency -----------------------------------------------------------------------------------


async def test_hundreds_of_simultaneous_posts_lose_nothing(env: Env) -> None:
    receiver = await env.start()
    ids = [f"msg_p{i:03d}" for i in range(100)]
    work = [signed(i) for i in ids for _ in range(3)]  # 300 posts, each message three times
    started = time.monotonic()
    # aiohttp's client: 300 connections at once, and light enough not to be the slow part.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=300)) as client:

        async def one(headers: dict[str, str]) -> int:
            async with client.post(receiver.url, data=BODY, headers=headers) as answer:
                return answer.status

        statuses = await asyncio.gather(*(one(h) for h in work))
    assert statuses == [200] * 300
    assert time.monotonic() - started < 10
    assert await env.store.count() == 300
    messages = await env.store.list_messages(limit=200)
    assert len(messages) == 100 and {m.attempts for m in messages} == {3}
    for webhook_id in ids[:10]:
        numbers = [a.attempt_no for a in await env.store.message_attempts(webhook_id)]
        assert numbers == [1, 2, 3]
    assert env.store.commits < 150  # batched: far fewer transactions than deliveries


# -- failure injection and store failures ----------------------------------------------------------


async def test_fail_first_answers_500_then_stores_the_success(env: Env) -> None:
    receiver = await env.start(injection=Injection(fail_first=2))
    headers = signed("msg_retry")
    statuses = [(await post(env, receiver, headers)).status_code for _ in range(3)]
    assert statuses == [500, 500, 200]
    attempts = await env.store.message_attempts("msg_retry")
    assert [(a.status, a.verdict) for a in attempts] == [
        (500, VERIFIED),
        (500, VERIFIED),
        (200, VERIFIED),
    ]
    assert attempts[0].note == "injected: fail first 2 (attempt 1)"
    assert attempts[2].note is None


async def test_respond_status_and_pause_are_recorded_as_injected(env: Env) -> None:
    injection = Injection(respond_status=202)
    receiver = await env.start(injection=injection)
    answer = await post(env, receiver, signed("msg_202"))
    assert answer.status_code == 202
    receiver.set_injection(Injection(paused=True))
    paused = await post(env, receiver, signed("msg_paused"))
    assert paused.status_code == 503 and "paused" in paused.text
    # A rejected delivery is answered for what it is, injection or not.
    assert (await post(env, receiver, signed("msg_bad", secret=OTHER))).status_code == 401
    rows = {m.webhook_id: m for m in await env.store.list_messages()}
    assert rows["msg_202"].last_status == 202
    assert rows["msg_paused"].last_status == 503
    [paused_row] = await env.store.message_attempts("msg_paused")
    assert paused_row.note == "injected: acknowledgements paused"


@pytest.mark.parametrize("status", [204, 205, 304, 202, 599])
async def test_an_injected_status_is_framed_so_a_kept_alive_client_reads_the_next_answer(
    env: Env, status: int
) -> None:
    """204 and 304 carry neither content nor a length, 205 a length of 0: a client that keeps the
    connection reads each answer whole and the next one from where it starts (h11 is strict)."""
    receiver = await env.start(injection=Injection(respond_status=status))
    assert receiver.bound is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", receiver.bound[1])
    client = h11.Connection(h11.CLIENT)
    answers: list[tuple[int, bytes]] = []
    try:
        for msg_id in ("msg_one", "msg_two"):
            headers = [("Host", "x"), ("Content-Length", str(len(BODY)))]
            headers += list(signed(msg_id).items())
            writer.write(
                client.send(h11.Request(method="POST", target="/webhooks", headers=headers))
            )
            writer.write(client.send(h11.Data(data=BODY)) + client.send(h11.EndOfMessage()))
            body = b""
            while not isinstance(event := client.next_event(), h11.EndOfMessage):
                if event is h11.NEED_DATA:
                    client.receive_data(await asyncio.wait_for(reader.read(65536), 10))
                elif isinstance(event, h11.Response):
                    answers.append((event.status_code, b""))
                    if status in (204, 304):
                        assert not any(name == b"content-length" for name, _ in event.headers)
                elif isinstance(event, h11.Data):
                    body += event.data
            answers[-1] = (answers[-1][0], body)
            client.start_next_cycle()
    finally:
        writer.close()
    empty = status in (204, 205, 304)
    assert [code for code, _ in answers] == [status, status]
    assert all((body == b"") == empty for _, body in answers)
    assert {m.webhook_id: m.last_status for m in await env.store.list_messages()} == {
        "msg_one": status,
        "msg_two": status,
    }


@pytest.mark.parametrize("status", [100, 101, 103, 199, 600, 99])
def test_a_status_that_cannot_be_a_final_answer_is_refused_as_an_injection(status: int) -> None:
    with pytest.raises(ValueError, match="from 200 to 599"):
        Injection(respond_status=status)


async def test_a_store_failure_is_a_503_not_a_crash(env: Env) -> None:
    receiver = await env.start()
    with contextlib.closing(sqlite3.connect(env.store.path, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")  # the history database is locked by someone else
        answer = await post(env, receiver, signed("msg_locked"))
        other.execute("ROLLBACK")
    assert answer.status_code == 503 and "not stored" in answer.text
    assert (await post(env, receiver, signed("msg_locked"))).status_code == 200


# -- lifecycle -------------------------------------------------------------------------------------


async def test_listeners_hear_after_the_commit(env: Env) -> None:
    heard: list[tuple[str | None, int]] = []
    env.store.subscribe(lambda batch: heard.extend((a.webhook_id, a.id) for a in batch))
    receiver = await env.start()
    await post(env, receiver, signed("msg_l"))
    assert heard and heard[0][0] == "msg_l" and heard[0][1] > 0


async def test_a_taken_port_is_a_clear_error_and_stop_releases_the_port(env: Env) -> None:
    receiver = await env.start()
    assert receiver.bound is not None
    port = receiver.bound[1]
    with pytest.raises(ReceiverError, match=f"Port {port} is already in use"):
        await env.start(port=port)
    await receiver.stop()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
