"""Why a forward or replay got no answer, in the words a person acts on: a certificate nobody
trusts, a name that does not resolve, a refused port, a peer that is not HTTP, one that never
answers, one that hangs up. Real peers on 127.0.0.1 (tests/peers.py); name resolution stays on this
machine (a ``.invalid`` name fails locally, RFC 6761).
"""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

import httpx
import pytest
from aiohttp import web
from forward_helpers import (
    Env,
    body_for,
    eventually,
    forward_env,  # noqa: F401  (the "env" fixture)
    stored_attempt,
)
from peers import (
    Certificate,
    Peers,
    Resolver,
    certificate_fixture,  # noqa: F401  (the "certificate" fixture)
    closed_port_url,
    local_resolver_fixture,  # noqa: F401  (the "local_resolver" fixture)
    peers_fixture,  # noqa: F401  (the "peers" fixture)
)

from walletpass_tui.webhooks.forward import Route, ack_status, replay, send, target_client
from walletpass_tui.webhooks.models import ORIGINAL, REPLAY, RESPONSE_BODY_LIMIT

BODY = b'{"type": "pass.activated"}'
HEADERS = {"Content-Type": "application/json"}
UNTRUSTED = (
    "the certificate of 127.0.0.1 is not trusted (self-signed or unknown CA): "
    "pass --ca-bundle FILE with your CA, or --insecure"
)
NOT_HTTP = "127.0.0.1 answered with something that is not HTTP"
REFUSED = "connection refused (is your app running?)"
SSH = b"SSH-2.0-OpenSSH_9.6\r\nProtocol mismatch.\r\n\r\n"


async def _error(url: str, timeout_s: float = 10.0) -> str | None:
    async with target_client() as client:
        result = await send(client, url, BODY, HEADERS, timeout_s)
    assert result.status is None
    return result.error


async def test_a_self_signed_certificate_is_named_as_not_trusted(
    peers: Peers, certificate: Certificate
) -> None:
    url = await peers.tls(certificate)
    assert await _error(url) == UNTRUSTED
    # The same server answers whoever trusts its certificate: the failure was the trust alone.
    async with httpx.AsyncClient(verify=certificate.trusting_context()) as trusting:
        result = await send(trusting, url, BODY, HEADERS, 10.0)
    assert (result.status, result.body) == (200, b"ok")


async def test_a_name_that_does_not_resolve_is_named(local_resolver: Resolver) -> None:
    url = "http://walletpass-target.invalid:3000/hook"
    assert await _error(url) == "walletpass-target.invalid does not resolve"
    assert "walletpass-target.invalid" in local_resolver.asked  # our resolver, not the network's


async def test_a_closed_port_is_connection_refused() -> None:
    assert await _error(closed_port_url()) == REFUSED


@pytest.mark.parametrize(
    ("data", "then_close", "shown"),
    [
        (SSH, True, "SSH-2.0-OpenSSH_9.6\\r\\nProtocol mismatch.\\r'…"),
        (SSH, False, "SSH-2.0-OpenSSH_9.6\\r\\nProtocol mismatch.\\r'…"),
        # A TLS alert: what an https port says to a request in plain HTTP.
        (b"\x15\x03\x03\x00\x02\x02\x46", True, "\\x15\\x03\\x03\\x00\\x02\\x02F'"),
        (b"220 smtp.example ESMTP ready\r\n", True, "220 smtp.example ESMTP ready\\r\\n'"),
        (b"+OK\r\n", True, "+OK\\r\\n'"),
        (b"garbage", True, "garbage'"),
        # No line end at all, held open: refused once past the largest head httpx reads.
        (b"x" * 150_000, False, "x" * 40 + "'…"),
    ],
    ids=["ssh-closed", "ssh-held", "tls-alert", "smtp", "pop3", "garbage", "endless-line"],
)
async def test_bytes_that_are_not_http_are_named_not_http(
    peers: Peers, data: bytes, then_close: bool, shown: str
) -> None:
    url = await peers.not_http(data, then_close=then_close)
    # What arrived is shown, escaped, so a person sees which server answers there.
    assert await _error(url) == f"{NOT_HTTP} ('{shown})"


async def test_the_not_http_sentence_shows_the_first_bytes_escaped(peers: Peers) -> None:
    url = await peers.not_http(b"\x1b[2J\x1b]8;;http://x\x07SSH-2.0\r\n")
    assert await _error(url) == f"{NOT_HTTP} ('\\x1b[2J\\x1b]8;;http://x\\x07SSH-2.0\\r\\n')"


async def test_a_peer_that_never_answers_times_out(peers: Peers) -> None:
    url = await peers.silent()
    assert await _error(url, timeout_s=0.3) == "timed out: no answer within 0.3 s"


async def test_a_peer_that_hangs_up_closed_without_an_answer(peers: Peers) -> None:
    url = await peers.hangs_up()
    assert await _error(url) == "the connection was closed without an answer"


async def test_a_replay_records_why_it_got_no_answer(
    env: Env, peers: Peers, certificate: Certificate
) -> None:
    target = await env.target()
    receiver = await env.receiver([])
    await env.post(receiver, "msg_tls", body_for("pass.activated"))
    attempt = await stored_attempt(env.store, "msg_tls")
    url = await peers.tls(certificate)
    result = await replay(env.store, attempt, url, mode=ORIGINAL)
    assert result.error == UNTRUSTED
    [row] = await env.store.forwards_for_message("msg_tls")
    assert (row.kind, row.status, row.error) == (REPLAY, None, UNTRUSTED)
    assert target.got == []


async def test_a_forward_records_why_it_got_no_answer(env: Env, peers: Peers) -> None:
    url = await peers.not_http()
    receiver = await env.receiver([Route(url)], backoff_cap_s=0.05)
    await env.post(receiver, "msg_garbage", body_for("pass.activated"))

    async def tried() -> bool:
        rows = await env.store.forwards_for_message("msg_garbage")
        return bool(rows) and rows[0].tries >= 1

    await eventually(tried)
    [row] = await env.store.forwards_for_message("msg_garbage")
    assert row.status is None and (row.error or "").startswith(NOT_HTTP)


async def test_ack_target_tells_the_service_why(env: Env, local_resolver: Resolver) -> None:
    receiver = await env.receiver([Route("http://app.invalid/hook")], ack_target=True)
    answer = await env.post(receiver, "msg_dns", body_for("pass.activated"))
    assert answer.status_code == 502
    assert "app.invalid does not resolve" in answer.text


async def test_ack_target_timeout_is_a_504(peers: Peers) -> None:
    url = await peers.silent()
    async with target_client() as client:
        result = await send(client, url, BODY, HEADERS, 0.3)
    assert ack_status(result, 0.3) == (504, "ack target: the app did not answer within 0.3 s")


# -- what the app's answer can hold ------------------------------------------------------------------


async def _serve(handler: Any) -> tuple[str, web.AppRunner]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return f"http://127.0.0.1:{runner.addresses[0][1]}/hook", runner


async def test_an_endless_answer_is_kept_up_to_the_limit_and_no_further() -> None:
    async def endless(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(status=200)
        await response.prepare(request)
        for _ in range(100_000):  # 6 GiB, were it all read
            await response.write(b"z" * 65_536)
        return response

    url, runner = await _serve(endless)
    try:
        async with asyncio.timeout(60), target_client() as client:  # did not hang
            result = await send(client, url, BODY, HEADERS, 30.0)
    finally:
        await runner.cleanup()
    assert result.status == 200
    assert result.body == b"z" * RESPONSE_BODY_LIMIT


async def test_a_compressed_answer_is_kept_as_it_came_never_inflated() -> None:
    bomb = gzip.compress(b"0" * (8 * 1024 * 1024))

    async def compressed(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip"})

    url, runner = await _serve(compressed)
    try:
        async with target_client() as client:
            result = await send(client, url, BODY, HEADERS, 10.0)
    finally:
        await runner.cleanup()
    assert result.status == 200 and result.body == bomb[:RESPONSE_BODY_LIMIT]


async def test_a_redirect_is_recorded_as_the_answer_not_followed(env: Env) -> None:
    trap = await env.target()

    async def redirect(request: web.Request) -> web.StreamResponse:
        await request.read()
        raise web.HTTPTemporaryRedirect(trap.url)

    url, runner = await _serve(redirect)
    try:
        receiver = await env.receiver([])
        await env.post(receiver, "msg_redirect", body_for("pass.activated"))
        attempt = await stored_attempt(env.store, "msg_redirect")
        result = await replay(env.store, attempt, url, mode=ORIGINAL)
    finally:
        await runner.cleanup()
    assert result.status == 307 and trap.got == []
