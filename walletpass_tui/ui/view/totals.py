"""The header's counts of every delivery stored: read from the history by the one activity query
(one bucket over all time, ``store/activity.py``), then counted from what arrives.

Batches that arrive while the history is read are held and counted after it, those the query
already saw left out (by id), so nothing is counted twice and nothing is lost. A batch told after
the read that the read already saw (a delivery stored just before the history was read again,
after a prune, and told to the dashboard just after) is left out the same way. Requests "Check my
app" sent are stored in the history but are not deliveries: never counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from walletpass_tui.webhooks.models import VERIFIED, Attempt, Stats, is_check_note

if TYPE_CHECKING:
    from walletpass_tui.webhooks.store.activity import Activity


def counted(stats: Stats, attempts: Iterable[Attempt]) -> Stats:
    """``stats`` with the deliveries among ``attempts`` added."""
    received, verified, redelivered = stats.received, stats.verified, stats.redeliveries
    for a in attempts:
        if a.note is not None and is_check_note(a.note):
            continue
        received += 1
        verified += a.verdict == VERIFIED
        redelivered += a.attempt_no > 1
    return Stats(received, verified, received - verified, redelivered)


class Totals:
    """``stats`` is None until the history was read (the header says "counting")."""

    def __init__(self) -> None:
        self.stats: Stats | None = None
        self._held: list[Attempt] | None = None  # arriving while the history is read
        self._seen = 0  # the newest attempt id the last read counted

    def reading(self) -> None:
        """A read of the history starts: hold what arrives until it is in."""
        self._held = []

    def gave_up(self) -> None:
        """The read failed or was given up: stop holding (``stats`` stays what it was)."""
        self._held = None

    def add(self, attempts: Iterable[Attempt]) -> bool:
        """Attempts just stored; whether ``stats`` changed."""
        if self._held is not None:
            self._held.extend(attempts)
            return False
        if self.stats is None:
            return False
        before = self.stats
        self.stats = counted(before, (a for a in attempts if a.id > self._seen))
        return self.stats != before

    def load(self, history: Activity) -> Stats:
        """The activity query's one bucket, then what arrived meanwhile and it did not see."""
        rows = history.deliveries()
        verified = sum(row.verified for row in rows)
        rejected = sum(row.rejected for row in rows)
        stats = Stats(verified + rejected, verified, rejected, sum(row.redelivered for row in rows))
        held, self._held = self._held or [], None
        self._seen = history.last_attempt_id
        self.stats = counted(stats, (a for a in held if a.id > self._seen))
        return self.stats
