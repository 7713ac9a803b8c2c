"""What the field query tests share: a history with chosen bodies, indexed (or not) for fields."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import factories

from walletpass_tui.query.filters import parse_filter
from walletpass_tui.query.index import Fields
from walletpass_tui.webhooks.models import LogFilter
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.reading import History


def body(doc: Any) -> bytes:
    return json.dumps(doc).encode()


async def record(store: Store, bodies: Sequence[bytes | Any], **fields: Any) -> list[int]:
    """Store one verified delivery per body (``msg_<n>``, n from 1; the topic its ``type``); their
    row ids."""
    ids = []
    for n, doc in enumerate(bodies, 1):
        raw = doc if isinstance(doc, bytes) else body(doc)
        topic = doc.get("type") if isinstance(doc, dict) else None
        await store.record(factories.attempt(f"msg_{n}", raw, topic=topic, **fields))
        ids.append(await store.last_id())
    await store.settled()
    return ids


def index_all(history: Path) -> int:
    """Index every stored row for fields now (what the runtime's indexer does after commits)."""
    fields = Fields(history)
    fields.open()
    try:
        total = 0
        while step := fields.step():
            if not step.rows:
                return total
            total += step.rows
        return total
    finally:
        fields.close()


def flt(text: str) -> LogFilter:
    found, parsed = parse_filter(text)
    assert not parsed.problems and not parsed.unfinished, parsed
    return found


async def ids_of(history: History, text: str) -> list[str]:
    """The webhook-ids the log shows for ``text``, newest first (checked against the count)."""
    rows = await history.log_page(flt(text), limit=1000)
    assert await history.count(flt(text)) == len(rows), text
    return [r.webhook_id or "" for r in rows]
