"""The slice of the event log held in memory: at most ``capacity`` rows around the cursor.

The store holds the history (possibly millions of attempts); the log keeps only a window of it, pages
older rows in as the cursor nears the bottom and newer ones as it climbs back, and drops rows at the
far end, so memory stays the same whether 100 or 100,000 deliveries are stored.

Rows are newest first: index 0 is the top line. Every change that adds or removes rows *above* the
cursor returns that count (the "shift") so the view can keep the same lines on screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from walletpass_tui.ui.view.log_columns import measure
from walletpass_tui.webhooks.models import LogRow

DEFAULT_CAPACITY = 500
PAGE = 200
EDGE = 40  # rows from either end of the window at which the next page is fetched


class LogWindow:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 2 * PAGE:
            raise ValueError("the window must hold at least two pages")
        self.capacity = capacity
        self.rows: list[LogRow] = []
        self.cursor = 0
        self.has_older = False  # the store holds older matching rows than rows[-1]
        self.has_newer = False  # ... and newer ones than rows[0] (the window left the top)
        self.unseen = 0  # rows that arrived while the window was away from the top
        # The longest text of each column sized by its values, over the rows taken in since the
        # last reset (it only grows meanwhile); ``widths_seen`` counts its changes.
        self.widest: dict[str, int] = {}
        self.widths_seen = 0

    def _measure(self, rows: Sequence[LogRow]) -> None:
        if measure(rows, self.widest):
            self.widths_seen += 1

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def current(self) -> LogRow | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    @property
    def at_top(self) -> bool:
        """The window's first row is the newest matching row stored."""
        return not self.has_newer

    @property
    def newest_id(self) -> int | None:
        return self.rows[0].id if self.rows else None

    @property
    def oldest_id(self) -> int | None:
        return self.rows[-1].id if self.rows else None

    def reset(self, rows: Sequence[LogRow], *, has_older: bool) -> None:
        """Start over with ``rows`` (newest first, the newest stored): after a filter or reload."""
        self.rows = list(rows[: self.capacity])
        self.cursor = 0
        self.widest = {}
        self.widths_seen += 1
        self._measure(self.rows)
        self.has_older = has_older or len(rows) > self.capacity
        self.has_newer = False
        self.unseen = 0

    def move_to(self, index: int) -> None:
        self.cursor = max(0, min(index, len(self.rows) - 1)) if self.rows else 0

    def wants_older(self) -> bool:
        return self.has_older and len(self.rows) - self.cursor <= EDGE

    def wants_newer(self) -> bool:
        return self.has_newer and self.cursor < EDGE

    # -- growing --------------------------------------------------------------------------------

    def add_live(self, rows: Sequence[LogRow], *, following: bool) -> int:
        """Rows just stored (newest first). Returns the shift above the cursor."""
        if self.has_newer:
            self.unseen += len(rows)
            return 0
        top = self.newest_id
        fresh = [r for r in rows if top is None or r.id > top]
        if not fresh:
            return 0
        self.rows[:0] = fresh
        self._measure(fresh)
        # Following, the cursor stays on the newest row; otherwise on the row it was on.
        self.cursor = 0 if following else self.cursor + len(fresh)
        return len(fresh) - self._trim(prefer_end=following)

    def add_older(self, rows: Sequence[LogRow], *, exhausted: bool) -> int:
        """A page of rows older than the window's last (newest first). Returns the shift."""
        bottom = self.oldest_id
        older = [r for r in rows if bottom is None or r.id < bottom]
        self.rows.extend(older)
        self._measure(older)
        self.has_older = not exhausted
        return -self._trim(prefer_end=False)

    def add_newer(self, rows: Sequence[LogRow], *, reached_top: bool) -> int:
        """A page of rows just newer than the window's first (oldest first). Returns the shift."""
        top = self.newest_id
        fresh = [r for r in reversed(rows) if top is None or r.id > top]
        self.rows[:0] = fresh
        self._measure(fresh)
        self.cursor += len(fresh)
        self.has_newer = not reached_top
        if reached_top:
            self.unseen = 0
        return len(fresh) - self._trim(prefer_end=True)

    def _trim(self, *, prefer_end: bool) -> int:
        """Drop rows beyond capacity at the end far from the cursor; returns how many went above."""
        excess = len(self.rows) - self.capacity
        if excess <= 0:
            return 0
        drop_end = prefer_end or self.cursor < len(self.rows) // 2
        if drop_end and len(self.rows) - excess > self.cursor:
            del self.rows[-excess:]
            self.has_older = True
            return 0
        del self.rows[:excess]
        self.cursor = max(0, self.cursor - excess)
        self.has_newer = True
        return excess
