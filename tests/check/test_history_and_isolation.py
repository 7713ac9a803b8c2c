"""Where the check's requests go (the named URL only), how they travel, and what it records."""

from __future__ import annotations

from typing import Any

import pytest
import sample_receivers as samples
from aiohttp import web
from sample_receivers import SECRET

from walletpass_tui.check.judge import Outcome
from walletpass_tui.check.runner import CheckOptions, run_check
from walletpass_tui.webhooks.models import REPLAY
from walletpass_tui.webhooks.store import Store


async def test_proxy_settings_in_the_environment_are_never_used(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    trap = await serve(samples.accepts_everything())
    target = await serve(samples.correct())
    origin = trap.url.removesuffix("/webhooks")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, origin)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    report = await run_check(CheckOptions(target.url, SECRET, ("pass.activated",)))

    assert report.passed
    assert target.hits == len(report.results)
    assert trap.hits == 0


async def test_a_redirect_is_never_followed(serve: Any) -> None:
    trap = await serve(samples.accepts_everything())

    async def redirect(request: web.Request) -> web.StreamResponse:
        await request.read()
        raise web.HTTPTemporaryRedirect(trap.url)

    target = await serve(redirect)
    report = await run_check(CheckOptions(target.url, SECRET, ("pass.activated",)))

    assert trap.hits == 0
    assert {r.answer.status for r in report.results} == {307}
    valid = report.results[0]
    assert valid.outcome is Outcome.FAIL and "Answered 307" in valid.judgement.reason


async def test_the_slow_network_case_sends_the_body_in_pieces(serve: Any) -> None:
    arrivals: dict[str, list[int]] = {}

    async def counting(request: web.Request) -> web.StreamResponse:
        sizes = [len(chunk) async for chunk in request.content.iter_any()]
        arrivals[request.headers["webhook-id"]] = sizes
        return web.Response(status=204 if sizes else 400)

    target = await serve(counting)
    report = await run_check(CheckOptions(target.url, SECRET, ("pass.activated",)))
    slow = next(r for r in report.results if r.case.id == "slow-network")
    normal = report.results[0]

    assert slow.outcome is Outcome.PASS
    assert len(arrivals[slow.case.webhook_id]) > 1  # it came in several reads
    assert sum(arrivals[slow.case.webhook_id]) == len(slow.request.body)
    assert sum(arrivals[normal.case.webhook_id]) == len(normal.request.body)


async def test_each_case_is_recorded_like_a_replay(serve: Any, store: Store) -> None:
    target = await serve(samples.fails_duplicates())
    report = await run_check(CheckOptions(target.url, SECRET, ("pass.activated",)), store=store)

    for result in report.results:
        assert result.attempt_id is not None
        attempt = await store.attempt(result.attempt_id)
        assert attempt is not None
        # Exactly what was sent: the body byte for byte and every header we set.
        assert attempt.body == result.request.body
        for name, value in result.request.headers:
            assert attempt.header(name) == value
        assert attempt.webhook_id == result.case.webhook_id
        assert result.case.title in (attempt.note or "")
        forwards = await store.forwards_for_message(result.case.webhook_id)
        mine = [f for f in forwards if f.attempt_id == attempt.id]
        assert len(mine) == 1
        row = mine[0]
        assert (row.kind, row.mode, row.target) == (REPLAY, "check", target.url)
        assert row.status == result.answer.status
        assert row.note and row.note.startswith(f"check {result.outcome.value}")

    # The retry is a second attempt of the first message; its 500 and answer body are kept.
    duplicate = next(r for r in report.results if r.case.id == "duplicate")
    attempts = await store.message_attempts(duplicate.case.webhook_id)
    assert [a.attempt_no for a in attempts] == [1, 2]
    answers = await store.forwards_for_message(duplicate.case.webhook_id)
    assert [f.status for f in answers] == [204, 500]
    assert b"UNIQUE constraint failed" in answers[1].response_body
    # Our own verifier's word on each request is kept too: the forged ones are rejected.
    forged = next(r for r in report.results if r.case.id == "wrong-secret")
    stored = await store.attempt(forged.attempt_id or 0)
    assert stored is not None and stored.verdict == "rejected"
