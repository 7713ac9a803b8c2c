"""Traffic of the last hour, minute by minute: deliveries by topic, rejections, redeliveries, and
forwards to your app with its answer times.

Filled from the history by the one activity query (``store/activity.py``, which ``events stats``
and the header's totals run too, so the numbers agree), after the first frame; then deliveries
are counted from what arrives (the batches the app already gets from ``LiveRows``) into the
minute they were received in. Attempts that arrive while the history is read are held and counted
after it, those the query already saw left out (by id), so nothing is counted twice. Requests
"Check my app" sent are not deliveries and are not counted.

A forward counts in the minute its delivery was received in, with its latest try's answer: when
your app answers (or a try fails) the minutes from that forward's on are read again from the
history (``load_forwards``), so a retried forward is never counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from walletpass_tui.webhooks.models import VERIFIED, Attempt, is_check_note
from walletpass_tui.webhooks.store.activity import MINUTE_MS, Activity

WINDOW = 60  # minutes kept and charted
NO_TOPIC = "(no topic)"


@dataclass
class Minute:
    """What happened in one minute."""

    deliveries: int = 0
    rejected: int = 0
    redelivered: int = 0
    topics: dict[str, int] = field(default_factory=dict)
    forwards: int = 0  # forwards to your app queued (their deliveries received this minute)
    answered: int = 0  # ... whose latest try got an answer
    forward_ms: float = 0.0  # their answer times, summed
    forward_max_ms: float = 0.0
    forward_failed: int = 0  # tried, and the latest try got no 2xx (or no answer)

    @property
    def forward_mean_ms(self) -> float | None:
        return self.forward_ms / self.answered if self.answered else None


class Traffic:
    """The last hour, per minute; ``version`` changes with every count (charts redraw on it)."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock  # epoch milliseconds now
        self.minutes: dict[int, Minute] = {}
        self.version = 0
        self.loaded = False  # the history was read
        self._held: list[Attempt] = []  # arrived before the history was read
        self._seen = 0  # the newest attempt id the read counted: told again later, not counted

    def reset(self) -> None:
        """Forget every count: the history is read again (``LiveRows`` dropped some)."""
        self.minutes.clear()
        self.loaded = False
        self._held.clear()
        self._seen = 0
        self.version += 1

    # -- counting ------------------------------------------------------------------------------

    def _minute(self, minute: int) -> Minute | None:
        """The minute's counts, None when it is outside the window."""
        now = self.clock() // MINUTE_MS
        if not now - WINDOW < minute <= now:
            return None
        found = self.minutes.get(minute)
        if found is None:
            found = self.minutes[minute] = Minute()
            if len(self.minutes) > WINDOW + 1:
                for old in [m for m in self.minutes if m <= now - WINDOW]:
                    del self.minutes[old]
        return found

    def add_attempts(self, attempts: Iterable[Attempt]) -> None:
        """Attempts just stored (``LiveRows``' batch)."""
        if not self.loaded:
            self._held.extend(attempts)
            return
        self._count(a for a in attempts if a.id > self._seen)

    def _count(self, attempts: Iterable[Attempt]) -> None:
        counted = False
        for a in attempts:
            if a.note is not None and is_check_note(a.note):
                continue
            minute = self._minute(a.received_at_ms // MINUTE_MS)
            if minute is None:
                continue
            minute.deliveries += 1
            if a.verdict != VERIFIED:
                minute.rejected += 1
            if a.attempt_no > 1:
                minute.redelivered += 1
            topic = a.topic or NO_TOPIC
            minute.topics[topic] = minute.topics.get(topic, 0) + 1
            counted = True
        if counted:
            self.version += 1

    def load(self, history: Activity) -> None:
        """The activity query's answer by minute; then what arrived meanwhile and it did not see."""
        for row in history.deliveries():
            minute = self._minute(row.bucket)
            if minute is None:
                continue
            minute.deliveries += row.attempts
            minute.rejected += row.rejected
            minute.redelivered += row.redelivered
            topic = row.topic or NO_TOPIC
            minute.topics[topic] = minute.topics.get(topic, 0) + row.attempts
        self._set_forwards(history, None)
        self.loaded = True
        self._seen = history.last_attempt_id
        held, self._held = self._held, []
        self._count(a for a in held if a.id > self._seen)
        self.version += 1

    def load_forwards(self, history: Activity, from_minute: int) -> None:
        """The forwards of every minute from ``from_minute`` on, read again (the activity query
        without attempts): they replace what was counted there."""
        if self.loaded:
            self._set_forwards(history, from_minute)
            self.version += 1

    def _set_forwards(self, history: Activity, from_minute: int | None) -> None:
        if from_minute is not None:
            for m, counts in self.minutes.items():
                if m >= from_minute:
                    counts.forwards = counts.answered = counts.forward_failed = 0
                    counts.forward_ms = counts.forward_max_ms = 0.0
        for row in history.forwards:
            if from_minute is not None and row.bucket < from_minute:
                continue
            minute = self._minute(row.bucket)
            if minute is None:
                continue
            minute.forwards = row.forwards
            minute.answered = row.answered
            minute.forward_ms = row.total_ms
            minute.forward_max_ms = row.max_ms
            minute.forward_failed = row.failed

    # -- reading -------------------------------------------------------------------------------

    def since_ms(self) -> int:
        """Where the window starts: the history is read from here on."""
        return (self.clock() // MINUTE_MS - WINDOW + 1) * MINUTE_MS

    def minute(self) -> int:
        """The current minute (epoch milliseconds // MINUTE_MS)."""
        return self.clock() // MINUTE_MS

    def window(self) -> list[tuple[int, Minute]]:
        """The last ``WINDOW`` minutes, oldest first, the current one last (empty ones too)."""
        now = self.clock() // MINUTE_MS
        empty = Minute()
        return [(m, self.minutes.get(m, empty)) for m in range(now - WINDOW + 1, now + 1)]

    def series(self, value: Callable[[Minute], float | None]) -> list[float | None]:
        """``value`` of each minute of the window, oldest first."""
        return [value(minute) for _m, minute in self.window()]

    def topics(self) -> list[tuple[str, int]]:
        """Each topic seen in the window with its deliveries, the busiest first."""
        totals: dict[str, int] = {}
        for _m, minute in self.window():
            for topic, count in minute.topics.items():
                totals[topic] = totals.get(topic, 0) + count
        return sorted(totals.items(), key=lambda item: (-item[1], item[0]))

    def last_minute(self) -> int:
        """Deliveries in the last whole minute (the one before the current)."""
        now = self.clock() // MINUTE_MS
        found = self.minutes.get(now - 1)
        return found.deliveries if found is not None else 0
