"""WalletPassClient against real HTTP servers on 127.0.0.1: paths, headers, bodies, every failure.

``api_service`` stands in for the ``base_url`` host and ``hooks_service`` for the
``registration_url`` host (tests/api/conftest.py); both record every request they receive.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from client_helpers import BOTH, ENDPOINTS, HOOK_URL, TEMPLATES, assert_no_secret

from walletpass_tui import __version__
from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.errors import ApiError
from walletpass_tui.config import load_settings

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
    assert "Try again in 2 min." in str(exc)
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
