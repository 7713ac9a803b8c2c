"""What the detail loads for one delivery: its own body once, its message's other attempts
without theirs, however large the bodies are."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.delivery_data import load_delivery
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.webhooks.models import Attempt
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


async def test_a_large_body_arriving_is_shown_without_reading_it_back(
    make_app: Callable[..., WalletPassApp], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The followed detail takes a large body from ``LiveRows`` (prepared as it arrived), not
    from the history: counted reads of whole attempts, and the same picture."""
    read: list[int] = []
    whole = store.attempt

    async def counting(attempt_id: int) -> Attempt | None:
        read.append(attempt_id)
        return await whole(attempt_id)

    monkeypatch.setattr(store, "attempt", counting)
    await record_all(store, [attempt(1)])
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await wait_for(lambda: main.detail.webhook_id == "msg_000001")
        blob = "y" * (512 * 1024)
        body = json.dumps({"type": "pass.activated", "data": {"passId": "big", "b": blob}})
        (big,) = await record_all(store, [attempt(2, body=body.encode())])
        await wait_for(lambda: main.detail.webhook_id == "msg_000002", timeout=10)
        await pilot.pause()
        data = main.detail.data
        assert data is not None and data.attempt.body == body.encode()
        assert data.attempt.id == big.id and data.attempt.body_size == len(body)
        assert '"passId": "big"' in str(main.detail.query_one("#detail-body").render())
        assert big.id not in read  # its row was read without the body; the body not read back
