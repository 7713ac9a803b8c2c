"""When the relay says it received each delivery, checked before it is believed.

A relayed delivery's signature timestamp is checked against the time the relay says it received
it (so deliveries caught up after hours of sleep still verify). That time comes from the relay,
so it must be credible, or a relay could present a day-old genuine delivery as received a day
ago and have it verified again. A received time is refused when it

* lies ahead of this machine's clock by more than the receiver's tolerance (``--tolerance``);
* precedes the channel's creation (as the relay answers ``GET /channels/{slug}``) by more than
  ``RECEIVED_SLACK_MS``;
* goes back along the cursor by more than ``RECEIVED_SLACK_MS``: behind the newest received
  time accepted so far (in this run, or stored from this relay before it).

The relay numbers deliveries in the order it commits them, a moment after it received them, so
an honest relay's times go back along the cursor by well under a second; the slack also covers
its clock being stepped back a little.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

RECEIVED_SLACK_MS = 5 * 60 * 1000


def _now_ms() -> float:
    return time.time() * 1000


class ReceivedTimes:
    def __init__(
        self,
        *,
        tolerance_ms: int,
        newest_ms: int | None = None,
        created_ms: int | None = None,
        clock: Callable[[], float] = _now_ms,
    ) -> None:
        self.tolerance_ms = tolerance_ms
        self.newest_ms = newest_ms  # the newest received time accepted along the cursor
        self.created_ms = created_ms  # the channel's creation, when the relay said
        self._clock = clock

    def problem(self, received_ms: int) -> str | None:
        """Why ``received_ms`` is not credible (one sentence), or None."""
        said = f"the relay says it received it at {_when(received_ms)}"
        ahead = received_ms - self._clock()
        if ahead > self.tolerance_ms:
            return (
                f"{said}, {_duration(ahead)} ahead of this machine's clock (the tolerance is "
                f"{_duration(self.tolerance_ms)})"
            )
        if self.created_ms is not None and received_ms < self.created_ms - RECEIVED_SLACK_MS:
            return (
                f"{said}, {_duration(self.created_ms - received_ms)} before the channel was "
                f"created ({_when(self.created_ms)})"
            )
        if self.newest_ms is not None and received_ms < self.newest_ms - RECEIVED_SLACK_MS:
            return (
                f"{said}, {_duration(self.newest_ms - received_ms)} before a delivery it sent "
                f"earlier ({_when(self.newest_ms)}); received times may go back at most "
                f"{_duration(RECEIVED_SLACK_MS)} along the cursor"
            )
        return None

    def accepted(self, received_ms: int) -> None:
        if self.newest_ms is None or received_ms > self.newest_ms:
            self.newest_ms = received_ms


def _when(ms: float) -> str:
    try:
        moment = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, ValueError, OSError):  # a time out of range: shown as its number
        return f"{int(ms)} ms"
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _duration(ms: float) -> str:
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"
