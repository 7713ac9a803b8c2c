"""The check judges the receivers people write exactly as the issue describes, by their answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sample_receivers as samples
from sample_receivers import SECRET

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.check.judge import Outcome
from walletpass_tui.check.runner import CheckOptions, run_check

WARN, FAIL = Outcome.WARN, Outcome.FAIL
FORGED = ("wrong-secret", "changed-byte", "missing-header", "empty-signature")
TIMESTAMPS = ("old-timestamp", "future-timestamp")
ACCEPTED = (
    "valid-pass.activated",
    "valid-pass.deactivated",
    "duplicate",
    "other-version-first",
    "rotated-secret",
    "non-ascii",
    "unusual-json",
    "large-body",
    "slow-network",
)

# receiver -> (every case that does not pass, with its verdict; whether the check passes overall)
JUDGED: dict[str, tuple[Callable[..., Any], dict[str, Outcome], bool]] = {
    "correct": (samples.correct, {}, True),
    "accepts everything": (
        samples.accepts_everything,
        {**dict.fromkeys(FORGED, FAIL), **dict.fromkeys(TIMESTAMPS, WARN)},
        False,
    ),
    "verifies re-serialized JSON": (
        samples.reserializes,
        {"non-ascii": FAIL, "unusual-json": FAIL},
        False,
    ),
    "checks only the first signature entry": (
        samples.first_entry_only,
        {"other-version-first": FAIL, "rotated-secret": FAIL},
        False,
    ),
    "ignores the timestamp": (samples.ignores_timestamp, dict.fromkeys(TIMESTAMPS, WARN), True),
    "500 on a duplicate": (samples.fails_duplicates, {"duplicate": FAIL}, False),
}


@pytest.mark.parametrize("name", list(JUDGED))
async def test_each_sample_receiver_is_judged_as_the_issue_says(serve: Any, name: str) -> None:
    make, not_passing, passes = JUDGED[name]
    served = await serve(make(SECRET))
    report = await run_check(CheckOptions(served.url, SECRET, TOPICS))

    verdicts = {r.case.id: r.outcome for r in report.results}
    assert set(verdicts) == {*FORGED, *TIMESTAMPS, *ACCEPTED}
    assert {k: v for k, v in verdicts.items() if v is not Outcome.PASS} == not_passing
    assert report.passed is passes
    assert report.exit_code == (0 if passes else 1)
    # One request per case, one at a time, to the path named and nowhere else.
    assert served.hits == len(report.results)


async def test_a_receiver_that_sleeps_past_the_deadline_fails_every_case(serve: Any) -> None:
    served = await serve(samples.sleeps(SECRET))
    # The service's 15 s scaled down; the receiver still sleeps its 16 s.
    options = CheckOptions(served.url, SECRET, TOPICS, timeout_s=0.3, warn_after_s=0.1)
    report = await run_check(options)

    verdicts = {r.case.id: r.outcome for r in report.results}
    assert all(verdicts[c] is FAIL for c in (*ACCEPTED, *FORGED))
    assert all(verdicts[c] is WARN for c in TIMESTAMPS)  # not proven refused: only a warning
    assert all(r.answer.status is None for r in report.results)
    assert all("no answer within 0.3 s" in r.judgement.reason for r in report.results)
    assert report.exit_code == 1


async def test_an_answer_past_the_warning_threshold_is_a_warning(serve: Any) -> None:
    served = await serve(samples.slow_but_in_time(0.2)(SECRET))
    options = CheckOptions(served.url, SECRET, ("pass.activated",), timeout_s=15, warn_after_s=0.05)
    report = await run_check(options)

    verdicts = {r.case.id: r.outcome for r in report.results}
    accepted = [c for c in verdicts if c not in (*FORGED, *TIMESTAMPS)]
    assert all(verdicts[c] is WARN for c in accepted)
    assert all(verdicts[c] is Outcome.PASS for c in (*FORGED, *TIMESTAMPS))
    assert report.passed  # slow is a warning, not a failure
    assert "service gives up at 15 s" in report.results[0].judgement.reason
