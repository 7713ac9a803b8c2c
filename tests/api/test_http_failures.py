"""The one place httpx's exceptions become a sentence, and the service's client reading back what
the service sends: bounded in size and time. Real peers on 127.0.0.1 (tests/peers.py) where a
failure can be made for real; the few that cannot (an expired certificate, a connect timeout, a
name server that does not answer) are exception chains built as httpx builds them."""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
from dataclasses import replace
from typing import Any

import httpx
import pytest
from aiohttp import web
from client_helpers import TEMPLATES
from peers import (
    Certificate,
    Peers,
    Resolver,
    certificate_fixture,  # noqa: F401  (the "certificate" fixture)
    local_resolver_fixture,  # noqa: F401  (the "local_resolver" fixture)
    peers_fixture,  # noqa: F401  (the "peers" fixture)
)

from walletpass_tui.api import client as client_module
from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.http_failures import (
    MAX_CHAIN,
    Failure,
    chain,
    received,
    watched_transport,
    why_no_answer,
)
from walletpass_tui.config import Settings

URL = "https://api.example.test/x"


def _raised(outer: type[httpx.HTTPError], *inner: BaseException) -> httpx.HTTPError:
    """``outer`` raised from the chain ``inner`` (first the closest), as httpx/httpcore do."""
    exc: BaseException | None = None
    for error in reversed(inner):
        if exc is not None:
            error.__cause__ = exc
        exc = error
    request = httpx.Request("GET", URL)
    result = outer("", request=request)
    result.__cause__ = exc
    return result


def _expired() -> ssl.SSLCertVerificationError:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error.verify_message = "certificate has expired"
    return error


@pytest.mark.parametrize(
    ("exc", "kind", "text"),
    [
        (
            _raised(httpx.ConnectError, _expired()),
            Failure.EXPIRED_CERT,
            "the certificate of api.example.test has expired",
        ),
        (
            _raised(httpx.ConnectError, socket.gaierror(socket.EAI_AGAIN, "Temporary failure")),
            Failure.NO_SUCH_HOST,
            "api.example.test could not be resolved (the name server did not answer: check "
            "your network)",
        ),
        (
            _raised(httpx.ConnectTimeout, TimeoutError()),
            Failure.TIMEOUT,
            "timed out: api.example.test did not accept the connection within 2 s",
        ),
        (
            _raised(httpx.ConnectError, OSError(101, "Network is unreachable")),
            Failure.UNREACHABLE,
            "api.example.test cannot be reached (no route to it)",
        ),
        (
            _raised(
                httpx.ConnectError,
                OSError("All connection attempts failed"),
                ExceptionGroup(
                    "multiple connection attempts failed",
                    [OSError(99, "Cannot assign"), ConnectionRefusedError(111, "refused")],
                ),
            ),
            Failure.REFUSED,
            "connection refused (is your app running?)",
        ),
        (
            httpx.RemoteProtocolError(
                "peer closed connection without sending complete message"
                " body: received 3 bytes, expected 10"
            ),
            Failure.CUT,
            "the connection was closed in the middle of the answer",
        ),
        (
            httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'."),
            Failure.OTHER,
            "UnsupportedProtocol: Request URL has an unsupported protocol 'ftp://'.",
        ),
    ],
    ids=["expired", "dns-no-answer", "connect-timeout", "no-route", "group", "cut", "other"],
)
def test_each_failure_is_one_sentence(exc: BaseException, kind: Failure, text: str) -> None:
    found = why_no_answer(exc, URL, 2.0)
    assert (found.kind, found.text) == (kind, text)


def test_a_chain_that_loops_or_a_huge_group_is_read_bounded() -> None:
    first, second = OSError("a"), OSError("b")
    first.__context__, second.__context__ = second, first
    assert len(chain(first)) == 2
    group = ExceptionGroup("many", [OSError(str(i)) for i in range(10_000)])
    assert len(chain(group)) == MAX_CHAIN
    assert why_no_answer(group, URL, 1.0).kind is Failure.OTHER


def test_a_hostile_host_name_is_shown_escaped() -> None:
    exc = _raised(httpx.ConnectError, socket.gaierror(socket.EAI_NONAME, "unknown"))
    found = why_no_answer(exc, "http://%1b%5b2J.invalid/", 1.0)
    assert "\x1b" not in found.text


async def test_a_certificate_for_another_name(
    peers: Peers, certificate: Certificate, local_resolver: Resolver
) -> None:
    """Trusted, but issued to 127.0.0.1 and reached as localhost."""
    url = (await peers.tls(certificate)).replace("127.0.0.1", "localhost")
    async with httpx.AsyncClient(verify=certificate.trusting_context()) as client:
        with pytest.raises(httpx.ConnectError) as info:
            await client.post(url, content=b"{}")
    found = why_no_answer(info.value, url, 1.0)
    assert found.text == "the certificate of localhost is for another name"


async def test_the_watched_transport_keeps_only_the_first_bytes(peers: Peers) -> None:
    url = await peers.not_http(b"y" * 10_000)
    async with httpx.AsyncClient(transport=watched_transport()) as client:
        with received() as first, pytest.raises(httpx.RemoteProtocolError):
            await client.post(url, content=b"{}")
    assert bytes(first) == b"y" * 64


# -- the service's client --------------------------------------------------------------------------


@pytest.fixture
def https_settings(settings: Settings) -> Settings:
    return replace(settings, allow_http=False)


async def test_the_client_names_an_untrusted_certificate_and_does_not_retry(
    settings: Settings, peers: Peers, certificate: Certificate
) -> None:
    base = (await peers.tls(certificate)).removesuffix("/hook")
    async with WalletPassClient(replace(settings, base_url=base), retry_base_delay=0) as client:
        with pytest.raises(ApiError) as info:
            await client.list_pass_templates()
    assert info.value.kind == "tls"
    assert str(info.value).startswith(
        "The certificate of 127.0.0.1 is not trusted (self-signed or unknown CA)."
    )


async def test_the_client_names_a_base_url_that_does_not_resolve(
    settings: Settings, local_resolver: Resolver
) -> None:
    settings = replace(settings, base_url="https://api.walletpass.invalid")
    async with WalletPassClient(settings, retry_base_delay=0) as client:
        with pytest.raises(ApiError) as info:
            await client.list_pass_templates()
    assert info.value.kind == "connection"
    assert str(info.value).startswith("api.walletpass.invalid does not resolve.")
    assert "api.walletpass.invalid" in local_resolver.asked


async def test_the_client_names_a_service_that_is_not_http(
    settings: Settings, peers: Peers
) -> None:
    base = (await peers.not_http(b"220 smtp.example ESMTP ready\r\n")).removesuffix("/hook")
    async with WalletPassClient(replace(settings, base_url=base), retry_base_delay=0) as client:
        with pytest.raises(ApiError) as info:
            await client.list_pass_templates()
    assert "127.0.0.1 answered with something that is not HTTP ('220 smtp.example" in str(
        info.value
    )


async def test_an_endless_answer_is_read_no_further_than_the_limit(
    client: WalletPassClient, api_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "ANSWER_LIMIT", 256 * 1024)
    written: list[int] = []

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        chunk = b"[" + b" " * 65_535
        for _ in range(10_000):  # 640 MiB, were it all read
            await response.write(chunk)
            written.append(len(chunk))
        return response

    api_service.reply("GET", TEMPLATES, endless)
    async with asyncio.timeout(60):  # did not hang
        with pytest.raises(ApiError) as info:
            await client.list_pass_templates()
    assert info.value.kind == "too_large"
    assert "is larger than 256.0 KiB; it was not read further." in str(info.value)
    assert sum(written) < 640 * 1024 * 1024


async def test_a_compressed_answer_is_counted_as_it_inflates(
    client: WalletPassClient, api_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked for no compression, the service compresses anyway: 8 MiB of zeros in a few KiB."""
    monkeypatch.setattr(client_module, "ANSWER_LIMIT", 1024 * 1024)
    bomb = gzip.compress(b"0" * (8 * 1024 * 1024), compresslevel=9)
    api_service.answer("GET", TEMPLATES, body=bomb, headers={"Content-Encoding": "gzip"})
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert info.value.kind == "too_large"
    assert api_service.requests[0].headers["Accept-Encoding"] == "identity"


async def test_a_trickling_answer_cannot_hold_the_client_past_its_timeout(
    settings: Settings, api_service: Any
) -> None:
    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for _ in range(6000):  # ten minutes, a byte every 0.1 s: each read well within 0.5 s
            await response.write(b" ")
            await asyncio.sleep(0.1)
        return response

    api_service.reply("GET", TEMPLATES, trickle)
    async with (
        asyncio.timeout(120),  # did not hang
        WalletPassClient(replace(settings, timeout_s=0.5), retry_base_delay=0) as client,
    ):
        with pytest.raises(ApiError) as info:
            await client.list_pass_templates()
    assert info.value.kind == "timeout"
    assert len(api_service.requests) == 3  # each try cut at the deadline, then retried
