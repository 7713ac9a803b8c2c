"""WalletPassClient against real HTTP servers on 127.0.0.1: paths, headers, bodies, every failure.

``api_service`` stands in for the ``base_url`` host and ``hooks_service`` for the
``registration_url`` host (tests/api/conftest.py); both record every request they receive.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import stat
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from walletpass_tui import __version__
from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.errors import ApiError
from walletpass_tui.config import load_settings
from walletpass_tui.webhooks.endpoints import EndpointRegistry

TEMPLATES = "/api/v0/passTemplates"
ENDPOINTS = "/v0/webhookEndpoints"
HOOK_URL = "https://example.com/webhooks"
BOTH = ["pass.activated", "pass.deactivated"]


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_no_secret(exc: ApiError, *secrets: str) -> None:
    for text in (str(exc), repr(exc), exc.message, exc.hint or ""):
        for secret in secrets:
            assert secret not in text


# -- the exact requests ------------------------------------------------------------------------


async def test_list_templates_sends_the_documented_request(
    client: WalletPassClient, api_service: Any, hooks_service: Any, api_key: str
) -> None:
    api_service.answer("GET", TEMPLATES, json=[{"id": "tpl_1", "name": "Gym"}])

    result = await client.list_pass_templates()

    assert result.templates == [{"id": "tpl_1", "name": "Gym"}]
    assert hooks_service.requests == []
    [request] = api_service.requests
    assert (request.method, request.path, request.query) == ("GET", TEMPLATES, "")
    assert request.headers["Accept"] == "application/json"
    assert request.headers["Authorization"] == f"Bearer {api_key}"
    assert request.headers.getall("Authorization") == [f"Bearer {api_key}"]
    user_agent = request.headers["User-Agent"]
    assert "walletpass-tui" in user_agent and __version__ in user_agent
    assert "Content-Type" not in request.headers
    assert request.body == b""


@pytest.mark.parametrize("enabled", [True, False])
async def test_create_endpoint_sends_the_documented_request(
    client: WalletPassClient,
    api_service: Any,
    hooks_service: Any,
    api_key: str,
    endpoint_json: Any,
    enabled: bool,
) -> None:
    hooks_service.answer("POST", ENDPOINTS, status=201, json=endpoint_json(enabled=enabled))

    await client.create_webhook_endpoint(HOOK_URL, BOTH, enabled=enabled)

    assert api_service.requests == [], "the create call must go to the registration host"
    [request] = hooks_service.requests
    assert (request.method, request.path, request.query) == ("POST", "/v0/webhookEndpoints", "")
    assert not request.path.startswith("/api"), "the registration path has no /api segment"
    assert request.headers["Accept"] == "application/json"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Authorization"] == f"Bearer {api_key}"
    assert "walletpass-tui" in request.headers["User-Agent"]
    assert __version__ in request.headers["User-Agent"]

    parsed = request.json()
    assert parsed == {"enabledTopics": BOTH, "enabled": enabled, "url": HOOK_URL}
    assert list(parsed) == ["enabledTopics", "enabled", "url"]
    flag = "true" if enabled else "false"
    assert (
        request.body
        == (
            '{"enabledTopics": ["pass.activated", "pass.deactivated"], '
            f'"enabled": {flag}, "url": "https://example.com/webhooks"}}'
        ).encode()
    )
    assert int(request.headers["Content-Length"]) == len(request.body)


async def test_create_sends_a_single_topic_and_a_trimmed_url(
    client: WalletPassClient, hooks_service: Any, endpoint_json: Any
) -> None:
    hooks_service.answer("POST", ENDPOINTS, json=endpoint_json(enabledTopics=["pass.deactivated"]))
    await client.create_webhook_endpoint(f"  {HOOK_URL}\n", ["pass.deactivated"])
    assert hooks_service.requests[0].json() == {
        "enabledTopics": ["pass.deactivated"],
        "enabled": True,
        "url": HOOK_URL,
    }


async def test_url_prefixes_and_trailing_slashes_are_respected(
    api_service: Any, hooks_service: Any, tmp_path: Path, endpoint_json: Any, api_key: str
) -> None:
    """A base URL with a path keeps it; a trailing slash does not double the separator."""
    settings = load_settings(
        {
            "base_url": api_service.url + "/tenant-a/",
            "registration_url": hooks_service.url + "/hooks/",
            "api_key": api_key,
            "home": str(tmp_path),
        },
        env={},
        config_file=None,
    )
    api_service.answer("GET", "/tenant-a" + TEMPLATES, json=[])
    hooks_service.answer("POST", "/hooks" + ENDPOINTS, json=endpoint_json())
    async with WalletPassClient(settings) as client:
        await client.list_pass_templates()
        await client.create_webhook_endpoint(HOOK_URL, ["pass.activated"])
    assert [r.path for r in api_service.requests] == ["/tenant-a/api/v0/passTemplates"]
    assert [r.path for r in hooks_service.requests] == ["/hooks/v0/webhookEndpoints"]


async def test_created_endpoint_is_parsed_with_every_field(
    client: WalletPassClient, hooks_service: Any, endpoint_json: Any, endpoint_secret: str
) -> None:
    answer = endpoint_json(extraField={"kept": True})
    hooks_service.answer("POST", ENDPOINTS, status=201, json=answer)

    endpoint = await client.create_webhook_endpoint(HOOK_URL, BOTH)

    assert endpoint.id == "ep_2ZxK81bq0TQ"
    assert endpoint.url == HOOK_URL
    assert endpoint.enabled_topics == tuple(BOTH)
    assert endpoint.enabled is True
    assert endpoint.secret.reveal() == endpoint_secret
    assert endpoint.created_at == datetime(2025, 3, 4, 5, 6, 7, 89000, tzinfo=UTC)
    assert endpoint.to_service_json() == answer
    assert endpoint_secret not in repr(endpoint)


# -- template list shapes ----------------------------------------------------------------------

TEMPLATE_A = {
    "id": "tpl_7Qm2Lx",
    "name": "Gym Membership",
    "style": {"colors": ["#000", "#fff"], "logo": None},
    "undocumentedNumber": 12.5,
    "ünïcode": "Café ☕",
}
TEMPLATE_B = {"id": "tpl_9Pz1Ka", "title": "Loyalty"}


@pytest.mark.parametrize(
    ("payload", "container"),
    [
        ([TEMPLATE_A, TEMPLATE_B], None),
        ({"data": [TEMPLATE_A, TEMPLATE_B]}, "data"),
        ({"items": [TEMPLATE_A, TEMPLATE_B]}, "items"),
        ({"templates": [TEMPLATE_A, TEMPLATE_B]}, "templates"),
        ({"passTemplates": [TEMPLATE_A, TEMPLATE_B], "nextCursor": "abc"}, "passTemplates"),
    ],
)
async def test_template_list_shapes_are_accepted_with_every_field(
    client: WalletPassClient, api_service: Any, payload: Any, container: str | None
) -> None:
    api_service.answer("GET", TEMPLATES, json=payload)
    result = await client.list_pass_templates()
    assert result.templates == [TEMPLATE_A, TEMPLATE_B]
    assert result.container == container
    assert result.raw_text == json.dumps(payload)
    if isinstance(payload, dict):
        assert dict(result.extra) == {k: v for k, v in payload.items() if k != container}


@pytest.mark.parametrize(
    "body",
    [
        '"templates"',
        "42",
        "null",
        "true",
        '{"count": 2}',
        '{"data": [1, 2]}',
        '[{"id": "tpl_1"}, "tpl_2"]',
        '{"data": [{"id": "a"}], "items": [{"id": "b"}]}',
    ],
)
async def test_odd_template_shapes_raise_bad_shape_keeping_the_raw_body(
    client: WalletPassClient, api_service: Any, body: str
) -> None:
    api_service.answer("GET", TEMPLATES, body=body, headers={"Content-Type": "application/json"})
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert info.value.kind == "bad_shape"
    assert info.value.body == body
    assert "shape" in str(info.value)
    assert len(api_service.requests) == 1, "a bad shape is not retried"


async def test_empty_template_list(client: WalletPassClient, api_service: Any) -> None:
    api_service.answer("GET", TEMPLATES, json=[])
    assert (await client.list_pass_templates()).templates == []


# -- HTTP failures -----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failures_say_to_check_the_api_key(
    client: WalletPassClient, api_service: Any, api_key: str, status: int
) -> None:
    api_service.answer("GET", TEMPLATES, status=status, json={"error": "invalid key"})
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    exc = info.value
    assert (exc.kind, exc.status) == ("auth", status)
    assert "API key" in str(exc)
    assert str(status) in str(exc)
    assert exc.body == '{"error": "invalid key"}'
    assert len(api_service.requests) == 1, "an auth failure is not retried"
    assert_no_secret(exc, api_key)


@pytest.mark.parametrize(
    ("status", "body"),
    [(401, "unknown key {key}"), (400, '{{"error": "bad header Bearer {key}"}}'), (200, "<{key}>")],
)
async def test_an_echoed_api_key_is_masked_in_the_kept_body(
    client: WalletPassClient, api_service: Any, api_key: str, status: int, body: str
) -> None:
    """Echoing the key is the service's fault; the error we keep and show still masks it."""
    api_service.answer("GET", TEMPLATES, status=status, body=body.format(key=api_key))
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert info.value.body is not None
    assert api_key not in info.value.body
    assert "wp_live_…7d6c" in info.value.body


async def test_an_echoed_api_key_is_masked_in_a_create_answer_but_the_secret_kept(
    client: WalletPassClient,
    hooks_service: Any,
    api_key: str,
    endpoint_json: Any,
    endpoint_secret: str,
) -> None:
    answer = endpoint_json(note=f"created with {api_key}")
    del answer["createdAt"]
    hooks_service.answer("POST", ENDPOINTS, json=answer)
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    body = info.value.body or ""
    assert api_key not in body
    assert endpoint_secret in body


async def test_auth_failure_on_create(
    client: WalletPassClient, hooks_service: Any, api_key: str
) -> None:
    hooks_service.answer("POST", ENDPOINTS, status=401, body="Unauthorized")
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert info.value.kind == "auth"
    assert "POST /v0/webhookEndpoints" in str(info.value)
    assert_no_secret(info.value, api_key)


async def test_not_found_hints_at_both_urls(
    client: WalletPassClient, api_service: Any, hooks_service: Any
) -> None:
    # Nothing is configured on either server: both answer 404.
    for call in (
        client.list_pass_templates(),
        client.create_webhook_endpoint(HOOK_URL, BOTH),
    ):
        with pytest.raises(ApiError) as info:
            await call
        assert (info.value.kind, info.value.status) == ("not_found", 404)
        assert "WALLETPASS_BASE_URL" in str(info.value)
        assert "WALLETPASS_REGISTRATION_URL" in str(info.value)
    assert len(api_service.requests) == 1
    assert len(hooks_service.requests) == 1


async def test_rate_limited_with_a_long_retry_after_is_reported_at_once(
    client: WalletPassClient, api_service: Any
) -> None:
    api_service.answer("GET", TEMPLATES, status=429, headers={"Retry-After": "120"})
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    exc = info.value
    assert (exc.kind, exc.status, exc.retry_after) == ("rate_limited", 429, 120.0)
    assert "120 s" in str(exc)
    assert len(api_service.requests) == 1


async def test_rate_limited_get_with_a_short_retry_after_is_retried(
    client: WalletPassClient, api_service: Any
) -> None:
    api_service.reply(
        "GET",
        TEMPLATES,
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"json": [TEMPLATE_B]},
    )
    assert (await client.list_pass_templates()).templates == [TEMPLATE_B]
    assert len(api_service.requests) == 2


async def test_rate_limited_without_retry_after(client: WalletPassClient, api_service: Any) -> None:
    api_service.answer("GET", TEMPLATES, status=429)
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert info.value.kind == "rate_limited"
    assert info.value.retry_after is None


async def test_rate_limited_post_is_never_retried(
    client: WalletPassClient, hooks_service: Any
) -> None:
    hooks_service.answer("POST", ENDPOINTS, status=429, headers={"Retry-After": "0"})
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert (info.value.kind, info.value.retry_after) == ("rate_limited", 0.0)
    assert len(hooks_service.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_on_get_are_retried_then_reported(
    client: WalletPassClient, api_service: Any, status: int
) -> None:
    api_service.answer("GET", TEMPLATES, status=status, body="upstream exploded")
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    exc = info.value
    assert (exc.kind, exc.status) == ("server", status)
    assert exc.body == "upstream exploded"
    assert "try again later" in str(exc)
    assert "(3 tries, " in str(exc)
    assert len(api_service.requests) == 3


async def test_a_transient_server_error_on_get_recovers(
    client: WalletPassClient, api_service: Any
) -> None:
    api_service.reply("GET", TEMPLATES, {"status": 503}, {"status": 502}, {"json": [TEMPLATE_A]})
    assert (await client.list_pass_templates()).templates == [TEMPLATE_A]
    assert len(api_service.requests) == 3


@pytest.mark.parametrize("status", [500, 503])
async def test_server_errors_on_post_are_never_retried(
    client: WalletPassClient, hooks_service: Any, endpoint_json: Any, status: int
) -> None:
    # Were it retried, the second answer would succeed: a second endpoint would exist.
    hooks_service.reply("POST", ENDPOINTS, {"status": status}, {"json": endpoint_json()})
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert (info.value.kind, info.value.status) == ("server", status)
    assert len(hooks_service.requests_to("POST", ENDPOINTS)) == 1


async def test_other_client_errors_keep_the_service_text(
    client: WalletPassClient, hooks_service: Any
) -> None:
    hooks_service.answer("POST", ENDPOINTS, status=422, json={"message": "url is not reachable"})
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    exc = info.value
    assert (exc.kind, exc.status) == ("http", 422)
    assert "url is not reachable" in (exc.body or "")
    assert "422" in str(exc)


async def test_a_redirect_is_not_followed(client: WalletPassClient, api_service: Any) -> None:
    """Following a redirect could send the API key to another host."""
    api_service.answer("GET", TEMPLATES, status=302, headers={"Location": "https://elsewhere/"})
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert (info.value.kind, info.value.status) == ("http", 302)
    assert len(api_service.requests) == 1


async def test_a_status_without_reason_phrase_reads_well(
    client: WalletPassClient, api_service: Any
) -> None:
    api_service.answer("GET", TEMPLATES, status=599)
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert "answered 599 to GET /api/v0/passTemplates (3 tries, " in str(info.value)


# -- transport failures ------------------------------------------------------------------------


async def test_get_timeout(settings: Any, api_service: Any) -> None:
    api_service.answer("GET", TEMPLATES, json=[], delay=5)
    async with WalletPassClient(replace(settings, timeout_s=0.2), retry_base_delay=0) as client:
        with pytest.raises(ApiError) as info:
            await client.list_pass_templates()
    assert info.value.kind == "timeout"
    assert "did not answer within 0.2 s (3 tries, " in str(info.value)  # says it was retried
    assert "timeout_s" in str(info.value)
    assert len(api_service.requests) == 3, "a GET that timed out is retried"


async def test_post_timeout_is_not_retried(
    settings: Any, hooks_service: Any, endpoint_json: Any
) -> None:
    hooks_service.answer("POST", ENDPOINTS, json=endpoint_json(), delay=5)
    created: list[Any] = []
    async with WalletPassClient(
        replace(settings, timeout_s=0.2), retry_base_delay=0, on_endpoint_created=created.append
    ) as client:
        with pytest.raises(ApiError) as info:
            await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert info.value.kind == "timeout"
    assert "tries" not in str(info.value)  # a POST is sent once
    assert "may still have been carried out" in str(info.value)
    assert len(hooks_service.requests) == 1
    assert created == []


async def test_connection_refused(settings: Any) -> None:
    port = closed_port()
    settings = replace(
        settings, base_url=f"http://127.0.0.1:{port}", registration_url=f"http://127.0.0.1:{port}"
    )
    async with WalletPassClient(settings, retry_base_delay=0) as client:
        for call in (
            client.list_pass_templates(),
            client.create_webhook_endpoint(HOOK_URL, BOTH),
        ):
            with pytest.raises(ApiError) as info:
                await call
            assert info.value.kind == "connection"
            assert info.value.status is None
            assert "Could not connect to 127.0.0.1" in str(info.value)


async def test_connection_closed_mid_answer(client: WalletPassClient, api_service: Any) -> None:
    async def cut_short(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = 1000
        await response.prepare(request)
        await response.write(b'[{"id": "tpl_1"')
        assert request.transport is not None
        request.transport.close()
        return response

    api_service.reply("GET", TEMPLATES, cut_short)
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert info.value.kind == "connection"
    assert "closed before a full answer" in str(info.value)
    assert len(api_service.requests) == 3


async def test_tls_handshake_failure_against_a_plain_http_server(
    settings: Any, api_service: Any
) -> None:
    """A real TLS error: https:// to a server that speaks plain HTTP."""
    settings = replace(settings, base_url=api_service.url.replace("http://", "https://"))
    async with WalletPassClient(settings, retry_base_delay=0) as client:
        with pytest.raises(ApiError) as info:
            await client.list_pass_templates()
    assert info.value.kind == "tls"
    assert "TLS handshake with 127.0.0.1 failed" in str(info.value)
    assert "certificate" in str(info.value)


async def test_tls_certificate_failure(settings: Any) -> None:
    """Certificate verification cannot fail against 127.0.0.1 without a CA; a mock raises it."""
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        try:
            raise ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] self-signed")
        except ssl.SSLError as exc:
            raise httpx.ConnectError("handshake failed", request=request) from exc

    async with WalletPassClient(settings, transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(ApiError) as info:
            await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert info.value.kind == "tls"
    assert len(calls) == 1, "a TLS failure is not retried"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("<html><body>Welcome to nginx!</body></html>", "not JSON"),
        ("", "not JSON"),
        ("x", "not JSON"),
        ("OK", "not JSON"),
        ('[{"id": "tpl_1", "name": "Gy', "truncated JSON"),
        ('{"data": [{"id": "tpl_1"}', "truncated JSON"),
    ],
)
async def test_bodies_that_are_not_json_on_get(
    client: WalletPassClient, api_service: Any, body: str, why: str
) -> None:
    api_service.answer("GET", TEMPLATES, body=body, headers={"Content-Type": "application/json"})
    with pytest.raises(ApiError) as info:
        await client.list_pass_templates()
    assert info.value.kind == "bad_json"
    assert why in str(info.value)
    assert info.value.body == body


async def test_truncated_create_answer_keeps_the_raw_body(
    client: WalletPassClient, hooks_service: Any, endpoint_json: Any, endpoint_secret: str
) -> None:
    full = json.dumps(endpoint_json())
    cut = full[: full.index(endpoint_secret) + len(endpoint_secret) + 5]
    hooks_service.answer("POST", ENDPOINTS, body=cut)
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert info.value.kind == "bad_json"
    assert "truncated" in str(info.value)
    assert info.value.body == cut, "the body (with the only copy of the secret) is kept"
    assert_no_secret(info.value, endpoint_secret)


@pytest.mark.parametrize(
    "missing", ["id", "secret", "url", "enabledTopics", "enabled", "createdAt"]
)
async def test_create_answer_missing_a_field(
    client: WalletPassClient,
    hooks_service: Any,
    endpoint_json: Any,
    endpoint_secret: str,
    missing: str,
) -> None:
    answer = endpoint_json()
    del answer[missing]
    raw = json.dumps(answer)
    hooks_service.answer("POST", ENDPOINTS, status=201, body=raw)
    created: list[Any] = []
    client._on_created = created.append
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    exc = info.value
    assert exc.kind == "bad_shape"
    assert f"missing {missing}" in str(exc)
    assert exc.body == raw
    assert created == []
    assert_no_secret(exc, endpoint_secret)


@pytest.mark.parametrize(
    ("override", "why"),
    [
        ({"id": "wh_1"}, "id does not start with ep_"),
        ({"secret": "not-a-secret"}, "secret does not start with whsec_"),
        ({"enabledTopics": "pass.activated"}, "enabledTopics"),
        ({"enabled": "yes"}, "enabled"),
        ({"createdAt": "yesterday"}, "createdAt"),
        ({"createdAt": "2025-03-04T05:06:07.089"}, "createdAt"),
    ],
)
async def test_create_answer_with_wrong_field_types(
    client: WalletPassClient, hooks_service: Any, endpoint_json: Any, override: Any, why: str
) -> None:
    hooks_service.answer("POST", ENDPOINTS, json=endpoint_json(**override))
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert info.value.kind == "bad_shape"
    assert why in str(info.value)


async def test_create_answer_that_is_not_an_object(
    client: WalletPassClient, hooks_service: Any
) -> None:
    hooks_service.answer("POST", ENDPOINTS, json=["ep_1"])
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH)
    assert info.value.kind == "bad_shape"
    assert info.value.body == '["ep_1"]'


# -- validation before anything is sent --------------------------------------------------------


async def test_no_api_key_sends_nothing(
    settings: Any, api_service: Any, hooks_service: Any
) -> None:
    async with WalletPassClient(replace(settings, api_key=None)) as client:
        for call in (
            client.list_pass_templates(),
            client.create_webhook_endpoint(HOOK_URL, BOTH),
        ):
            with pytest.raises(ApiError) as info:
                await call
            assert info.value.kind == "missing_key"
            assert "WALLETPASS_API_KEY" in str(info.value)
            assert "api_key in the config file" in str(info.value)
    assert api_service.requests == [] and hooks_service.requests == []


@pytest.mark.parametrize(
    ("field_name", "env_var"),
    [("base_url", "WALLETPASS_BASE_URL"), ("registration_url", "WALLETPASS_REGISTRATION_URL")],
)
async def test_missing_service_urls_send_nothing(
    settings: Any, api_service: Any, hooks_service: Any, field_name: str, env_var: str
) -> None:
    async with WalletPassClient(replace(settings, **{field_name: None})) as client:
        call = (
            client.list_pass_templates()
            if field_name == "base_url"
            else client.create_webhook_endpoint(HOOK_URL, BOTH)
        )
        with pytest.raises(ApiError) as info:
            await call
    assert info.value.kind == "invalid_request"
    assert env_var in str(info.value)
    assert api_service.requests == [] and hooks_service.requests == []


@pytest.mark.parametrize(
    ("topics", "why"),
    [
        ([], "at least one topic"),
        (["pass.created"], "Unknown topic 'pass.created'"),
        (["pass.activated", "PASS.DEACTIVATED"], "Unknown topic"),
        (["pass.activated", "pass.activated"], "given twice"),
        (["pass.deactivated", "pass.activated", "pass.deactivated"], "given twice"),
    ],
)
async def test_bad_topics_send_nothing(
    client: WalletPassClient, hooks_service: Any, topics: list[str], why: str
) -> None:
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, topics)
    assert info.value.kind == "invalid_request"
    assert why in str(info.value)
    assert hooks_service.requests == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/webhooks", "https://"),
        ("example.com/webhooks", "https://"),
        ("ftp://example.com/webhooks", "https://"),
        ("", "https://"),
        ("https://", "name a host"),
        ("https:///webhooks", "name a host"),
        ("https://exa mple.com/webhooks", "spaces"),
        ("https://example.com:99999/webhooks", "port"),
    ],
)
async def test_bad_urls_send_nothing(
    client: WalletPassClient, hooks_service: Any, url: str, why: str
) -> None:
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(url, BOTH)
    assert info.value.kind == "invalid_request"
    assert why in str(info.value)
    assert hooks_service.requests == []


async def test_http_urls_are_allowed_with_allow_http(
    settings: Any, hooks_service: Any, endpoint_json: Any
) -> None:
    url = "http://127.0.0.1:8787/webhooks"
    hooks_service.answer("POST", ENDPOINTS, json=endpoint_json(url=url))
    async with WalletPassClient(replace(settings, allow_http=True)) as client:
        endpoint = await client.create_webhook_endpoint(url, ["pass.activated"])
    assert endpoint.url == url
    assert hooks_service.requests[0].json()["url"] == url


async def test_enabled_must_be_a_boolean(client: WalletPassClient, hooks_service: Any) -> None:
    with pytest.raises(ApiError) as info:
        await client.create_webhook_endpoint(HOOK_URL, BOTH, enabled=1)  # type: ignore[arg-type]
    assert info.value.kind == "invalid_request"
    assert hooks_service.requests == []


# -- the created endpoint is stored at once ----------------------------------------------------


async def test_created_endpoint_is_stored_before_create_returns(
    settings: Any, hooks_service: Any, endpoint_json: Any, endpoint_secret: str
) -> None:
    registry = EndpointRegistry(settings.endpoints_path)
    seen_on_disk: list[int] = []

    def record(endpoint: Any) -> None:
        registry.record_created(endpoint)
        seen_on_disk.append(stat.S_IMODE(os.stat(registry.path).st_mode))

    hooks_service.answer("POST", ENDPOINTS, status=201, json=endpoint_json())
    async with WalletPassClient(settings, on_endpoint_created=record) as client:
        endpoint = await client.create_webhook_endpoint(HOOK_URL, BOTH)

    assert seen_on_disk == [0o600]
    assert stat.S_IMODE(os.stat(registry.path.parent).st_mode) == 0o700
    [stored] = registry.load()
    assert stored.id == endpoint.id
    assert stored.secret.reveal() == endpoint_secret
    assert stored.topics == tuple(BOTH)
    assert stored.created_at == "2025-03-04T05:06:07.089Z"
    assert stored.origin == "created"
    assert dict(stored.raw or {}) == endpoint_json()
    assert [k.endpoint_id for k in registry.signing_keys()] == [endpoint.id]
    assert endpoint_secret not in repr(stored)


# -- secrets never shown -----------------------------------------------------------------------


def test_client_repr_masks_the_key(settings: Any, api_key: str) -> None:
    client = WalletPassClient(settings)
    assert api_key not in repr(client)
    assert "wp_live_…7d6c" in repr(client)
    assert api_key not in repr(settings)
    assert api_key not in str(settings)
    assert "(no key)" in repr(WalletPassClient(replace(settings, api_key=None)))
