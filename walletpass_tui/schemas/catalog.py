"""Every group learned, in memory, and the only two ways to teach it: a delivery (which teaches
only when its verdict is verified) and the pass templates the service listed.

Pure: no file, no thread. ``book.py`` keeps a catalog in step with the schema file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from walletpass_tui.schemas import drift
from walletpass_tui.schemas.learn import observe, template_body
from walletpass_tui.schemas.model import TEMPLATES, Finding, GroupKey, GroupSchema, Source
from walletpass_tui.webhooks.models import VERIFIED

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt

MAX_GROUPS = 100  # topics learned; deliveries of further topics are counted, not learned
MAX_TEMPLATE_DIGESTS = 10_000  # templates remembered, so listing them again teaches nothing new


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


class Catalog:
    def __init__(self) -> None:
        self.groups: dict[GroupKey, GroupSchema] = {}
        self.topics_not_learned = 0  # deliveries of topics beyond MAX_GROUPS
        self.template_digests: set[bytes] = set()
        self.new_template_digests: list[bytes] = []

    def group(self, key: GroupKey) -> GroupSchema | None:
        found = self.groups.get(key)
        if found is None:
            topics = sum(1 for k in self.groups if not k.templates)
            if not key.templates and topics >= MAX_GROUPS:
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
            return []
        source = Source(delivery.seen_at_ms, delivery.webhook_id, delivery.attempt_id)
        return self._sample(group, delivery.body, source)

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
        obs = observe(body, group)
        if obs is None:
            group.not_json += 1
            group.changed = True
            return []
        changes = drift.detect(group, obs)
        found = drift.record(group, changes, obs, source)
        group.merge(list(obs.paths.values()), source)
        group.add_untracked(obs.untracked, obs.untracked_more)
        return found
