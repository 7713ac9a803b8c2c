"""Parsing what the service sends, and checking what we are about to send, without a network."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.api.errors import ApiError, excerpt, hint_for_status
from walletpass_tui.api.models import (
    WebhookEndpoint,
    format_created_at,
    parse_created_at,
    parse_template_list,
    template_title,
    validate_topics,
)
from walletpass_tui.api.topics import TOPICS
from walletpass_tui.api.urls import url_problem


def test_topics_are_the_two_documented_ones() -> None:
    assert TOPICS == ("pass.activated", "pass.deactivated")


@pytest.mark.parametrize(
    "topics", [["pass.activated"], ["pass.deactivated"], list(TOPICS), ("pass.deactivated",)]
)
def test_valid_topics_keep_their_order(topics: Any) -> None:
    assert validate_topics(topics) == list(topics)


@pytest.mark.parametrize(
    ("topics", "why"),
    [
        ([], "at least one topic"),
        (["pass.updated"], "Unknown topic 'pass.updated'"),
        (["Pass.Activated"], "Unknown topic"),
        (["pass.activated", "pass.activated"], "pass.activated is given twice"),
    ],
)
def test_invalid_topics(topics: list[str], why: str) -> None:
    with pytest.raises(ApiError) as info:
        validate_topics(topics)
    assert info.value.kind == "invalid_request"
    assert why in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/webhooks",
        "https://example.com",
        "https://ab12.ngrok.app:8443/wh?x=1",
        "https://[2001:db8::1]/webhooks",
        "  https://example.com/padded  ",
    ],
)
def test_acceptable_endpoint_urls(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "allow_http", "ok"),
    [
        ("http://localhost:8787/webhooks", False, False),
        ("http://localhost:8787/webhooks", True, True),
        ("https://localhost/webhooks", True, True),
        ("ftp://localhost/webhooks", True, False),
        ("http://", True, False),
        ("https://[::1/webhooks", False, False),
    ],
)
def test_http_only_with_allow_http(url: str, allow_http: bool, ok: bool) -> None:
    assert (url_problem(url, allow_http=allow_http) is None) is ok


def test_created_at_round_trip_keeps_milliseconds() -> None:
    stamp = parse_created_at("2025-03-04T05:06:07.089Z")
    assert stamp == datetime(2025, 3, 4, 5, 6, 7, 89000, tzinfo=UTC)
    assert format_created_at(stamp) == "2025-03-04T05:06:07.089Z"
    other_zone = parse_created_at("2025-03-04T07:06:07.089+02:00")
    assert other_zone == stamp and other_zone.tzinfo == UTC
    aware = datetime(2025, 3, 4, 7, 6, 7, 89000, tzinfo=timezone(timedelta(hours=2)))
    assert format_created_at(aware) == "2025-03-04T05:06:07.089Z"


@pytest.mark.parametrize("text", ["2025-03-04T05:06:07.089", "yesterday", 1741064767, None])
def test_created_at_must_be_an_aware_iso_timestamp(text: Any) -> None:
    with pytest.raises(ValueError):
        parse_created_at(text)


ANSWER = {
    "id": "ep_2ZxK81bq0TQ",
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "url": "https://example.com/webhooks",
    "enabledTopics": ["pass.activated"],
    "enabled": False,
    "createdAt": "2025-03-04T05:06:07.089Z",
}


def test_endpoint_from_response_and_back() -> None:
    raw = json.dumps(ANSWER)
    endpoint = WebhookEndpoint.from_response(json.loads(raw), raw)
    assert endpoint.enabled is False
    assert endpoint.to_service_json() == ANSWER
    rebuilt = WebhookEndpoint(
        id=endpoint.id,
        url=endpoint.url,
        enabled_topics=endpoint.enabled_topics,
        enabled=endpoint.enabled,
        secret=endpoint.secret,
        created_at=endpoint.created_at,
    )
    assert rebuilt == endpoint  # raw is not compared
    assert rebuilt.to_service_json() == ANSWER


def test_endpoint_repr_and_str_hide_the_secret() -> None:
    raw = json.dumps(ANSWER)
    endpoint = WebhookEndpoint.from_response(json.loads(raw), raw)
    for text in (repr(endpoint), str(endpoint), f"{endpoint}", f"{endpoint.secret}"):
        assert ANSWER["secret"] not in text
    assert "whsec_…LaSw" in repr(endpoint)


@pytest.mark.parametrize("payload", [None, [], "ep_1", 3])
def test_endpoint_from_non_object(payload: Any) -> None:
    with pytest.raises(ApiError) as info:
        WebhookEndpoint.from_response(payload, json.dumps(payload))
    assert info.value.kind == "bad_shape"
    assert "not a JSON object" in str(info.value)


def test_missing_fields_are_all_named() -> None:
    with pytest.raises(ApiError) as info:
        WebhookEndpoint.from_response({"id": "ep_1"}, '{"id": "ep_1"}')
    assert "missing secret, url, enabledTopics, enabled, createdAt" in str(info.value)
    assert info.value.body == '{"id": "ep_1"}'


def test_template_list_keeps_unknown_fields_and_paging() -> None:
    payload = {"data": [{"id": "t", "nested": {"a": [1, 2]}}], "next": "c2", "total": 1}
    result = parse_template_list(payload, "raw text")
    assert result.templates == [{"id": "t", "nested": {"a": [1, 2]}}]
    assert result.container == "data"
    assert dict(result.extra) == {"next": "c2", "total": 1}
    assert result.raw_text == "raw text"


def test_template_list_under_an_unknown_key() -> None:
    result = parse_template_list({"records": [{"id": "t"}], "page": 1}, "")
    assert (result.container, result.templates) == ("records", [{"id": "t"}])


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ("text", "a JSON str"),
        (7, "a JSON int"),
        (None, "a JSON NoneType"),
        ([1], "something other than objects"),
        ({"data": ["t1"]}, "'data' holds something other than objects"),
        ({"total": 0}, "without a list of templates"),
        ({"data": [], "items": []}, "several lists: data, items"),
        ({"a": [{"id": 1}], "b": [{"id": 2}]}, "several lists: a, b"),
    ],
)
def test_template_list_odd_shapes(payload: Any, why: str) -> None:
    raw = json.dumps(payload)
    with pytest.raises(ApiError) as info:
        parse_template_list(payload, raw)
    assert info.value.kind == "bad_shape"
    assert why in str(info.value)
    assert info.value.body == raw


def test_template_title_picks_the_first_name_like_field() -> None:
    assert template_title({"id": "t", "title": "T", "name": "N"}) == "N"
    assert template_title({"id": "t", "displayName": "D"}) == "D"
    assert template_title({"id": "t", "name": 3, "label": "L"}) == "L"
    assert template_title({"id": "t"}) == ""


def test_api_error_str_is_message_and_hint() -> None:
    exc = ApiError("It failed.", kind="server", hint="Try again.")
    assert str(exc) == "It failed. Try again."
    assert str(ApiError("Alone.", kind="http")) == "Alone."
    assert ApiError("x", kind="http").body_excerpt is None


def test_body_excerpt_is_bounded() -> None:
    body = "a" * 5000
    exc = ApiError("x", kind="http", body=body)
    assert exc.body == body
    assert exc.body_excerpt is not None
    assert exc.body_excerpt.startswith("a" * 2000)
    assert exc.body_excerpt.endswith("(3000 more characters)")
    assert excerpt("short") == "short"


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, "auth"), (403, "auth"), (404, "not_found"), (429, "rate_limited"), (500, "server"),
     (503, "server"), (400, "http"), (409, "http"), (302, "http")],
)  # fmt: skip
def test_hint_for_status(status: int, kind: str) -> None:
    assert hint_for_status(status, None)[0] == kind


@given(st.lists(st.sampled_from([*TOPICS, "pass.other", ""]), max_size=4))
def test_validate_topics_accepts_exactly_nonempty_unique_known_lists(topics: list[str]) -> None:
    valid = bool(topics) and set(topics) <= set(TOPICS) and len(set(topics)) == len(topics)
    try:
        assert validate_topics(topics) == topics
        assert valid
    except ApiError:
        assert not valid
