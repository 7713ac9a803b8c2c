"""The check against a target that does not answer like an HTTP app: each case and the summary say
which failure it was (a certificate nobody trusts, a name that does not resolve, a refused port,
bytes that are not HTTP, silence), in the words of the one place that reads httpx's exceptions.
Real peers on 127.0.0.1 (tests/peers.py); name resolution stays on this machine."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from peers import (
    Certificate,
    Peers,
    certificate_fixture,  # noqa: F401  (the "certificate" fixture)
    closed_port_url,
    local_resolver_fixture,  # noqa: F401  (the "local_resolver" fixture)
    peers_fixture,  # noqa: F401  (the "peers" fixture)
)
from sample_receivers import SECRET

from walletpass_tui.check.cases import build_cases
from walletpass_tui.check.report import summary
from walletpass_tui.check.runner import CheckOptions, run_check
from walletpass_tui.cli import main
from walletpass_tui.webhooks.store import Store

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


async def test_a_refused_port_stops_the_check_at_the_first_case(store: Store) -> None:
    url = closed_port_url()
    report = await run_check(CheckOptions(url, SECRET, TOPICS), store=store)
    assert len(report.results) == 1 and report.not_sent == len(build_cases(SECRET, TOPICS)) - 1
    assert report.results[0].answer.error == "connection refused (is your app running?)"
    assert not report.passed and report.exit_code == 1
    assert summary(report) == [
        f"Nothing answered at {url} (connection refused (is your app running?)). Start your app, "
        "or check the URL, and run the check again."
    ]
    assert await store.count() == 1  # the one request tried is in the history


def test_the_command_line_says_one_line_at_a_refused_port(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = closed_port_url()
    code = main(["check", url, "--secret", SECRET])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    lines = [line for line in out.splitlines() if line]
    assert lines[0].startswith(f"Checking {url} with whsec_")
    assert lines[1:] == [
        f"Nothing answered at {url} (connection refused (is your app running?)). Start your app, "
        "or check the URL, and run the check again."
    ]


async def test_an_app_that_goes_away_mid_check_stops_it_there() -> None:
    """Three cases answered, then the app stops listening: the rest are not sent, and the
    summary says where the check stopped."""
    answered = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        answered += 1
        if answered == 3:
            server.close()  # no longer listening: the next case is refused
        writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/webhooks"
    cases = build_cases(SECRET, TOPICS)
    try:
        report = await run_check(CheckOptions(url, SECRET, TOPICS), cases=cases)
    finally:
        server.close()
    assert answered == 3 and len(report.results) == 4
    stop = report.stopped
    assert stop is not None and stop.answer.no_connection and stop.case is cases[3]
    assert report.not_sent == len(cases) - 4
    assert summary(report)[-1] == (
        f"Stopped at {stop.case.id}: connection refused (is your app running?); the "
        f"{report.not_sent} cases after it were not sent."
    )


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
