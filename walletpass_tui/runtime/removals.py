"""Rows taken out of the history under a running receiver (a prune its writer runs between its
commits, ``webhooks/store/prune_job.py``), told to whoever shows the history: the receiver's own
dashboard (``DeliveryRuntime.subscribe(gaps=...)``) and, through the control channel's ``removed``
message, attached ones. Whoever hears it reads its counts and rows from the history again.

While a prune runs it is told at most every ``TOLD_EVERY_S`` (a step deletes a few hundred rows
every few milliseconds), and once more when it ends, so the last step is always told.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from walletpass_tui.webhooks.store import Store
    from walletpass_tui.webhooks.store.prune_job import PruneJob

TOLD_EVERY_S = 0.5


def follow_prunes(store: Store, removed: Callable[[int], None]) -> Callable[[], None]:
    """Call ``removed(deleted)`` (on the event loop) when a prune of ``store`` deleted rows:
    ``deleted`` is how many since it was last called. Returns a function that stops it."""
    stops: list[Callable[[], None]] = []

    def began(job: PruneJob) -> None:
        told = 0
        told_at = float("-inf")

        def tell(job: PruneJob, *, last: bool) -> None:
            nonlocal told, told_at
            now = asyncio.get_running_loop().time()
            if job.deleted > told and (last or now - told_at >= TOLD_EVERY_S):
                removed(job.deleted - told)
                told, told_at = job.deleted, now

        stops.append(job.stepped.subscribe(lambda job: tell(job, last=False)))
        stops.append(job.ended.subscribe(lambda job: tell(job, last=True)))

    stops.append(store.on_prune(began))

    def stop() -> None:
        for undo in stops:
            undo()

    return stop
