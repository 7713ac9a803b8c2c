"""What follows the history's commits on threads of its own, off the acknowledgement path: the
schema learner (payload schemas and their drift) and the field indexer (field queries).

``CommitFollowers`` starts them right after the store opens and stops them right before it
closes; the drift the learner finds in a new delivery and how far it got are told to the
runtime's listeners (``on_drift``, ``on_learned``), on the event loop.

Deliveries come first: while commits keep arriving, each of them (and the store's own search
indexer) takes a bounded share of a core, falls behind rather than slow the acknowledgements, and
catches up as soon as the commits stop (``webhooks/store/pacing.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from walletpass_tui.webhooks.store import Store

if TYPE_CHECKING:  # each is imported when it starts
    from walletpass_tui.query.indexer import FieldIndexer
    from walletpass_tui.schemas.learner import SchemaLearner
    from walletpass_tui.schemas.records import DriftRecord

# (the attempt's row id, the drift it showed first); the last row id the learner looked at
DriftHeard = Callable[[int, Sequence["DriftRecord"]], None]
LearnedHeard = Callable[[int], None]


class CommitFollowers:
    """The schema learner and the field indexer of one store (each only when asked for)."""

    def __init__(self, on_drift: DriftHeard, on_learned: LearnedHeard) -> None:
        self._on_drift = on_drift
        self._on_learned = on_learned
        self.learner: SchemaLearner | None = None  # None: not learning (or not started)
        self.field_indexer: FieldIndexer | None = None
        self._unfollow: list[Callable[[], None]] = []

    async def start(self, store: Store, *, learn_schemas: bool, index_fields: bool) -> None:
        """Drift is announced for the rows committed from now on (those stored before are
        learned quietly)."""
        if learn_schemas:
            from walletpass_tui.schemas.learner import SchemaLearner

            learner = SchemaLearner(store.path)
            learner.start(announce_after=await store.last_id())
            self.learner = learner
            self._unfollow += [
                learner.follow(store),
                learner.on_drift(self._drift),
                learner.on_progress(self._on_learned),
            ]
        if index_fields:
            from walletpass_tui.query.indexer import FieldIndexer

            indexer = FieldIndexer(store.path).start()
            self.field_indexer = indexer
            self._unfollow.append(indexer.follow(store))

    async def stop(self) -> None:
        unfollow, self._unfollow = self._unfollow, []
        for stop in unfollow:
            stop()
        learner, self.learner = self.learner, None
        if learner is not None:
            await learner.aclose()
        indexer, self.field_indexer = self.field_indexer, None
        if indexer is not None:
            await indexer.stop()

    async def learn_templates(self, store_path: Any, templates: Sequence[Any]) -> list[DriftRecord]:
        """Learn the templates ``GET passTemplates`` listed; the drift they showed. Through the
        running learner, else on a thread of its own."""
        from walletpass_tui.schemas import learn_templates
        from walletpass_tui.schemas.records import DriftRecord

        items = list(templates)
        if self.learner is not None:
            found = await asyncio.wrap_future(self.learner.learn_templates(items))
            return [DriftRecord.of(f) for f in found]
        return await asyncio.to_thread(learn_templates, store_path, items)

    def _drift(self, attempt_id: int | None, findings: Sequence[Any]) -> None:
        if attempt_id is None:  # the templates' drift is returned by learn_templates()
            return
        from walletpass_tui.schemas.records import DriftRecord

        self._on_drift(attempt_id, [DriftRecord.of(f) for f in findings])
