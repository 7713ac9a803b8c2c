"""The dashboard started with ``--header`` and ``--ca-bundle`` for an https app with its
own CA: its replay form and its "Check my app" screen, sent to that --forward-to target, carry the
same headers and trust the same CA as its forwards; to another URL, neither. A real app on
127.0.0.1 records what it received (tests/user_app.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from peers import LocalCA, local_ca_fixture  # noqa: F401  (the "local_ca" fixture)
from textual.widgets import Input
from ui_helpers import ENDPOINT_ID, SECRET, SIZE, body_for, sender_for, wait_for
from user_app import UserApp, user_app_fixture  # noqa: F401  (the "user_app" fixture)

from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.screens.check import CheckScreen
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.replay import ReplayScreen
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.forward import parse_route
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.target_options import TargetOptions, read_ca_bundle

TOKEN = "Bearer app-token-5f2c9e0b7d41a8c3"
StartApp = Callable[..., UserApp]


@pytest.fixture
def https_app(user_app: StartApp, local_ca: LocalCA) -> UserApp:
    return user_app(tls=local_ca.leaf.server_context())


@pytest.fixture
async def dashboard(
    settings: Settings,
    store: Store,
    registry: EndpointRegistry,
    https_app: UserApp,
    local_ca: LocalCA,
) -> AsyncIterator[tuple[WalletPassApp, DeliveryRuntime]]:
    """As ``walletpass-tui --forward-to <https app> --header 'Authorization: ...'
    --ca-bundle ca.pem`` opens it, one endpoint known."""
    registry.import_endpoint(
        ENDPOINT_ID, "https://hooks.example/webhooks", ["pass.activated"], SECRET
    )
    options = TargetOptions(
        headers=(("Authorization", TOKEN),), trust=read_ca_bundle(str(local_ca.ca))
    )
    setup = DeliverySetup(
        options=ReceiverOptions(host="127.0.0.1", port=0),
        routes=(parse_route(https_app.url, options),),
    )
    async with DeliveryRuntime(settings, setup, store=store, registry=registry) as runtime:
        yield build_app(runtime, receiver_display=None), runtime


async def test_a_replay_to_the_forward_target_carries_its_headers_and_trusts_its_ca(
    dashboard: tuple[WalletPassApp, DeliveryRuntime],
    https_app: UserApp,
    user_app: StartApp,
    http: httpx.AsyncClient,
) -> None:
    app, runtime = dashboard
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: runtime.serving)
        sent = await sender_for(runtime, http).post(
            body_for("pass.activated", "pass_0007"), msg_id="msg_dash"
        )
        assert sent.status_code == 200
        await wait_for(lambda: len(https_app.seen) == 1, timeout=30)  # the forward itself
        await wait_for(lambda: app.stats.received == 1)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        await pilot.press("R")
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))
        form = app.screen
        assert form.query_one("#replay-target", Input).value == https_app.url
        await pilot.press("ctrl+s")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        await wait_for(lambda: len(https_app.seen) == 2, timeout=30)
        for seen in https_app.seen:  # the forward, then the replay
            assert seen.values("Authorization") == [TOKEN]
            assert seen.values("webhook-id") == ["msg_dash"]

        # Another URL gets neither the headers nor the CA: they were given for the target.
        other = user_app()
        await pilot.press("R")
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))
        app.screen.query_one("#replay-target", Input).value = other.url
        await pilot.press("ctrl+s")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        await wait_for(lambda: len(other.seen) == 1, timeout=30)
        assert other.seen[0].values("Authorization") == []


async def test_the_check_screen_against_the_forward_target_carries_its_headers_and_ca(
    dashboard: tuple[WalletPassApp, DeliveryRuntime], https_app: UserApp
) -> None:
    app, _ = dashboard
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, CheckScreen))
        screen = app.screen
        assert isinstance(screen, CheckScreen)
        assert screen.query_one("#check-target", Input).value == https_app.url
        await pilot.press("ctrl+r")
        await wait_for(lambda: not screen.running and len(screen.results) == 14, timeout=60)
        assert {r.answer.error for r in screen.results.values()} == {None}
        assert len(https_app.seen) == 14
        assert all(seen.values("Authorization") == [TOKEN] for seen in https_app.seen)
