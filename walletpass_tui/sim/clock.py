"""Service time for the simulator: real time scaled by a factor, or a virtual clock for tests.

The delivery engine measures everything in *service seconds* (the time the real service would take)
and asks its clock for three things:

* ``sleep(s)``: wait ``s`` service seconds (a retry wait);
* ``real_timeout(s)``: how many real seconds to allow for an answer the service allows ``s`` for;
* ``exchange_seconds(real)``: how many service seconds an HTTP exchange that took ``real`` seconds
  counts for on the delivery's timeline;

plus ``wall()`` for the ``webhook-timestamp`` header and ``hold()`` so a virtual clock knows when every
delivery flow is asleep and time may jump.

:class:`ScaledClock` multiplies waits by ``time_scale`` (0.001 turns 5 minutes into 0.3 s); the HTTP
exchange itself runs at real speed, so it counts its real duration. :class:`FakeClock` never sleeps
for real: time moves only in ``sleep``, to the earliest wake-up, once every held flow is asleep, so a
test can assert offsets to the second.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from datetime import UTC, datetime, timedelta
from typing import Protocol

MIN_REAL_TIMEOUT_S = 1.0
# A virtual clock's real deadline for an answer: the service's own 15 s, so a receiver slowed by a
# busy machine is not taken for one that does not answer (a test of "no answer" sets it lower).
FAKE_REAL_TIMEOUT_S = 15.0


class Hold(Protocol):
    def release(self) -> None: ...


class Clock(Protocol):
    time_scale: float

    def wall(self) -> datetime:
        """Now, as an aware UTC datetime (used for ``webhook-timestamp``)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of service time."""
        ...

    def real_timeout(self, seconds: float) -> float:
        """Real seconds to allow for an answer the service waits ``seconds`` for."""
        ...

    def exchange_seconds(self, real_seconds: float) -> float:
        """Service seconds an HTTP exchange that took ``real_seconds`` counts for."""
        ...

    def hold(self) -> Hold:
        """Mark a delivery flow as running until ``release()``; only a virtual clock cares."""
        ...


def check_time_scale(time_scale: float) -> float:
    value = float(time_scale)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"The time scale must be a number above 0, got {time_scale!r}.")
    return value


class _NoHold:
    def release(self) -> None:
        pass


class ScaledClock:
    """Real time, with every wait and answer deadline multiplied by ``time_scale``.

    Answer deadlines never drop below ``min_timeout_s`` real seconds (1 s), so a receiver on a busy
    machine still gets a fair chance at very small scales.
    """

    def __init__(self, time_scale: float = 1.0, *, min_timeout_s: float = MIN_REAL_TIMEOUT_S):
        self.time_scale = check_time_scale(time_scale)
        self.min_timeout_s = min_timeout_s

    def __repr__(self) -> str:
        return f"ScaledClock(time_scale={self.time_scale:g})"

    def wall(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) * self.time_scale)

    def real_timeout(self, seconds: float) -> float:
        return max(self.min_timeout_s, seconds * self.time_scale)

    def exchange_seconds(self, real_seconds: float) -> float:
        return max(0.0, real_seconds)

    def hold(self) -> Hold:
        return _NoHold()


class _FakeHold:
    def __init__(self, clock: FakeClock) -> None:
        self._clock: FakeClock | None = clock

    def release(self) -> None:
        clock, self._clock = self._clock, None
        if clock is not None:
            clock._holds -= 1
            clock._schedule_check()


class FakeClock:
    """Virtual service time for exact tests: ``now()`` is in service seconds since the start.

    With ``auto_advance`` (the default) time jumps to the earliest pending wake-up as soon as every
    held flow (see :meth:`hold`) is asleep; with it off, a test moves time with :meth:`advance`.
    HTTP exchanges take no service time. ``sleeps`` records every requested wait, in order.
    ``timeout_s`` is the real deadline for an answer. ``wall()`` is ``start`` plus virtual time, so
    ``webhook-timestamp`` headers move with it (and a real receiver's tolerance will reject retries
    hours "later"). ``time_scale`` is 0: nothing really waits.
    """

    time_scale = 0.0

    def __init__(
        self,
        start: datetime | None = None,
        *,
        auto_advance: bool = True,
        timeout_s: float = FAKE_REAL_TIMEOUT_S,
    ) -> None:
        if start is not None and start.tzinfo is None:
            raise ValueError("FakeClock needs an aware start time")
        self.start = (start or datetime.now(UTC)).astimezone(UTC)
        self.auto_advance = auto_advance
        self.timeout_s = timeout_s
        self.sleeps: list[float] = []
        self._now = 0.0
        self._holds = 0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._check_scheduled = False

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now:g}, sleeping={len(self._sleepers)})"

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        return self.start + timedelta(seconds=self._now)

    def pending(self) -> list[float]:
        """Service times at which sleepers will wake, earliest first."""
        return sorted(deadline for deadline, _, fut in self._sleepers if not fut.done())

    async def sleep(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.sleeps.append(seconds)
        if seconds == 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self._now + seconds, next(self._seq), fut)
        heapq.heappush(self._sleepers, entry)
        self._schedule_check()
        try:
            await fut
        finally:
            if not fut.done() or fut.cancelled():
                # Cancelled while asleep: forget the wake-up.
                self._sleepers = [e for e in self._sleepers if e[2] is not fut]
                heapq.heapify(self._sleepers)
                self._schedule_check()

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking every sleeper due by then, in order."""
        target = self._now + max(0.0, seconds)
        while self._sleepers and self._sleepers[0][0] <= target:
            self._wake_next()
            await asyncio.sleep(0)
        self._now = max(self._now, target)

    def real_timeout(self, seconds: float) -> float:
        return self.timeout_s

    def exchange_seconds(self, real_seconds: float) -> float:
        return 0.0

    def hold(self) -> Hold:
        self._holds += 1
        return _FakeHold(self)

    # -- auto advance -----------------------------------------------------------------------------

    def _schedule_check(self) -> None:
        if not self.auto_advance or self._check_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: nothing to wake
            return
        self._check_scheduled = True
        loop.call_soon(self._check)

    def _check(self) -> None:
        self._check_scheduled = False
        self._drop_done()
        if self._sleepers and self._holds <= len(self._sleepers):
            self._wake_next()

    def _drop_done(self) -> None:
        if any(fut.done() for _, _, fut in self._sleepers):
            self._sleepers = [e for e in self._sleepers if not e[2].done()]
            heapq.heapify(self._sleepers)

    def _wake_next(self) -> None:
        """Jump to the earliest wake-up and wake everyone due then."""
        self._drop_done()
        if not self._sleepers:
            return
        deadline = self._sleepers[0][0]
        self._now = max(self._now, deadline)
        while self._sleepers and self._sleepers[0][0] <= deadline:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)
