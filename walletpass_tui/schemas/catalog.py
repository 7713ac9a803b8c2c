"""Every group learned, in memory, and the only two ways to teach it: a delivery (which teaches
only when its verdict is verified) and the pass templates the service listed.

Pure: no file, no thread. ``book.py`` keeps a catalog in step with the schema file.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.schemas import drift
from walletpass_tui.schemas.learn import (
    UNPARSED,
    Shape,
    observe,
    parse_small,
    shape_of,
    template_body,
)
from walletpass_tui.schemas.model import TEMPLATES, Finding, GroupKey, GroupSchema, Repeat, Source
from walletpass_tui.schemas.sample import Sample, slot_values, value_slots
from walletpass_tui.webhooks.models import VERIFIED

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt

# Topics from the wire learned (the service's own topics, deliveries without one and the
# templates are always learned, whatever the wire sent first); deliveries of further topics
# are counted, not learned.
MAX_GROUPS = 100
MAX_TEMPLATE_DIGESTS = 10_000  # templates remembered, so listing them again teaches nothing new
# Shapes are compared over SHAPE_TRIES samples; when fewer than one in SHAPE_HIT_SHARE was the
# last one's, the next SHAPE_PAUSE samples are walked without working out their shape.
SHAPE_TRIES = 64
SHAPE_HIT_SHARE = 8
SHAPE_PAUSE = 512


def from_the_wire(key: GroupKey) -> bool:
    """Whether the group is a topic only the wire names (not one of the service's topics, not
    the deliveries without a topic, not the templates): MAX_GROUPS of them are learned."""
    return not key.templates and key.topic is not None and key.topic not in TOPICS


@dataclass(frozen=True)
class Delivery:
    """One stored attempt as the learner reads it. Only ``verdict == "verified"`` teaches."""

    attempt_id: int | None
    webhook_id: str | None
    seen_at_ms: int
    topic: str | None
    verdict: str
    body: bytes

    @classmethod
    def from_attempt(cls, attempt: Attempt) -> Delivery:
        return cls(
            attempt.id or None,
            attempt.webhook_id,
            attempt.received_at_ms,
            attempt.topic,
            attempt.verdict,
            attempt.body,
        )


@dataclass
class _Run:
    """Consecutive samples of one group's remembered shape (and values), counted but not merged
    yet."""

    group: GroupSchema
    repeat: Repeat
    source: Source  # the latest one's
    times: int = 1


class Catalog:
    """``remember_shapes``: learn a sample of the same shape as the last one of its group (and
    the group's paths unchanged since) without walking it again; ``scan_all``: read every body
    with the non-recursive reader, as larger bodies are (a small one is walked after
    ``json.loads``). The result is the same either way."""

    def __init__(self, *, remember_shapes: bool = True, scan_all: bool = False) -> None:
        self.remember_shapes = remember_shapes
        self.scan_all = scan_all
        self.groups: dict[GroupKey, GroupSchema] = {}
        self.topics_not_learned = 0  # deliveries of topics beyond MAX_GROUPS
        self.first_not_learned: str | None = None  # the first of those topics (not stored)
        self.template_digests: set[bytes] = set()
        self.new_template_digests: list[bytes] = []
        self._batching = False
        self._run: _Run | None = None  # repeats counted together, not merged yet (in a batch)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Within the block, consecutive samples of the same repeated shape are counted together:
        one merge for the run instead of one per sample. Everything is settled when it ends."""
        self._batching = True
        try:
            yield
        finally:
            self._batching = False
            self._flush()

    def _flush(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            repeat = run.repeat
            drift.shown_again(run.group, repeat.shown, run.source, run.times)
            run.group.count_repeat(repeat.seen, run.source, run.times)
            for (stats, _), key in zip(repeat.slots, repeat.values, strict=True):
                counted = stats.values
                if counted is not None and key is not None:
                    counted[key] = counted.get(key, 0) + run.times

    def group(self, key: GroupKey) -> GroupSchema | None:
        found = self.groups.get(key)
        if found is None:
            if from_the_wire(key) and sum(map(from_the_wire, self.groups)) >= MAX_GROUPS:
                return None
            found = self.groups[key] = GroupSchema(key)
        return found

    def learn(self, delivery: Delivery) -> list[Finding]:
        """Learn from one delivery; returns the drift it showed first. A delivery that is not
        verified teaches nothing (and shows no drift)."""
        if delivery.verdict != VERIFIED:
            return []
        group = self.group(GroupKey.of_topic(delivery.topic))
        if group is None:
            self.topics_not_learned += 1
            self.first_not_learned = self.first_not_learned or delivery.topic
            return []
        source = Source(delivery.seen_at_ms, delivery.webhook_id, delivery.attempt_id)
        return self._sample(group, delivery.body, source)

    def skip(self, topic: str | None) -> GroupKey | None:
        """Count a verified delivery of ``topic`` that could not be learned; its group's key
        (None: a topic beyond MAX_GROUPS, counted as not learned)."""
        group = self.group(GroupKey.of_topic(topic))
        if group is None:
            self.topics_not_learned += 1
            self.first_not_learned = self.first_not_learned or topic
            return None
        group.skipped += 1
        group.changed = True
        return group.key

    def learn_attempt(self, attempt: Attempt) -> list[Finding]:
        return self.learn(Delivery.from_attempt(attempt))

    def learn_templates(self, templates: Iterable[Any], seen_at_ms: int) -> list[Finding]:
        """Learn from the template objects of ``GET passTemplates`` (each one a sample); a
        template seen before, byte for byte, teaches nothing again."""
        group = self.group(TEMPLATES)
        assert group is not None
        found: list[Finding] = []
        for template in templates:
            body = template_body(template)
            if body is None:
                continue
            mark = hashlib.blake2b(body, digest_size=16).digest()
            if mark in self.template_digests:
                continue
            if len(self.template_digests) < MAX_TEMPLATE_DIGESTS:
                self.template_digests.add(mark)
                self.new_template_digests.append(mark)
            found += self._sample(group, body, Source(seen_at_ms))
        return found

    def _sample(self, group: GroupSchema, body: bytes, source: Source) -> list[Finding]:
        doc = UNPARSED if self.scan_all else parse_small(body)
        shape = None
        sample = Sample(group)
        if doc is UNPARSED:
            self._flush()
            obs = observe(body, group)
            if obs is None:
                group.not_json += 1
                group.changed = True
                return []
            sample.take_observation(obs)
        else:
            # Each warm-up sample is walked: the one that ends it says what they disagreed on.
            shape = self._shape(group, doc) if group.samples >= drift.DRIFT_AFTER else None
            repeat = group.repeat
            if (
                shape is not None
                and repeat is not None
                and repeat.epoch == group.epoch
                and repeat.shape == shape
                and slot_values(doc, repeat.slots) == repeat.values
            ):
                # The shape of the last sample, learned while the paths stayed as they are: it
                # shows what that one showed, and no drift of its own (every path, type and
                # absence in it is known now), so it is counted without another walk.
                group.shape_hits += 1
                run = self._run
                if run is not None and run.group is group and run.repeat is repeat:
                    run.times += 1
                    run.source = source
                else:
                    self._flush()
                    self._run = _Run(group, repeat, source)
                if not self._batching:
                    self._flush()
                return []
            self._flush()
            sample.take_doc(doc)
        shown: list[Finding] = []
        epoch = group.epoch
        found = drift.take(sample, source, shown)
        # Remembered only when learning it changed no path: a body whose own paths were new (or
        # folded into a map) would be seen another way now that they are learned.
        remember = shape is not None and group.epoch == epoch
        group.repeat = None
        if remember:
            slots = value_slots(group, doc)
            values = slot_values(doc, slots)
            if values is not None:
                group.repeat = Repeat(shape, sample.counts(), shown, epoch, slots, values)
        if group.epoch != epoch:  # a map folded: what was found about its keys is no drift
            found = [f for f in found if group.findings.get(f.key) is f]
        return found

    def _shape(self, group: GroupSchema, doc: Any) -> Shape | None:
        """The document's shape, to be compared with the last one learned; None when shapes are
        not remembered, or were not worth it lately for this group (varied bodies: the shape
        costs a walk of its own, and seldom matches), then tried again."""
        if not self.remember_shapes:
            return None
        if group.shape_pause:
            group.shape_pause -= 1
            return None
        group.shape_tries += 1
        if group.shape_tries >= SHAPE_TRIES:
            if group.shape_hits * SHAPE_HIT_SHARE < group.shape_tries:
                group.shape_pause = SHAPE_PAUSE
            group.shape_tries = group.shape_hits = 0
        return shape_of(doc)
