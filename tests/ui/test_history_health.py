"""A history that cannot be written is said in the dashboard's header, not left to a run of 503s."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator

import factories
import pytest
from ui_helpers import plain, wait_for

from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.ui.app import build_app
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import Attempt, StoreError
from walletpass_tui.webhooks.store import Store

SIZE = (160, 30)


def attempt(webhook_id: str) -> Attempt:
    body = b'{"type": "pass.activated"}'
    return factories.attempt(webhook_id, body, headers=(("webhook-id", webhook_id),))


@pytest.fixture
async def quick_store(settings: Settings) -> AsyncIterator[Store]:
    """A store that gives up on a lock at once, so the test sees the failure quickly."""
    opened = await Store.open(settings.database_path, busy_timeout_ms=50)
    yield opened
    await opened.close()


async def test_a_failed_write_shows_in_the_header_until_a_write_succeeds(
    settings: Settings, registry: EndpointRegistry, quick_store: Store
) -> None:
    async with DeliveryRuntime(settings, store=quick_store, registry=registry) as runtime:
        app = build_app(runtime, receiver_display="127.0.0.1:8787/webhooks")
        async with app.run_test(size=SIZE):
            header = app.screen.query_one(StatusBar)

            def header_text() -> str:
                return plain(header.render(), SIZE[0])

            await wait_for(lambda: "walletpass-tui" in header_text())
            assert "history not saved" not in header_text()

            with contextlib.closing(
                sqlite3.connect(quick_store.path, isolation_level=None)
            ) as other:
                other.execute("BEGIN EXCLUSIVE")  # another program holds the file
                with pytest.raises(StoreError, match="locked by another program"):
                    await quick_store.record(attempt("msg_blocked"))
                other.execute("ROLLBACK")

            await wait_for(lambda: "history not saved" in header_text())
            assert "locked by another program" in header_text()

            await quick_store.record(attempt("msg_after"))
            await wait_for(lambda: "history not saved" not in header_text())
