"""The one path from the receiver to the screen: store commits -> one Textual message per frame.

The store calls its listeners synchronously on the event loop after every commit. ``LiveRows`` only
collects the new attempts and, at most once per frame, posts a single ``DeliveriesStored`` message
with everything that arrived since the last one, so a burst of a thousand deliveries costs the UI one
update, not a thousand. Should the UI fall far behind, the oldest pending attempts are dropped and
the message says so, and the log reloads from the store instead.

The frame adapts: up to 30 per second while a person is using the dashboard (``touch()`` on every
key or mouse event), 4 per second while only new rows arrive; a stream of deliveries then costs
a fraction of the redraws. A flood, more than ``FLOOD_ROWS`` new rows in a frame (several
screenfuls: more than anyone reads), is drawn twice a second until it eases, which halves what
watching it costs. A delivery after a quiet spell is posted at once; so is one the log on
screen shows (``shown``, its filter) after a spell without such rows, even while deliveries it
does not show keep the frame busy: a filtered log draws its rare rows without waiting a frame.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Protocol

from textual.message_pump import MessagePump

from walletpass_tui.ui.messages import DeliveriesStored
from walletpass_tui.webhooks.models import Attempt

FRAME_S = 1 / 30  # while a person interacts
IDLE_FRAME_S = 1 / 4  # while only new rows arrive
FLOOD_FRAME_S = 1 / 2  # while more than FLOOD_ROWS arrive a frame
FLOOD_ROWS = 40
INTERACTION_S = 2.0  # how long after the last key or mouse event the dashboard counts as in use
MAX_PENDING = 5_000


class CommitSource(Protocol):
    """Anything that calls a listener with each committed batch: the store, the runtime."""

    def subscribe(self, listener: Callable[[Sequence[Attempt]], None], /) -> Callable[[], None]: ...


class LiveRows:
    """Subscribe to ``store`` and post coalesced ``DeliveriesStored`` messages to ``target``."""

    def __init__(
        self,
        store: CommitSource,
        target: MessagePump,
        *,
        interval: float = FRAME_S,
        idle_interval: float | None = None,
        max_pending: int = MAX_PENDING,
        shown: Callable[[Attempt], bool] | None = None,
    ) -> None:
        self._store = store
        self._shown = shown  # which attempts the log on screen shows as new rows
        self._shown_at = float("-inf")  # when the last message with one of them went out
        self._target = target
        self._interval = interval
        self._idle_interval = (
            idle_interval if idle_interval is not None else max(interval, IDLE_FRAME_S)
        )
        self._touched_at = float("-inf")
        self._flooded = False  # the last message carried more than FLOOD_ROWS attempts
        self._posted_at = float("-inf")  # when the last message went out
        self._max_pending = max_pending
        self._pending: list[Attempt] = []
        self._dropped = 0
        self._timer: asyncio.TimerHandle | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        if self._unsubscribe is None:
            self._unsubscribe = self._store.subscribe(self._on_commit)
            self._posted_at = asyncio.get_running_loop().time()

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()

    def _on_commit(self, batch: Sequence[Attempt]) -> None:
        self._pending.extend(batch)
        overflow = len(self._pending) - self._max_pending
        if overflow > 0:
            del self._pending[:overflow]
            self._dropped += overflow
        loop = asyncio.get_running_loop()
        now = loop.time()
        # A frame after the last message: at once after a quiet spell (a lone delivery is not
        # held back), later while a stream keeps coming; at once too for the first row the log
        # shows after a spell without any (deliveries it filters out do not hold it back).
        due = max(now, self._posted_at + self._frame(now))
        if due > now and self._shown_is_due(batch, now):
            due = now
        if self._timer is None or self._timer.when() > due:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(due, self.flush)

    def _shown_is_due(self, batch: Sequence[Attempt], now: float) -> bool:
        shown = self._shown
        if shown is None or now - self._shown_at < self._frame(now):
            return False
        return any(shown(a) for a in batch)

    def touch(self) -> None:
        """A person pressed a key or used the mouse: frames are short for a while (a frame
        already waiting on the long interval is shortened)."""
        loop = asyncio.get_running_loop()
        self._touched_at = loop.time()
        due = self._posted_at + self._interval
        if self._timer is not None and self._timer.when() > due:
            self._timer.cancel()
            self._timer = loop.call_at(max(loop.time(), due), self.flush)

    def _frame(self, now: float) -> float:
        if now - self._touched_at < INTERACTION_S:
            return self._interval
        if self._flooded:
            return max(self._idle_interval, FLOOD_FRAME_S)
        return self._idle_interval

    @property
    def pending(self) -> int:
        """Attempts collected and not yet posted."""
        return len(self._pending)

    def flush(self) -> None:
        """Post what was collected now, as one message (the frame timer calls this; so may a
        caller that cannot wait for it, such as a test)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending and not self._dropped:
            return
        attempts, self._pending = tuple(self._pending), []
        dropped, self._dropped = self._dropped, 0
        self._flooded = len(attempts) > FLOOD_ROWS
        with contextlib.suppress(RuntimeError):  # flushed by hand outside a loop
            self._posted_at = asyncio.get_running_loop().time()
            if self._shown is not None and any(self._shown(a) for a in attempts):
                self._shown_at = self._posted_at
        self._target.post_message(DeliveriesStored(attempts, dropped, flood=self._flooded))
