"""``Subscriptions``: what a runtime tells those who subscribe (``Runtime.subscribe`` and
``Runtime.watch``), one list of listeners for each kind of news, used by both runtimes.

Each list is a ``listeners.Listeners``: called on the event loop, in order; one that raises is
logged and the others still hear. A runtime notifies only what it knows: an attached dashboard
never hears drift (the receiver learns), a receiver in this process never skips rows (its
``gaps`` are only the rows a prune took out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from walletpass_tui.listeners import Listeners

if TYPE_CHECKING:
    from walletpass_tui.runtime.protocol import (
        DeliveryListener,
        DriftListener,
        ForwardListener,
        GapListener,
        LearnedListener,
    )
    from walletpass_tui.schemas.records import DriftRecord
    from walletpass_tui.webhooks.models import Attempt, ForwardResult, ForwardRow


class Subscriptions:
    """The listeners of one runtime; ``owner`` names the logger a failing one is logged on."""

    def __init__(self, owner: str) -> None:
        self.deliveries: Listeners[[Sequence[Attempt]]] = Listeners(owner, "deliveries")
        self.forwards: Listeners[[ForwardRow, ForwardResult]] = Listeners(owner, "forwards")
        self.drift: Listeners[[int, Sequence[DriftRecord]]] = Listeners(owner, "drift")
        self.learned: Listeners[[int]] = Listeners(owner, "learned")
        self.gaps: Listeners[[int]] = Listeners(owner, "gaps")
        self.changes: Listeners[[]] = Listeners(owner, "receiver state")  # Runtime.watch

    def subscribe(
        self,
        deliveries: DeliveryListener | None = None,
        forwards: ForwardListener | None = None,
        *,
        drift: DriftListener | None = None,
        learned: LearnedListener | None = None,
        gaps: GapListener | None = None,
    ) -> Callable[[], None]:
        """Add each listener given to its list; returns a function that removes them all."""
        stops: list[Callable[[], None]] = []
        if deliveries is not None:
            stops.append(self.deliveries.subscribe(deliveries))
        if forwards is not None:
            stops.append(self.forwards.subscribe(forwards))
        if drift is not None:
            stops.append(self.drift.subscribe(drift))
        if learned is not None:
            stops.append(self.learned.subscribe(learned))
        if gaps is not None:
            stops.append(self.gaps.subscribe(gaps))

        def unsubscribe() -> None:
            for stop in stops:
                stop()

        return unsubscribe
