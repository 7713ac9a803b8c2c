"""``listen``'s line for each attempt: its time of day reads as ``format_ms`` writes it, for any
sequence of times (the second's part is formatted once per second and reused)."""

from __future__ import annotations

import factories
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.cli.attempt_lines import attempt_line
from walletpass_tui.text import format_ms
from walletpass_tui.webhooks.models import Attempt

NOW = 1_795_000_000_000
times = st.integers(min_value=0, max_value=4_102_444_800_000)  # 1970 to 2100
near = st.integers(min_value=NOW - 3000, max_value=NOW + 3000)  # the same few seconds


def attempt(ms: int, webhook_id: str = "msg_1") -> Attempt:
    return factories.attempt(webhook_id, at=ms, topic="pass.activated", attempt_no=1)


@given(st.lists(times | near, min_size=1, max_size=20))
def test_each_line_starts_with_its_own_time_of_day(stamps: list[int]) -> None:
    for ms in stamps:
        line = attempt_line(attempt(ms))
        assert line.startswith(format_ms(ms, time_only=True) + "  ")


def test_a_line_shows_the_delivery_escaped() -> None:
    line = attempt_line(attempt(NOW, "msg_\x1b[2Jx"))
    assert "\x1b" not in line and "msg_\\x1b[2Jx" in line
    assert "  pass.activated" in line and line.endswith("  #1  verified  200")  # said once


def test_a_rejection_says_why_and_a_verified_note_stays() -> None:
    rejected = factories.attempt(
        "msg_2", at=NOW, verdict="rejected", reason="bad_signature", status=401
    )
    assert attempt_line(rejected).endswith("  REJECTED  401  bad_signature")
    noted = factories.attempt("msg_3", at=NOW, note="check pass: valid delivery")
    assert attempt_line(noted).endswith("  verified  200  [check pass: valid delivery]")
