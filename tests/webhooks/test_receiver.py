"""The receiver over real HTTP: verification, answers, limits, storage, concurrency, injection.

Deliveries are signed here by hand (hmac + base64, spec section 5), independently of verify.py.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import pytest

from walletpass_tui.webhooks.endpoints import EndpointRegistry
from walletpass_tui.webhooks.receiver import (
    Injection,
    Receiver,
    ReceiverError,
    ReceiverOptions,
)
from walletpass_tui.webhooks.sources import SourcePolicy
from walletpass_tui.webhooks.store import REJECTED, VERIFIED, Attempt, Store
from walletpass_tui.webhooks.verify import SigningKey

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 24).decode()
EP_A = "whsec_" + base64.b64encode(b"a" * 32).decode()
EP_B = "whsec_" + base64.b64encode(b"b" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_0001"}}'


def signature(secret: str, msg_id: str, ts: int | str, body: bytes) -> str:
    key = base64.b64decode(secret.split("_", 1)[1])
    digest = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed(
    msg_id: str, body: bytes = BODY, secret: str = SECRET, ts: int | None = None
) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": signature(secret, msg_id, ts, body),
        "content-type": "application/json",
    }


@dataclass
class Env:
    store: Store
    registry: EndpointRegistry
    start: Callable[..., Awaitable[Receiver]]
    client: httpx.AsyncClient


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    store = await Store.open(tmp_path / "h" / "deliveries.sqlite3", busy_timeout_ms=100)
    registry = EndpointRegistry(tmp_path / "h" / "endpoints.json")
    started: list[Receiver] = []

    async def start(**kw: object) -> Receiver:
        kw.setdefault("secrets", [SigningKey.from_secret(SECRET)])
        kw.setdefault("port", 0)
        receiver = Receiver(store, ReceiverOptions(**kw), registry=registry)  # type: ignore[arg-type]
        await receiver.start()
        started.append(receiver)
        return receiver

    async with httpx.AsyncClient(timeout=10) as client:
        yield Env(store, registry, start, client)
    for receiver in started:
        await receiver.stop()
    await store.close()


async def post(
    env: Env, receiver: Receiver, headers: dict[str, str], body: bytes = BODY, suffix: str = ""
) -> httpx.Response:
    return await env.client.post(receiver.url + suffix, content=body, headers=headers)


async def only_attempt(env: Env) -> Attempt:
    rows = await env.store.log_page()
    assert len(rows) == 1, rows
    attempt = await env.store.attempt(rows[0].id)
    assert attempt is not None
    return attempt


async def raw_exchange(port: int, data: bytes, *, wait: float = 5.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        chunks = []
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(wait):
                while chunk := await reader.read(65536):
                    chunks.append(chunk)
                    if b"\r\n\r\n" in b"".join(chunks) and b"Connection: close" not in chunks[0]:
                        break
        return b"".join(chunks)
    finally:
        writer.close()


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


# -- rejections ------------------------------------------------------------------------------------


def _without(name: str) -> Callable[[dict[str, str]], None]:
    return lambda h: h.pop(name)


REJECTIONS: list[tuple[str, Callable[[dict[str, str]], None], int, str]] = [
    ("no-id", _without("webhook-id"), 400, "missing header(s)"),
    ("no-timestamp", _without("webhook-timestamp"), 400, "missing header(s)"),
    ("no-signature", _without("webhook-signature"), 400, "missing header(s)"),
    (
        "bad-timestamp",
        lambda h: h.update({"webhook-timestamp": "soon"}),
        400,
        "malformed timestamp",
    ),
    (
        "only-v2",
        lambda h: h.update({"webhook-signature": h["webhook-signature"].replace("v1,", "v2,")}),
        400,
        "no v1 signature present",
    ),
    (
        "wrong-signature",
        lambda h: h.update({"webhook-signature": signature(OTHER, "msg_r", 0, BODY)}),
        401,
        "no signature matches",
    ),
    (
        "too-old",
        lambda h: h.update(signed(h["webhook-id"], ts=int(time.time()) - 3600)),
        401,
        "timestamp too old",
    ),
    (
        "too-new",
        lambda h: h.update(signed(h["webhook-id"], ts=int(time.time()) + 3600)),
        401,
        "timestamp too new",
    ),
    (
        "body-changed",
        lambda h: h.update(signed(h["webhook-id"], body=BODY + b" ")),
        401,
        "no signature matches",
    ),
]


@pytest.mark.parametrize(
    ("change", "status", "reason"), [r[1:] for r in REJECTIONS], ids=[r[0] for r in REJECTIONS]
)
async def test_every_rejection_reason_is_answered_and_recorded(
    env: Env, change: Callable[[dict[str, str]], None], status: int, reason: str
) -> None:
    receiver = await env.start()
    headers = signed("msg_r")
    change(headers)
    answer = await post(env, receiver, headers)
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("text/plain")
    assert reason in answer.text and len(answer.text) < 200
    a = await only_attempt(env)
    assert (a.verdict, a.reason, a.status) == (REJECTED, reason, status)
    assert a.body == BODY


async def test_no_secret_at_all_is_a_401_that_says_so(env: Env) -> None:
    receiver = await env.start(secrets=[])
    answer = await post(env, receiver, signed("msg_n"))
    assert answer.status_code == 401 and "no secret configured" in answer.text


async def test_a_webhook_id_that_is_not_utf8_is_a_bad_request(env: Env) -> None:
    receiver = await env.start()
    assert receiver.bound is not None
    request = (
        b"POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
        b"webhook-id: msg_\xff\r\nwebhook-timestamp: 1\r\nwebhook-signature: v1,AA==\r\n\r\n{}"
    )
    answer = await raw_exchange(receiver.bound[1], request)
    assert answer.startswith(b"HTTP/1.1 400") and b"not UTF-8" in answer
    a = await only_attempt(env)
    assert a.reason == "malformed header" and a.webhook_id == "msg_\\xff"
    # The receiver is still healthy.
    assert (await post(env, receiver, signed("msg_next"))).status_code == 200


async def test_other_methods_are_405_and_other_paths_404(env: Env) -> None:
    receiver = await env.start()
    got = await env.client.get(receiver.url)
    assert got.status_code == 405 and got.headers["allow"] == "POST"
    put = await env.client.put(receiver.url, content=BODY, headers=signed("m"))
    assert put.status_code == 405
    base = receiver.url.removesuffix("/webhooks")
    for path in ("/", "/other", "/webhooksX", "/webhooks/ep_a/extra"):
        answer = await env.client.post(base + path, content=BODY, headers=signed("m"))
        assert answer.status_code == 404, path
    rows = await env.store.log_page(limit=100)
    assert sorted(r.status for r in rows) == [404, 404, 404, 404, 405, 405]
    assert all(r.verdict == REJECTED for r in rows)


# -- limits ----------------------------------------------------------------------------------------


async def test_a_body_at_the_limit_is_accepted(env: Env) -> None:
    receiver = await env.start(max_body=1000)
    body = b"a" * 1000
    assert (await post(env, receiver, signed("msg_edge", body), body)).status_code == 200


async def test_a_declared_oversize_body_is_413_before_it_is_sent(env: Env) -> None:
    receiver = await env.start(max_body=1000)
    assert receiver.bound is not None
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed("msg_big").items())
    request = f"POST /webhooks HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: 50000000\r\n\r\n"
    # Not a byte of the body is sent: the answer cannot depend on reading it.
    answer = await raw_exchange(receiver.bound[1], request.encode())
    assert answer.startswith(b"HTTP/1.1 413")
    a = await only_attempt(env)
    assert (a.status, a.reason, a.body_size, a.body) == (413, "body too large", 50_000_000, b"")


async def test_a_chunked_body_over_the_limit_is_413_without_reading_the_rest(env: Env) -> None:
    receiver = await env.start(max_body=1000)
    assert receiver.bound is not None
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed("msg_chunked").items())
    head = f"POST /webhooks HTTP/1.1\r\nHost: x\r\n{headers}Transfer-Encoding: chunked\r\n\r\n"
    chunk = b"258\r\n" + b"z" * 600 + b"\r\n"
    # Two chunks pass the limit; the stream is never finished (no final 0-length chunk).
    answer = await raw_exchange(receiver.bound[1], head.encode() + chunk * 2)
    assert answer.startswith(b"HTTP/1.1 413")
    a = await only_attempt(env)
    assert a.status == 413 and a.body_size is not None and a.body_size > 1000


async def test_a_chunked_body_within_the_limit_is_accepted(env: Env) -> None:
    receiver = await env.start()

    async def parts() -> AsyncIterator[bytes]:
        yield BODY[:10]
        await asyncio.sleep(0.05)
        yield BODY[10:]

    answer = await env.client.post(receiver.url, content=parts(), headers=signed("msg_parts"))
    assert answer.status_code == 200
    assert (await only_attempt(env)).body == BODY


async def test_a_stalled_body_times_out(env: Env) -> None:
    receiver = await env.start(read_timeout_s=0.3)
    assert receiver.bound is not None
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed("msg_slow").items())
    request = f"POST /webhooks HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: 100\r\n\r\n"
    started = time.monotonic()
    answer = await raw_exchange(receiver.bound[1], request.encode() + b"only part")
    assert time.monotonic() - started < 2
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408")
    a = await only_attempt(env)
    assert (a.status, a.reason) == (408, "request timed out")


async def test_stalled_headers_are_cut_off(env: Env) -> None:
    receiver = await env.start(read_timeout_s=0.3)
    assert receiver.bound is not None
    started = time.monotonic()
    answer = await raw_exchange(receiver.bound[1], b"POST /webhooks HTTP/1.1\r\nHost: x\r\nwebh")
    assert time.monotonic() - started < 3
    assert answer == b"" or answer.startswith(b"HTTP/1.1 4")


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


async def test_a_store_failure_is_a_503_not_a_crash(env: Env) -> None:
    receiver = await env.start()
    with contextlib.closing(sqlite3.connect(env.store.path, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")  # the history database is locked by someone else
        answer = await post(env, receiver, signed("msg_locked"))
        other.execute("ROLLBACK")
    assert answer.status_code == 503 and "not stored" in answer.text
    assert (await post(env, receiver, signed("msg_locked"))).status_code == 200


# -- sources -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("xff", "status"),
    [
        ("44.228.126.217", 200),
        ("54.148.139.208", 200),
        ("2600:1f24:64:80ff::1", 200),  # inside the /56
        ("2600:1f24:64:8100::1", 403),  # just outside it
        ("198.51.100.7", 403),
        ("44.228.126.217, 198.51.100.7", 403),  # the rightmost untrusted hop is the client
        (None, 403),  # the loopback peer itself
    ],
)
async def test_allow_list_through_a_local_tunnel(env: Env, xff: str | None, status: int) -> None:
    receiver = await env.start(sources=SourcePolicy.build(["service"]))
    headers = signed("msg_src")
    if xff is not None:
        headers["X-Forwarded-For"] = xff
    answer = await post(env, receiver, headers)
    assert answer.status_code == status
    a = await only_attempt(env)
    assert a.status == status and a.remote_addr == "127.0.0.1" and a.forwarded_for == xff
    if status == 403:
        assert a.reason == "source not allowed" and a.verdict == REJECTED


async def test_a_spoofed_forwarded_for_is_ignored_when_loopback_is_not_trusted(env: Env) -> None:
    receiver = await env.start(sources=SourcePolicy.build(["service"], trust=["192.0.2.1"]))
    headers = {**signed("msg_spoof"), "X-Forwarded-For": "44.228.126.217"}
    answer = await post(env, receiver, headers)
    assert answer.status_code == 403 and "127.0.0.1" in answer.text


async def test_every_forwarded_for_line_counts(env: Env) -> None:
    """A sender's own X-Forwarded-For line comes first; the tunnel's line with the real client
    comes last: the spoofed first line cannot pass the allow-list."""
    receiver = await env.start(sources=SourcePolicy.build(["service"]))
    headers = [
        *signed("msg_lines").items(),
        ("X-Forwarded-For", "44.228.126.217"),
        ("X-Forwarded-For", "198.51.100.7"),
    ]
    answer = await env.client.post(receiver.url, content=BODY, headers=headers)
    assert answer.status_code == 403 and "198.51.100.7" in answer.text
    a = await only_attempt(env)
    assert a.forwarded_for == "44.228.126.217, 198.51.100.7"


async def test_malformed_v1_entries_are_401_no_signature_matches(env: Env) -> None:
    receiver = await env.start()
    headers = {**signed("msg_bad_sig"), "webhook-signature": "v2,abc v1,!!!notb64 v1,"}
    answer = await post(env, receiver, headers)
    assert answer.status_code == 401
    assert answer.text == "Unauthorized: no signature matches: tried 1 secret\n"


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
