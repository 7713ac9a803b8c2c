"""What the laptop says about its relay link: the state the dashboard's header and ``listen``
show, and the lines ``listen`` prints when it changes."""

from __future__ import annotations

from dataclasses import dataclass

from walletpass_tui.relay.link.subscriber import MISBEHAVING_AFTER
from walletpass_tui.text import printable


@dataclass(frozen=True)
class LinkState:
    """What the header and ``listen`` show about the relay."""

    url: str
    connected: bool = False
    cursor: int = 0
    head: int = 0
    error: str | None = None  # why the last connection ended (None: it did not)
    stopped: bool = False  # refused for good (a wrong token, not a subscribe URL)
    started: bool = False  # a connection was tried
    refusals: int = 0  # the relay broke the rules this many times in a row, identically
    # Deliveries still to catch up on, of those the relay said were waiting when it connected
    # (None: it did not say; the cursors then tell how far behind).
    pending: int | None = None
    retry_in: float | None = None  # seconds until the next try, while disconnected
    # The relay's head went back below the cursor (from, to): its database was restored; the
    # link follows its numbering after ``to``. The last time it did.
    rewound: tuple[int, int] | None = None

    @property
    def behind(self) -> int:
        if self.pending:
            return self.pending
        return max(0, self.head - self.cursor)

    @property
    def misbehaving(self) -> bool:
        return self.refusals >= MISBEHAVING_AFTER and not self.stopped

    def describe(self) -> str:
        """One short sentence, for the header and for ``listen``'s lines."""
        if self.stopped:
            return f"relay stopped: {printable(self.error or 'refused', 200)}"
        if self.misbehaving and not self.connected:
            return (
                f"relay misbehaving ({printable(self.error or 'refused', 200)}; "
                f"{self.refusals} times in a row); retrying with backoff, skipping nothing"
            )
        if self.connected:
            if self.pending:
                return (
                    f"relay connected, catching up on {_deliveries(self.pending)} "
                    f"(after cursor {self.cursor})"
                )
            if self.behind:
                return (
                    f"relay connected, catching up to cursor {self.head} "
                    f"(after cursor {self.cursor})"
                )
            return f"relay connected, up to date (cursor {self.cursor})"
        if self.error:
            return f"relay disconnected ({printable(self.error, 200)}); {_next_try(self.retry_in)}"
        return "relay connecting"

    @property
    def headline(self) -> str:
        """The header's words: like ``describe()`` without the cursor, so it changes only when
        the connection does or the backlog shrinks."""
        if self.stopped:
            return f"relay stopped: {printable(self.error or 'refused', 200)}"
        if self.misbehaving:
            return "relay misbehaving, retrying"
        if self.connected:
            return f"relay {self.behind:,} behind" if self.behind else "relay up to date"
        return "relay disconnected, retrying" if self.error else "relay connecting"

    @property
    def healthy(self) -> bool:
        return self.connected and not self.stopped


class StateLines:
    """The lines ``listen`` prints about the relay: one when the connection comes (saying how far
    behind) or goes, and one when a backlog it announced is caught up; nothing per delivery. A
    relay that keeps breaking the rules the same way gets one line until it stops."""

    def __init__(self) -> None:
        self.last: LinkState | None = None
        self.catching_up = False
        self.counted: int | None = None  # deliveries the relay said it had waiting, if it said

    def __call__(self, new: LinkState) -> str | None:
        old, self.last = self.last, new
        if new.stopped:
            return new.describe()
        if new.rewound is not None and (old is None or old.rewound != new.rewound):
            return rewound_line(*new.rewound)
        if new.misbehaving:  # one line when it starts; quiet while the link retries
            return None if old is not None and old.misbehaving else new.describe()
        if not new.connected and not new.error:
            return None  # still connecting: the line comes when it connects or fails
        changed = (
            old is None
            or old.misbehaving
            or (old.connected, old.error) != (new.connected, new.error)
        )
        if changed:
            self.catching_up = new.connected and new.behind > 0
            self.counted = new.pending if self.catching_up else None
            return new.describe()
        if self.catching_up and new.connected and new.behind == 0:
            self.catching_up = False
            if self.counted:
                return f"relay caught up on {_deliveries(self.counted)} (cursor {new.cursor})"
            return f"relay caught up (cursor {new.cursor})"
        return None


def rewound_line(cursor: int, head: int) -> str:
    """What is said when the relay's head went back below the cursor handled."""
    return (
        f"relay went back from cursor {cursor} to {head} (was its database restored from a "
        f"backup?): following what it numbers after {head}, so nothing new is skipped"
    )


def _deliveries(count: int) -> str:
    return f"{count:,} deliver{'y' if count == 1 else 'ies'}"


def _next_try(delay: float | None) -> str:
    if delay is None:
        return "retrying"
    return f"next try in {delay:.1f} s" if delay < 10 else f"next try in {delay:.0f} s"
