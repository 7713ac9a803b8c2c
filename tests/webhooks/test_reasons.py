"""Rejection reasons: one enum carries the stored words, the answered status and the short label."""

from __future__ import annotations

from walletpass_tui.webhooks.reasons import SHORT_REASONS, Reason, Rejected


def test_every_rejection_has_a_4xx_status_a_phrase_and_a_short_label() -> None:
    for reason in Reason:
        if reason is Reason.OK:
            assert reason.status == 200
            continue
        assert 400 <= reason.status < 500, reason
        assert reason.phrase != "Refused", reason  # every status has its own phrase
        assert 0 < len(reason.label) <= 16, reason
        assert SHORT_REASONS[reason.value] == reason.label


def test_stored_words_read_back_as_the_same_reason() -> None:
    for reason in Reason:
        assert Reason(str(reason)) is reason
    assert set(SHORT_REASONS) == {r.value for r in Reason} - {"verified"}


def test_a_rejection_answers_with_its_status_phrase_and_reason() -> None:
    plain = Rejected(Reason.NO_MATCH, "tried 2 secrets")
    assert (plain.status, plain.answer_text()) == (
        401,
        "Unauthorized: no signature matches: tried 2 secrets\n",
    )
    worded = Rejected(Reason.BODY_TOO_LARGE, "more than 10 bytes", answer="the limit is 10 bytes")
    assert worded.answer_text() == "Payload too large: the limit is 10 bytes\n"
    assert worded.detail == "more than 10 bytes"  # what the history keeps
