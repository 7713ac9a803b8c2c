"""A prune the receiver's own writer runs between its commits (``events prune`` beside a running
receiver asks it for one over the control channel).

Deliveries always go first. The writer (writer.py) takes a step of the job only

* while no delivery waits for it, or, when deliveries never stop waiting, after every
  ``FORCED_EVERY`` batches (a small share, so a saturated receiver still makes progress);
* once the previous step's write-ahead log is on disk (its fsync runs on the sync thread while
  the writer takes deliveries), so a delivery's own fsync never has more than one step's log
  to write, and then only after a rest ``REST`` times as long as that step and its fsync took:
  the prune takes at most a third of the writer's and the disk's time, and most deliveries
  find the log with nothing of the prune's left to sync;
* while no delivery's fsync and no copy of the log into the database file (checkpoints.py) is
  under way (except a step the writer takes when never idle): the prune never writes log
  faster than the checkpoints copy it, nor while a delivery waits for the disk.

A step deletes the oldest attempts received before the cutoff in one transaction, and takes them
out of the counts by minute in the same one (prune.py). Its size follows how long the last step
held the writer: about ``HOLD_S``, between ``MIN_STEP`` and ``MAX_STEP`` rows.

One job at a time per writer; ``stop()`` ends it after the step under way (what was deleted
stays deleted, and ``deleted`` says how much).
"""

from __future__ import annotations

from collections.abc import Callable

from walletpass_tui.listeners import Listeners

FIRST_STEP = 50
MIN_STEP, MAX_STEP = 10, 2_000
HOLD_S = 0.004  # how long one step holds the writer (and so a delivery that arrives meanwhile)
FORCED_EVERY = 16  # batches in a row, each followed by more deliveries, before a step anyway
REST = 2.0  # after a step and its fsync, the prune waits this many times as long

DONE = "done"  # every attempt before the cutoff is gone
STOPPED = "stopped"  # stop() was asked for (or the receiver is closing)
FAILED = "failed"  # a step could not be written (``reason`` says why)


class PruneJob:
    """What one prune asked of the writer, and how far it got (read on the event loop)."""

    def __init__(self, cutoff_ms: int, wake: Callable[[], None] = lambda: None) -> None:
        """``wake``: called when the job is asked to stop (the writer may be waiting)."""
        self.cutoff_ms = cutoff_ms
        self.deleted = 0
        self.steps = 0
        self.forced = 0  # steps taken while deliveries waited (the writer never idle)
        self.held_s = 0.0  # how long the steps held the writer, in all
        self.longest_s = 0.0  # the longest one
        self.size = FIRST_STEP  # rows the next step deletes at most
        self.end: str | None = None  # DONE, STOPPED or FAILED once it has ended
        self.reason: str | None = None  # why it failed, or why it was stopped
        self.stopping = False
        self.stepped: Listeners[[PruneJob]] = Listeners(__name__, "prune step")
        self.ended: Listeners[[PruneJob]] = Listeners(__name__, "prune end")
        self._wake = wake

    @property
    def running(self) -> bool:
        return self.end is None

    def stop(self, reason: str | None = None) -> None:
        """End the job after the step under way (at once when none is)."""
        if self.end is None and not self.stopping:
            self.stopping = True
            self.reason = reason
            self._wake()

    def took(self, deleted: int, held_s: float, *, forced: bool = False) -> None:
        """A step deleted ``deleted`` rows holding the writer ``held_s`` (``forced``: while
        deliveries waited): the next one's size."""
        self.deleted += deleted
        self.steps += 1
        self.forced += forced
        self.held_s += held_s
        self.longest_s = max(self.longest_s, held_s)
        wanted = self.size * HOLD_S / max(held_s, 0.0005)
        self.size = int(max(MIN_STEP, min(MAX_STEP, self.size * 2, max(self.size / 2, wanted))))
        self.stepped.notify(self)

    def describe(self) -> str:
        """How it went, for the debug log: its steps and how long they held the writer."""
        mean_ms = self.held_s * 1000 / max(1, self.steps)
        return (
            f"{self.deleted} attempts in {self.steps} steps ({self.forced} while deliveries "
            f"waited), {self.deleted / max(1, self.steps):.0f} a step, each holding the writer "
            f"{mean_ms:.1f} ms on average and {self.longest_s * 1000:.1f} ms at most"
        )

    def finish(self, end: str, reason: str | None = None) -> None:
        if self.end is not None:
            return
        self.end = end
        if reason is not None:
            self.reason = reason
        self.ended.notify(self)
