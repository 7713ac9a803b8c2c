"""The battery itself: each case is what it claims to be, for any secret, checked by an independent
verifier (the standardwebhooks package) and by our own."""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.check.bodies import LARGE_BODY_BYTES, NON_ASCII_NAME
from walletpass_tui.check.cases import Expect, build_cases
from walletpass_tui.check.runner import target_problem
from walletpass_tui.webhooks.verify import SigningKey, verify

NOW = datetime(2026, 11, 23, 18, 0, tzinfo=UTC)


secrets_ = st.binary(min_size=1, max_size=64).map(
    lambda key: "whsec_" + base64.b64encode(key).decode()
)
topic_lists = st.lists(st.sampled_from(TOPICS), min_size=1, max_size=2, unique=True)


@settings(max_examples=25, deadline=None)
@given(secret=secrets_, topics=topic_lists, seed=st.integers(0, 2**32))
def test_every_case_is_signed_as_it_claims_for_any_secret(
    secret: str, topics: list[str], seed: int
) -> None:
    cases = build_cases(secret, topics, rng=random.Random(seed))
    now = datetime.now(UTC)
    hook = Webhook(secret)
    for case in cases:
        request = case.make(now)
        headers = {k.lower(): v for k, v in request.headers}
        ours = verify(headers, request.body, [SigningKey.from_secret(secret)], now=now)
        try:
            hook.verify(request.body, headers)
            reference = True
        except (WebhookVerificationError, ValueError):
            reference = False
        # A correct receiver (ours, and the reference package) accepts exactly the ACCEPT cases.
        assert ours.ok is (case.expect is Expect.ACCEPT), (case.id, ours)
        assert reference is (case.expect is Expect.ACCEPT), case.id


def test_the_cases_cover_the_issue_in_order() -> None:
    cases = build_cases("whsec_" + base64.b64encode(b"k" * 24).decode(), list(TOPICS))
    assert [c.id for c in cases] == [
        "valid-pass.activated",
        "valid-pass.deactivated",
        "duplicate",
        "wrong-secret",
        "changed-byte",
        "missing-header",
        "empty-signature",
        "old-timestamp",
        "future-timestamp",
        "other-version-first",
        "rotated-secret",
        "non-ascii",
        "unusual-json",
        "large-body",
        "slow-network",
    ]
    by_id = {c.id: c for c in cases}
    # Only the timestamp cases are warnings.
    assert [c.id for c in cases if not c.must_pass] == ["old-timestamp", "future-timestamp"]
    # Each topic's valid delivery carries a body of that topic; the duplicate repeats the first.
    for topic in TOPICS:
        body = by_id[f"valid-{topic}"].make(NOW).body
        assert json.loads(body)["type"] == topic
    first, again = by_id["valid-pass.activated"], by_id["duplicate"]
    assert again.webhook_id == first.webhook_id
    assert again.make(NOW).body == first.make(NOW).body
    # Every other case is a message of its own.
    others = [c.webhook_id for c in cases if c.id != "duplicate"]
    assert len(set(others)) == len(others)


def test_the_bodies_are_what_their_case_says() -> None:
    cases = {c.id: c for c in build_cases("whsec_" + base64.b64encode(b"k" * 24).decode(), TOPICS)}

    valid = cases["changed-byte"].make(NOW)
    signed_for = [v for k, v in valid.headers if k == "webhook-signature"]
    assert signed_for and json.loads(valid.body)  # still JSON after the change

    non_ascii = cases["non-ascii"].make(NOW).body
    assert NON_ASCII_NAME.encode("utf-8") in non_ascii  # raw UTF-8, no \\u escapes
    assert not non_ascii.isascii()

    unusual = cases["unusual-json"].make(NOW).body
    doc = json.loads(unusual)
    assert unusual != json.dumps(doc).encode() and b"\t" in unusual and b"\r\n" in unusual
    assert next(iter(doc)) == "data"  # keys in reverse order

    assert len(cases["large-body"].make(NOW).body) == LARGE_BODY_BYTES
    slow = cases["slow-network"].make(NOW)
    assert slow.pieces > 1 and slow.spread_s >= 1.0


def test_changed_byte_differs_from_the_signed_body_by_exactly_one_byte() -> None:
    from walletpass_tui.check import bodies

    doc = bodies.event_document("pass.activated", random.Random(1))
    body = bodies.compact(doc)
    changed = bodies.change_one_byte(body, doc["data"]["passId"])
    assert len(changed) == len(body)
    assert sum(a != b for a, b in zip(body, changed, strict=True)) == 1
    assert json.loads(changed)["data"]["passId"] != doc["data"]["passId"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_a_target_url_is_judged_without_ever_raising(url: str) -> None:
    problem = target_problem(url)
    assert problem is None or (isinstance(problem, str) and problem)
    if problem is None:
        assert url.strip().startswith(("http://", "https://"))


def test_malformed_target_urls_are_refused() -> None:
    for bad in (
        "",
        "localhost:3000",
        "ftp://example.com/x",
        "http://",
        "http://a b/",
        "http://h:99999/",
        "http://user:pw@example.com/",
        "http://example.com/#frag",
    ):
        assert target_problem(bad), bad
    for good in ("http://127.0.0.1:3000/webhooks", "https://app.example.com/hooks?token=1"):
        assert target_problem(good) is None, good


def test_the_wrong_secret_is_never_the_right_one_even_when_drawn_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A one-byte key drawn at random equals the user's one time in 256: the "wrong secret"
    case would then be a valid delivery, and a correct receiver would fail the check. The draw
    is made to repeat the user's key first, as chance sometimes does."""
    import walletpass_tui.check.cases as cases_module

    secret = "whsec_" + base64.b64encode(b"\x9e").decode()
    draws = iter([secret, secret, "whsec_" + base64.b64encode(b"\x01").decode()])
    monkeypatch.setattr(cases_module, "new_secret", lambda nbytes: next(draws))
    case = next(c for c in build_cases(secret, ["pass.activated"]) if c.id == "wrong-secret")
    now = datetime.now(UTC)
    request = case.make(now)
    headers = {k.lower(): v for k, v in request.headers}
    assert not verify(headers, request.body, [SigningKey.from_secret(secret)], now=now).ok
