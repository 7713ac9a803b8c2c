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

    @property
    def behind(self) -> int:
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
            if self.behind:
                return f"relay connected, {self.behind} behind (cursor {self.cursor})"
            return f"relay connected, up to date (cursor {self.cursor})"
        if self.error:
            return f"relay disconnected ({printable(self.error, 200)}); retrying"
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

    def __call__(self, new: LinkState) -> str | None:
        old, self.last = self.last, new
        if new.stopped:
            return new.describe()
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
            return new.describe()
        if self.catching_up and new.connected and new.behind == 0:
            self.catching_up = False
            return new.describe()
        return None
