"""The one URL rule and the one topic rule: what each accepts, what each refuses, and that nothing
but their own error ever escapes, whatever the text."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.api.topics import TOPICS, TopicError, parse_topic, topic_label
from walletpass_tui.api.urls import (
    ENDPOINT_SCHEMES,
    UrlError,
    check_url,
    is_local_address,
    url_problem,
)

URLISH = st.one_of(
    st.text(),
    st.builds(
        lambda scheme, rest: f"{scheme}://{rest}",
        st.sampled_from(["http", "https", "ftp", "HTTP", ""]),
        st.lists(st.sampled_from([*"[]:@#/?%.-_aZ09 \x00é", "::1", "%zz", "xn--", "99999"])).map(
            "".join
        ),
    ),
)


@given(URLISH, st.booleans())
def test_the_validator_raises_only_its_own_error(url: str, allow_http: bool) -> None:
    for schemes in (ENDPOINT_SCHEMES, ("http", "https")):
        try:
            checked = check_url(url, schemes=schemes, allow_http=allow_http)
        except UrlError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert checked == url.strip() and checked.isprintable()


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://[::1", "not a valid URL"),
        ("http://127.0.0.1:99999", "port that is not a number from 1 to 65535"),
        ("http://host:1:5", "port that is not a number from 1 to 65535"),
        ("https://h.example:0/x", "port"),
        ("https://user:pw@h.example/x", "user name or password"),
        ("https://h.example/x#top", "#fragment"),
        ("ftp://h.example/x", "must start with http:// or https://"),
        ("https://h ost/x", "spaces or control characters"),
        ("https://a..b/x", "not a DNS name"),
        ("https:///x", "must name a host"),
        ("", "empty"),
    ],
)
def test_malformed_urls_get_one_sentence(url: str, fragment: str) -> None:
    with pytest.raises(UrlError) as info:
        check_url(url)
    assert fragment in str(info.value)


def test_a_password_in_a_url_is_never_echoed() -> None:
    with pytest.raises(UrlError) as info:
        check_url("https://me:hunter2@h.example/x")
    assert "hunter2" not in str(info.value)


def test_good_urls_pass() -> None:
    for url in (
        "https://h.example/wh",
        "http://[::1]:8080/x",
        "https://münchen.example/",
        "http://localhost:3000",
    ):
        assert check_url(url) == url


def test_endpoint_urls_need_https_unless_http_is_allowed() -> None:
    assert url_problem("http://h.example/x") is not None
    assert "https://" in (url_problem("http://h.example/x") or "")
    assert url_problem("http://h.example/x", allow_http=True) is None


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("https://localhost/x", True),
        ("https://127.0.0.1/x", True),
        ("https://192.168.1.5/x", True),
        ("https://10.0.0.1/x", True),
        ("https://[::1]/x", True),
        ("https://printer.local/x", True),
        ("https://ab12.ngrok.app/x", False),
        ("https://8.8.8.8/x", False),
    ],
)
def test_local_addresses_are_recognised(url: str, local: bool) -> None:
    assert is_local_address(url) is local


def test_short_and_full_topic_names_are_the_same() -> None:
    assert parse_topic("activated") == parse_topic("pass.activated") == "pass.activated"
    assert parse_topic("deactivated") == "pass.deactivated"
    with pytest.raises(TopicError, match=r"pass\.activated and pass\.deactivated"):
        parse_topic("pass.bogus")


@given(st.text())
def test_topics_raise_only_their_own_error(text: str) -> None:
    with contextlib.suppress(TopicError):
        assert parse_topic(text) in TOPICS


def test_a_delivery_without_a_topic_is_shown_as_such() -> None:
    assert topic_label(None) == "topic unknown"
    assert topic_label("pass.activated") == "pass.activated"
    assert topic_label("\x1b[2Jodd") == "\\x1b[2Jodd (unknown)"
