"""A relay link's low-water mark: the newest cursor such that every delivery received at or below
it is stored.

Deliveries are received in cursor order and handed to the store without waiting, so they may be
stored out of order (a write that failed is retried while later ones commit). The newest stored
cursor then says nothing about the older ones; the mark does, and a restart resumes after it.
"""

from __future__ import annotations

import collections


class LowWater:
    """``received(cursor)`` in increasing order, ``stored(cursor)`` in any order; ``mark`` never
    passes a received cursor that is not stored."""

    def __init__(self, mark: int = 0) -> None:
        self._mark = mark
        self._last = mark  # the newest cursor received
        self._order: collections.deque[int] = collections.deque()  # received, above the mark
        self._waiting: set[int] = set()  # of those, the ones not stored yet

    @property
    def mark(self) -> int:
        return self._mark

    @property
    def waiting(self) -> int:
        """Deliveries received and not yet stored."""
        return len(self._waiting)

    def received(self, cursor: int) -> None:
        if cursor <= self._last:
            raise ValueError(f"cursor {cursor} received after {self._last}")
        self._last = cursor
        self._order.append(cursor)
        self._waiting.add(cursor)

    def stored(self, cursor: int) -> None:
        """``cursor`` (received before) is committed: the mark moves past every stored cursor at
        the front. Anything else is ignored."""
        if cursor not in self._waiting:
            return
        self._waiting.discard(cursor)
        order = self._order
        while order and order[0] not in self._waiting:
            self._mark = order.popleft()
