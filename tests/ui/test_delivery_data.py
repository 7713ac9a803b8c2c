"""What the detail loads for one delivery: its own body once, its message's other attempts
without theirs, however large the bodies are."""

from __future__ import annotations

import json

from ui_helpers import attempt, record_all

from walletpass_tui.ui.panes.delivery_data import load_delivery
from walletpass_tui.webhooks.store import Store


async def test_a_retried_megabyte_body_is_read_once_not_once_per_attempt(store: Store) -> None:
    blob = "x" * (1024 * 1024 - 4096)
    body = json.dumps({"type": "pass.activated", "data": {"passId": "p", "blob": blob}}).encode()
    tries = [attempt(n, webhook_id="msg_big", body=body, status=500) for n in (1, 2, 3)]
    stored = await record_all(store, tries, one_by_one=True)
    shown = stored[1]
    data = await load_delivery(store, shown.id)
    assert data is not None
    assert data.attempt.body == body  # the body on screen, byte for byte
    assert [a.id for a in data.attempts] == [a.id for a in stored]  # every try, oldest first
    assert [a.attempt_no for a in data.attempts] == [1, 2, 3]
    # Bytes of bodies loaded: the shown attempt's only, not three megabytes.
    assert sum(len(a.body) for a in data.attempts) == len(body)
    others = [a for a in data.attempts if a.id != shown.id]
    assert all(a.body == b"" and a.body_size == len(body) for a in others)
    assert all(a.status == 500 and a.webhook_id == "msg_big" for a in data.attempts)


async def test_the_attempt_list_without_bodies_keeps_everything_else(store: Store) -> None:
    stored = await record_all(
        store, [attempt(n, webhook_id="msg_a") for n in (1, 2)], one_by_one=True
    )
    full = await store.message_attempts("msg_a")
    brief = await store.message_attempts_without_bodies("msg_a")
    assert [a.body for a in full] == [a.body for a in stored]
    assert [a.body for a in brief] == [b"", b""]
    assert [a.body_size for a in brief] == [len(a.body) for a in stored]
    assert [a.headers for a in brief] == [a.headers for a in full]
    assert [(a.id, a.verdict, a.status, a.topic, a.pass_id) for a in brief] == [
        (a.id, a.verdict, a.status, a.topic, a.pass_id) for a in full
    ]
