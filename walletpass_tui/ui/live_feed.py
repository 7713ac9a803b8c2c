"""The one path from the receiver to the screen: store commits -> one Textual message per frame.

The store calls its listeners synchronously on the event loop after every commit. ``LiveFeed`` only
collects the new attempts and, at most once per frame, posts a single ``DeliveriesStored`` message
with everything that arrived since the last one, so a burst of a thousand deliveries costs the UI one
update, not a thousand. Should the UI fall far behind, the oldest pending attempts are dropped and
the message says so, and the log reloads from the store instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from textual.message import Message
from textual.message_pump import MessagePump

from walletpass_tui.webhooks.store import Attempt, Store

FRAME_S = 1 / 30
MAX_PENDING = 5_000


class DeliveriesStored(Message):
    """Attempts committed since the previous message, oldest first."""

    def __init__(self, attempts: tuple[Attempt, ...], dropped: int = 0) -> None:
        super().__init__()
        self.attempts = attempts
        self.dropped = dropped  # attempts left out because the UI fell behind: reload


class LiveFeed:
    """Subscribe to ``store`` and post coalesced ``DeliveriesStored`` messages to ``target``."""

    def __init__(
        self,
        store: Store,
        target: MessagePump,
        *,
        interval: float = FRAME_S,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._store = store
        self._target = target
        self._interval = interval
        self._max_pending = max_pending
        self._pending: list[Attempt] = []
        self._dropped = 0
        self._timer: asyncio.TimerHandle | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        if self._unsubscribe is None:
            self._unsubscribe = self._store.subscribe(self._on_commit)

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
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

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
        self._target.post_message(DeliveriesStored(attempts, dropped))
