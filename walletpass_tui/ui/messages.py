"""App-level messages, and the signals that carry live data down to the panes.

Data flows one way. The app receives what happens outside the UI as messages (``DeliveriesStored``
from ``LiveRows``, ``ForwardAnswered`` from the runtime) and publishes it on ``LiveSignals``; each
pane subscribes in its ``on_mount`` to what it shows. The app never looks inside its screens, and a
pane that is gone (a screen closed, the app shutting down) is simply not called: ``Signal`` skips
nodes that are no longer running.

Screens ask the app for app-wide things by messages too (``ReplayRequested``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from textual.dom import DOMNode
from textual.message import Message
from textual.signal import Signal

from walletpass_tui.webhooks.models import Attempt, ForwardResult, ForwardRow, Stats

if TYPE_CHECKING:
    from walletpass_tui.ui.view.schema_view import DriftMarks
    from walletpass_tui.ui.view.traffic import Traffic


@dataclass(frozen=True)
class ReceiverState:
    """What the header says about the receiver."""

    address: str | None = None  # host:port/path it listens on (None: not listening)
    problem: str | None = None  # why it is not listening, when it should be
    public_url: str | None = None
    paused: bool = False
    mode: str | None = None  # e.g. "demo"
    forward_targets: tuple[str, ...] = ()  # where verified deliveries are forwarded
    pending_forwards: int = 0  # forwards waiting for the user's app
    relay: str | None = None  # the relay link's state in words (None: no --relay)
    relay_up: bool = False  # connected to the relay
    tunnel: str | None = None  # the tunnel in words while it gives no public URL
    history_problem: str | None = None  # the history cannot be written: why, and the fix
    attached: str | None = None  # attached to a receiver in another process: "listen, pid 4242"
    gone: bool = False  # attached, and that receiver stopped (the history is still shown)


class DeliveriesStored(Message):
    """Attempts committed since the previous message, oldest first (one message per frame)."""

    def __init__(
        self, attempts: tuple[Attempt, ...], dropped: int = 0, *, flood: bool = False
    ) -> None:
        super().__init__()
        self.attempts = attempts
        self.dropped = dropped  # attempts left out (the UI fell behind) or pruned: reload
        self.flood = flood  # more rows than anyone reads a frame: frames come half as often


class ForwardAnswered(Message):
    """The forwarder sent a queued delivery on to the user's app (and recorded the answer)."""

    def __init__(self, row: ForwardRow, result: ForwardResult) -> None:
        super().__init__()
        self.row = row
        self.result = result


class ReplayRequested(Message):
    """A screen asks the app to open the replay form for this attempt."""

    def __init__(self, attempt_id: int) -> None:
        super().__init__()
        self.attempt_id = attempt_id


class DiffRequested(Message):
    """A screen asks the app to compare a delivery with another (``against``), or with what it
    is compared with by default (None: its first attempt, or the one before it)."""

    def __init__(self, attempt_id: int, against: int | None = None) -> None:
        super().__init__()
        self.attempt_id = attempt_id
        self.against = against


class LiveSignals:
    """What panes subscribe to. The last header values are kept, so a pane mounted late (a
    screen pushed after the first deliveries) starts from them instead of from zero."""

    def __init__(self, owner: DOMNode) -> None:
        self.deliveries: Signal[DeliveriesStored] = Signal(owner, "deliveries")
        # A forward or replay of a message was recorded: its webhook-id (None: of any message).
        self.history: Signal[str | None] = Signal(owner, "history")
        self.stats: Signal[Stats | None] = Signal(owner, "stats")
        self.receiver: Signal[ReceiverState] = Signal(owner, "receiver")
        self.last_stats: Stats | None = None  # None: not counted yet
        self.last_receiver = ReceiverState()
        # Which deliveries the event log shows as new rows (its filter); set by the log.
        self.log_shows: Callable[[Attempt], bool] | None = None
        # The last hour per minute (the header's sparkline, the Stats screen); set by the app.
        self.traffic: Traffic | None = None
        # Deliveries that brought drift: the ids whose mark changed (None: any, or the count).
        self.drift: Signal[frozenset[int] | None] = Signal(owner, "drift")
        # The learned schemas changed (the Schema screen reads them again).
        self.schemas: Signal[None] = Signal(owner, "schemas")
        # Which deliveries brought drift, and how many findings; set by the app after paint.
        self.drift_marks: DriftMarks | None = None

    def shown(self, attempt: Attempt) -> bool:
        """Whether ``attempt`` becomes a row of the event log (``LiveRows`` posts the first
        of these after a spell without any at once)."""
        return self.log_shows is not None and self.log_shows(attempt)

    def publish_stats(self, stats: Stats) -> None:
        self.last_stats = stats
        self.stats.publish(stats)

    def publish_receiver(self, state: ReceiverState) -> None:
        self.last_receiver = state
        self.receiver.publish(state)


class HasLiveSignals(Protocol):
    @property
    def live(self) -> LiveSignals: ...


def live_signals(node: DOMNode) -> LiveSignals:
    """The signals of the app ``node`` runs in."""
    return cast(HasLiveSignals, node.app).live
