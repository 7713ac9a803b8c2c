"""The header's totals: read from the history once, then counted from what arrives, each delivery
once whichever side of the read it came, the check's requests never; a read that fails holds
nothing back."""

from __future__ import annotations

from dataclasses import replace

from ui_helpers import attempt

from walletpass_tui.ui.view.totals import Totals
from walletpass_tui.webhooks.models import Stats
from walletpass_tui.webhooks.store.activity import Activity, BucketCount


def history(verified: int, rejected: int, redelivered: int, last_id: int) -> Activity:
    rows = [
        BucketCount(0, "pass.activated", False, verified, rejected, redelivered),
        BucketCount(0, "pass.activated", True, 7, 1, 0),  # the check's: never counted
    ]
    return Activity(rows, [], last_attempt_id=last_id, last_forward_id=0)


def test_what_arrives_while_the_history_is_read_is_counted_once() -> None:
    totals = Totals()
    assert totals.add([replace(attempt(1), id=1)]) is False and totals.stats is None
    totals.reading()
    seen = replace(attempt(2), id=10)  # committed before the read: the read counts it
    later = replace(attempt(3, verdict="rejected"), id=11)
    check = replace(attempt(4, note="check pass: valid → 200"), id=12)
    totals.add([seen, later, check])
    assert totals.load(history(9, 1, 2, last_id=10)) == Stats(11, 9, 2, 2)
    redelivery = replace(attempt(5, webhook_id="msg_000002"), id=13, attempt_no=2)
    assert totals.add([redelivery, replace(check, id=14)]) is True
    assert totals.stats == Stats(12, 10, 2, 3)


def test_a_read_given_up_holds_nothing_back() -> None:
    totals = Totals()
    totals.reading()
    totals.add([replace(attempt(1), id=1)] * 1_000)
    totals.gave_up()
    assert totals.add([replace(attempt(2), id=2)]) is False  # nothing read yet: still counting
    totals.reading()
    assert totals.load(history(3, 0, 0, last_id=2)) == Stats(3, 3, 0, 0)


def test_a_delivery_the_read_saw_and_told_after_it_is_counted_once() -> None:
    """After a prune the history is read again; a delivery stored just before that read and told
    to the dashboard just after it was counted twice."""
    totals = Totals()
    totals.reading()
    assert totals.load(history(4, 0, 0, last_id=20)) == Stats(4, 4, 0, 0)
    told_late = replace(attempt(1), id=20)
    assert totals.add([told_late]) is False
    assert totals.add([told_late, replace(attempt(2), id=21)]) is True
    assert totals.stats == Stats(5, 5, 0, 0)
