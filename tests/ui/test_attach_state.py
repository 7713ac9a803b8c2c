"""What an attached dashboard says about the receiver it follows: the relay link's state, the
forwards waiting for the user's app, forwards answered. The receiver is a real runtime in this
process (its own home, port, control socket); the dashboard attaches to it as to any other."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
from ui_helpers import wait_for

from walletpass_tui.config import Settings
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.attached import AttachedRuntime
from walletpass_tui.runtime.local import DeliveryRuntime, Feed
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.forward import Route
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_3"}}'
DEADLINE_S = 60.0


@contextlib.asynccontextmanager
async def receiving(
    home: Path, *, routes: tuple[Route, ...] = (), feeds: tuple[Feed, ...] = ()
) -> AsyncIterator[DeliveryRuntime]:
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    setup = DeliverySetup(options=options, routes=routes)
    async with DeliveryRuntime(Settings(home=home), setup, feeds=feeds) as runtime:
        await runtime.start_instance("listen")
        await runtime.serve()
        yield runtime


@contextlib.asynccontextmanager
async def attached(home: Path) -> AsyncIterator[WalletPassApp]:
    found = instance.find(home)
    assert isinstance(found, instance.Running) and found.record is not None
    async with AttachedRuntime(Settings(home=home), found.record) as runtime:
        app = build_app(runtime)
        async with app.run_test(size=(160, 36)):
            await wait_for(
                lambda: isinstance(app.screen, MainScreen) and app.screen.assembled,
                timeout=DEADLINE_S,
            )
            yield app


def header(app: WalletPassApp) -> str:
    return str(app.screen.query_one(StatusBar).render())


async def post(url: str, msg_id: str) -> int:
    headers = {**sign(SECRET, msg_id, BODY, datetime.now(UTC)), "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        return (await http.post(url, content=BODY, headers=headers)).status_code


async def test_forwards_waiting_and_forwards_answered_are_shown(
    tmp_path: Path, start_server: object
) -> None:
    target = await start_server()  # type: ignore[operator]
    target.answer("POST", "/hook", status=503)  # the user's app is down for now
    route = Route(target=f"{target.url}/hook")
    answered: list[tuple[str | None, int | None]] = []
    async with (
        receiving(tmp_path / "home", routes=(route,)) as runtime,
        attached(tmp_path / "home") as app,
    ):
        assert runtime.url is not None
        app.runtime.subscribe(
            forwards=lambda row, result: answered.append((row.webhook_id, result.status))
        )
        assert await post(runtime.url, "msg_fwd") == 200
        await wait_for(lambda: ("msg_fwd", 503) in answered, timeout=DEADLINE_S)
        await wait_for(lambda: "⇢ 1 to forward" in header(app), timeout=DEADLINE_S)


async def test_the_relay_links_state_is_shown(tmp_path: Path) -> None:
    from walletpass_tui.relay.local import local_relay

    async with (
        local_relay(tmp_path / "relay") as relay,
        receiving(tmp_path / "home", feeds=(relay.link,)),
    ):
        found = instance.find(tmp_path / "home")
        assert isinstance(found, instance.Running) and found.record is not None
        assert found.record.relay == relay.subscribe_url
        async with attached(tmp_path / "home") as app:
            await wait_for(lambda: "⇄ relay up to date" in header(app), timeout=DEADLINE_S)
