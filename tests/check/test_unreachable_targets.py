"""The check against a target that does not answer like an HTTP app: each case and the summary say
which failure it was (a certificate nobody trusts, a name that does not resolve, a refused port,
bytes that are not HTTP, silence), in the words of the one place that reads httpx's exceptions.
Real peers on 127.0.0.1 (tests/peers.py); name resolution stays on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from peers import (
    Certificate,
    Peers,
    Resolver,
    certificate_fixture,  # noqa: F401  (the "certificate" fixture)
    closed_port_url,
    local_resolver_fixture,  # noqa: F401  (the "local_resolver" fixture)
    peers_fixture,  # noqa: F401  (the "peers" fixture)
)
from sample_receivers import SECRET

from walletpass_tui.check.report import summary
from walletpass_tui.check.runner import CheckOptions, run_check
from walletpass_tui.cli import main

TOPICS = ("pass.activated",)


async def _nothing_answered(url: str, timeout_s: float = 15.0) -> tuple[set[str | None], str]:
    report = await run_check(CheckOptions(url, SECRET, TOPICS, timeout_s=timeout_s))
    assert report.unreachable and not report.passed
    return {r.answer.error for r in report.results}, "\n".join(summary(report))


async def test_a_self_signed_certificate(peers: Peers, certificate: Certificate) -> None:
    errors, said = await _nothing_answered(await peers.tls(certificate))
    sentence = (
        "the certificate of 127.0.0.1 is not trusted (self-signed or unknown CA): "
        "pass --ca-bundle FILE with your CA, or --insecure"
    )
    assert errors == {sentence}
    assert f"({sentence})" in said
    assert "connection refused" not in said


async def test_bytes_that_are_not_http(peers: Peers) -> None:
    errors, said = await _nothing_answered(await peers.not_http())
    not_http = "127.0.0.1 answered with something that is not HTTP ('SSH-2.0-OpenSSH_9.6"
    # The slow-network case is still sending its body in pieces when the peer hangs up.
    sending = "the connection was closed while the request was being sent"
    assert any((e or "").startswith(not_http) for e in errors)
    assert all((e or "").startswith(not_http) or e == sending for e in errors), errors
    assert "closed without an answer" not in said


async def test_silence_times_out(peers: Peers) -> None:
    errors, _ = await _nothing_answered(await peers.silent(), timeout_s=0.3)
    assert errors == {"timed out: no answer within 0.3 s"}


async def test_a_refused_port() -> None:
    errors, said = await _nothing_answered(closed_port_url())
    assert errors == {"connection refused (is your app running?)"}
    assert "Start your app" in said


def test_the_command_line_names_a_name_that_does_not_resolve(
    clean_env: Path, capsys: pytest.CaptureFixture[str], local_resolver: Resolver
) -> None:
    code = main(["check", "http://my-app.invalid:3000/webhooks", "--secret", SECRET])
    out, err = capsys.readouterr()
    assert code == 1
    assert "nothing answered at http://my-app.invalid:3000/webhooks" in out
    assert "(my-app.invalid does not resolve)" in out
    assert "Traceback" not in out + err
    assert "my-app.invalid" in local_resolver.asked


async def test_no_cookie_an_answer_sets_is_sent_with_the_next_case(serve: Any) -> None:
    cookies: list[str | None] = []

    async def sets_a_cookie(request: web.Request) -> web.StreamResponse:
        await request.read()
        cookies.append(request.headers.get("Cookie"))
        response = web.Response(status=204)
        response.set_cookie("session", "from-an-earlier-case")
        return response

    target = await serve(sets_a_cookie)
    report = await run_check(CheckOptions(target.url, SECRET, TOPICS))
    assert len(cookies) == len(report.results) > 1
    assert cookies == [None] * len(cookies)
