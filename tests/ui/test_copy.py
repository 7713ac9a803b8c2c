"""Copy what you see: the selected delivery as a curl command (the same safe form as ``events
export --format curl``), its body and its headers, from the log and from the detail, each said in
a notification with its size; the curl command, run, sends the same bytes and headers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.webhooks.export import to_curl
from walletpass_tui.webhooks.store import Store

# A body with an escape sequence and a non-ASCII letter: the curl command carries it as base64.
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_0001", "note": "caf\xc3\xa9 \x1b[2J"}}'


def notes(app: WalletPassApp) -> list[str]:
    return [n.message for n in app._notifications]


async def copied(app: WalletPassApp, pilot: Any, key: str) -> str:
    app._clipboard = ""
    await pilot.press(key)
    await wait_for(lambda: bool(app.clipboard))
    return app.clipboard


async def test_copy_keys_put_curl_body_and_headers_on_the_clipboard(
    make_app: Callable[..., WalletPassApp], store: Store, start_server: Any
) -> None:
    (stored,) = await record_all(store, [replace(attempt(1), body=BODY)])
    stored = await store.attempt(stored.id)
    assert stored is not None
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 1)
        assert app.context is not None
        url = app.context.settings.receiver_url()

        curl = await copied(app, pilot, "x")
        assert curl == to_curl(stored, url)
        assert "\x1b" not in curl  # printed or pasted, it cannot run escape sequences
        assert any("curl command" in n and "msg_000001" in n and " B)" in n for n in notes(app))

        assert await copied(app, pilot, "y") == BODY.decode()
        assert any(n.startswith("Copied the body of msg_000001") for n in notes(app))
        headers = await copied(app, pilot, "Y")
        assert headers.splitlines() == [f"{k}: {v}" for k, v in stored.headers]
        assert any("the 4 headers of msg_000001" in n for n in notes(app))

        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await wait_for(lambda: screen.detail.data is not None)
        assert await copied(app, pilot, "x") == curl
        assert await copied(app, pilot, "y") == BODY.decode()

    # The command, run by a shell, sends exactly the stored bytes and headers.
    server = await start_server()
    command = to_curl(stored, server.url + "/webhooks")
    process = await asyncio.create_subprocess_shell(
        command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err
    (request,) = server.requests_to("POST", "/webhooks")
    assert request.body == BODY
    assert request.headers["webhook-id"] == "msg_000001"


async def test_copy_from_the_palette(make_app: Callable[..., WalletPassApp], store: Store) -> None:
    await record_all(store, [attempt(1)])
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 1)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"as curl")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(lambda: app.clipboard.startswith("curl -sS -X POST"))
