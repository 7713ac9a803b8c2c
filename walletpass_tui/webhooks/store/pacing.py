"""Deliveries first: how what follows the history's commits yields to the receiver.

The search indexer (``indexer.py``), the field indexer (``query/indexer.py``) and the schema
learner (``schemas/learner.py``) each do work for every row committed, on a thread of their own.
On a small machine that work competes with the receiver for the cores (and, for the two written
in Python, for the interpreter's lock), so while the receiver is saturated each follower takes a
small share of a core and falls behind rather than slow the acknowledgements; as soon as the
commits stop for QUIET_S it catches up at once. Below saturation it keeps pace.

Saturated means deliveries wait for the writer: its commits hold SATURATED_ROWS rows or more on
average (the writer commits everything waiting at once; with room, a commit holds the few that
arrived during the one before, one at a steady 200/s).

``Pace`` is that rule for one follower, on the event loop:

* ``arrived(batch)``: a store listener; counts commits and the rows they held, and when the last
  came (safe from any thread: plain counters);
* after each step (``spent``: what the step took from the receiver, ``began``: when it was asked
  for), ``await pause(spent, began)``: while commits arrive (one came within QUIET_S), wait until
  the step took at most ``share()`` of the time since it began. What a step takes from the
  receiver: its thread's CPU time when the work runs in SQLite, without the interpreter's lock
  (the search index); its whole time on its thread when it runs Python (the field indexer, the
  learner: while it runs, the event loop waits for the lock at every system call), in steps of
  ``limit(chunk)`` rows. The share is what the receiver leaves: ``yield_share`` while it is
  saturated, else ``max_share`` (a follower keeps pace at a steady rate, and a backlog left by a
  rush is caught up while deliveries still come); it is looked at again while the wait lasts, so
  a rush that ends shortens it. The wait ends early when no commit came for QUIET_S (the receiver
  has room) or ``hurry()`` is called (``settled()``);
* without commits arriving (a backlog: the first start on a long history, the end of a rush) the
  share is ``backlog_share``, and only ``hurry()`` ends the wait early;
* a follower never falls more than MAX_BEHIND rows behind for its yielding: once the rows that
  arrived since it started outnumber the rows it followed by more than that, it takes
  ``max_share`` again, saturated or not, until it is back within the bound. What reads past a
  follower (a search reads the rows past the index one by one) so stays bounded however long a
  flood lasts.

Nothing here holds anything open while it waits: each follower's step reads the history in
statements of its own, so a waiting follower never holds a read snapshot (which would keep the
history's write-ahead log from starting over: see checkpoints.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sized

QUIET_S = 0.1  # no commit for this long: the receiver has room, followers catch up at once
RATE_S = 0.25  # the rows a commit holds are counted over this long (and smoothed)
SATURATED_ROWS = 8.0  # rows a commit holds on average while deliveries wait for the writer
SATURATED_STEP_S = 0.005  # while saturated, a step reads about this long's worth of rows
MIN_ROWS = 16  # ... and at least this many
_MIN_WAIT_S = 0.005  # the shortest sleep while watching for the commits to stop
MAX_BEHIND = 100_000  # rows a follower may fall behind by yielding to a saturated receiver


class Pace:
    """One follower's share of the time while commits keep arriving (see the module)."""

    def __init__(
        self,
        *,
        max_share: float,
        yield_share: float,
        backlog_share: float = 1.0,
        quiet_s: float = QUIET_S,
        max_behind: int = MAX_BEHIND,
    ) -> None:
        shares = (max_share, yield_share, backlog_share)
        if not all(0 < share <= 1 for share in shares) or yield_share > max_share:
            raise ValueError("Shares are fractions of a core, above 0 and at most 1.")
        self.max_share = max_share
        self.yield_share = yield_share
        self.backlog_share = backlog_share
        self.quiet_s = quiet_s
        self.max_behind = max_behind
        self.followed_rows = 0  # rows the steps read, at most as many as arrived (see behind)
        self.commits = 0  # commits heard of (deliveries arriving)
        self.arrived_rows = 0  # rows they held
        self.steps = 0  # steps measured
        self.paused = 0  # pauses that waited
        self.cut_short = 0  # ... of them ended early: the commits stopped, or hurry()
        self._last = -1e9  # when the last commit was heard of (time.monotonic)
        self._window_at = time.monotonic()  # the rows a commit holds are counted over RATE_S
        self._window_rows = 0
        self._window_commits = 0
        self.rows_per_commit = 0.0  # smoothed: SATURATED_ROWS or more, the receiver is saturated
        self._cost = 0.0  # seconds a row takes from the receiver, smoothed
        self._hurry = asyncio.Event()

    # -- what happens ----------------------------------------------------------------------

    def arrived(self, batch: object = None) -> None:
        """A commit (``batch``: its rows, when sized). A store listener; any thread."""
        self.commits += 1
        if isinstance(batch, Sized):
            self.arrived_rows += len(batch)
        self._last = time.monotonic()

    def measure(self, rows: int, spent: float) -> None:
        """A step read ``rows`` rows and took ``spent`` seconds from the receiver."""
        self.steps += 1
        # A backlog from before the start is not counted as arrived: rows read beyond those
        # that arrived are not counted either, so ``behind`` never hides a lag behind a backlog.
        self.followed_rows = min(self.followed_rows + max(rows, 0), self.arrived_rows)
        if rows > 0:
            per_row = spent / rows
            self._cost = per_row if not self._cost else 0.8 * self._cost + 0.2 * per_row
        self._window()

    def _window(self) -> None:
        """Every RATE_S: the rows a commit held meanwhile, smoothed (none arrived: as before)."""
        now = time.monotonic()
        if now - self._window_at < RATE_S:
            return
        arrived, commits = self.arrived_rows, self.commits
        if commits > self._window_commits:
            batch = (arrived - self._window_rows) / (commits - self._window_commits)
            self.rows_per_commit = 0.5 * self.rows_per_commit + 0.5 * batch
        self._window_at, self._window_rows, self._window_commits = now, arrived, commits

    def hurry(self) -> None:
        """End the pause under way (and the next one, if none is): catch up now."""
        self._hurry.set()

    # -- what it decides -------------------------------------------------------------------

    @property
    def quiet(self) -> bool:
        """No commit came for ``quiet_s``: the receiver has room."""
        return time.monotonic() - self._last >= self.quiet_s

    @property
    def saturated(self) -> bool:
        """Deliveries wait for the writer: its commits hold many rows each."""
        return self.rows_per_commit >= SATURATED_ROWS

    @property
    def behind(self) -> int:
        """Rows that arrived since the start and no step has read yet (a backlog from before the
        start may come on top)."""
        return max(0, self.arrived_rows - self.followed_rows)

    @property
    def yielding(self) -> bool:
        """Whether the follower gives way to the receiver: saturated, and not more than
        ``max_behind`` rows behind."""
        return self.saturated and self.behind <= self.max_behind

    def limit(self, chunk: int) -> int:
        """The rows the next step may read, at most ``chunk``: while the receiver is saturated,
        about SATURATED_STEP_S's worth, so that a follower holding the interpreter's lock never
        holds up the event loop long at a time (its share comes in short steps)."""
        if not self.yielding or self._cost <= 0:
            return chunk
        return max(MIN_ROWS, min(chunk, int(SATURATED_STEP_S / self._cost)))

    def share(self) -> float:
        """The share of the time a step may take while commits arrive."""
        return self.yield_share if self.yielding else self.max_share

    async def pause(self, spent: float, began: float, *, then: float = 0.0) -> None:
        """After a step that took ``spent`` seconds from the receiver and was asked for at ``began``
        (time.monotonic): wait until it took at most its share of the time since ``began``:
        ``share()`` while commits arrive (a commit came within ``quiet_s``), else
        ``backlog_share``. ``then``: time the follower waits anyway before its next step (its
        coalescing wait), counted as part of the pause."""
        busy = not self.quiet
        share = self.share() if busy else self.backlog_share
        until = began + spent / share - then
        if time.monotonic() >= until:
            self._hurry.clear()
            return
        self.paused += 1
        while True:
            now = time.monotonic()
            if self._hurry.is_set() or (busy and self.quiet):
                self._hurry.clear()
                self.cut_short += 1
                return
            if busy:  # a rush that ended gives back the share it took
                self._window()
                until = min(until, began + spent / self.share() - then)
            if now >= until:
                return
            wait = until - now
            if busy:  # or until the moment the commits will have stopped for quiet_s
                wait = min(wait, max(self._last + self.quiet_s - now, _MIN_WAIT_S))
            with contextlib.suppress(TimeoutError):  # the wait ended; look again
                async with asyncio.timeout(wait):
                    await self._hurry.wait()
