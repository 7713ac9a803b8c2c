"""WalletPassClient when the network fails, before anything is sent, and with secrets: against real
HTTP servers on 127.0.0.1 (tests/api/conftest.py)."""

from __future__ import annotations

import json
import os
import ssl
import stat
from dataclasses import replace
from typing import Any

import httpx
import pytest
from aiohttp import web
from client_helpers import BOTH, ENDPOINTS, HOOK_URL, TEMPLATES, assert_no_secret, closed_port

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.errors import ApiError
from walletpass_tui.config import Settings
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

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
    assert "127.0.0.1 did not answer in TLS (does it serve http://, not https://?)" in str(
        info.value
    )
    assert "Check the URL's scheme" in str(info.value)


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
    settings: Settings,
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
    watched = WalletPassClient(settings, retry_base_delay=0, on_endpoint_created=created.append)
    async with watched:
        with pytest.raises(ApiError) as info:
            await watched.create_webhook_endpoint(HOOK_URL, BOTH)
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
