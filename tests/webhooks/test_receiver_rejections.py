"""The receiver over real HTTP: every rejection, the size and time limits, the source allow-list.

Each refused request gets a clear 4xx with its reason and is still recorded with its raw bytes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest
from receiver_helpers import (
    BODY,
    OTHER,
    Env,
    only_attempt,
    post,
    raw_exchange,
    receiver_env,  # noqa: F401  (the "env" fixture)
    signature,
    signed,
)

from walletpass_tui.webhooks.models import REJECTED
from walletpass_tui.webhooks.sources import SourcePolicy

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


@pytest.mark.parametrize("declared", [2**63, 10**19 - 1])
async def test_a_declared_length_past_the_historys_integers_is_413_and_recorded(
    env: Env, declared: int
) -> None:
    """llhttp takes a Content-Length up to 2^64 - 1: one past SQLite's integers is still
    refused and kept in the history (at the largest size it can hold), not lost to a store error."""
    receiver = await env.start(max_body=1000)
    assert receiver.bound is not None
    headers = "".join(f"{k}: {v}\r\n" for k, v in signed("msg_huge").items())
    request = f"POST /webhooks HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {declared}\r\n\r\n"
    answer = await raw_exchange(receiver.bound[1], request.encode())
    assert answer.startswith(b"HTTP/1.1 413")
    a = await only_attempt(env)
    assert (a.status, a.reason, a.body_size) == (413, "body too large", 2**63 - 1)
    assert str(declared) in (a.detail or "")
