"""The "Check my app" screen in the real dashboard: opened by its key and from the palette, your
app's URL from --forward-to, the endpoint's secret by default, cases filling in, Enter opening what
was sent, and your app's answers shown literally."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from rich.text import Text
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from textual.widgets import DataTable, Input, Select, Static
from ui_helpers import ENDPOINT_ID, SECRET, wait_for

from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.screens.check import CheckScreen
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.forward import Route
from walletpass_tui.webhooks.models import CHECK, CHECK_HEADER, LogFilter
from walletpass_tui.webhooks.store import Store

HOSTILE = "[bold red]pwned[/] \x1b[2J\u202e"


def correct_app(answer: str = "ok") -> Callable[[web.Request], Any]:
    hook = Webhook(SECRET)

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        try:
            hook.verify(body, {k.lower(): v for k, v in request.headers.items()})
        except (WebhookVerificationError, ValueError):
            return web.Response(status=401, text=answer)
        return web.Response(status=200, text=answer)

    return handle


@pytest.fixture
async def your_app(start_server: Any) -> Any:
    server = await start_server()
    server.reply("POST", "/webhooks", correct_app(HOSTILE))
    return server


@pytest.fixture
async def forwarding_app(
    settings: Settings, store: Store, registry: EndpointRegistry, your_app: Any
) -> AsyncIterator[WalletPassApp]:
    """The dashboard as ``walletpass-tui --forward-to <your app>`` opens it, one endpoint known."""
    registry.import_endpoint(
        ENDPOINT_ID, "https://hooks.example/webhooks", ["pass.activated"], SECRET
    )
    setup = DeliverySetup(routes=(Route(your_app.url + "/webhooks"),))
    async with DeliveryRuntime(settings, setup, store=store, registry=registry) as runtime:
        yield build_app(runtime, receiver_display="127.0.0.1:8787/webhooks")


async def test_the_key_opens_it_prefilled_and_a_run_fills_every_case(
    forwarding_app: WalletPassApp, your_app: Any, store: Store
) -> None:
    app = forwarding_app
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, CheckScreen))
        screen = app.screen
        assert isinstance(screen, CheckScreen)
        assert screen.query_one("#check-target", Input).value == your_app.url + "/webhooks"
        assert screen.query_one("#check-endpoint", Select).value == ENDPOINT_ID

        before = await store.count(LogFilter(source=CHECK))
        await pilot.press("ctrl+r")
        await wait_for(lambda: not screen.running and len(screen.results) == 14, timeout=30)

        table = screen.query_one("#check-table", DataTable)
        assert table.row_count == 14  # one topic (the endpoint's): 14 cases
        verdicts = [str(table.get_cell(c.id, "verdict")) for c in screen.cases]
        assert all(v == "✓ pass" for v in verdicts), verdicts
        summary = screen.query_one("#check-summary", Static).content
        assert isinstance(summary, Text) and "every must-pass case passed" in summary.plain
        assert len(your_app.requests_to("POST", "/webhooks")) == 14
        # Your app is not this home's receiver: it is never sent the check token.
        assert not any(CHECK_HEADER in r.headers for r in your_app.requests_to("POST", "/webhooks"))
        await store.settled()
        # In the history, like replays, but not deliveries: the header does not count them.
        assert await store.count(LogFilter(source=CHECK)) == before + 14
        assert (await store.stats()).received == 0
        await pilot.pause()
        assert app.stats.received == 0

        # Enter on the first case opens exactly what was sent.
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        assert detail.attempt_id == screen.results[screen.cases[0].id].attempt_id
        await pilot.press("escape")
        await wait_for(lambda: app.screen is screen)


async def test_a_check_of_this_homes_own_receiver_carries_the_check_token(
    forwarding_app: WalletPassApp, your_app: Any, store: Store, registry: EndpointRegistry
) -> None:
    """The token (asked for the target, off the UI's thread) goes with every case, so the home's
    receiver keeps its copies as the check's: tests/runtime/test_own_receiver.py says which
    target gets it."""
    asked: list[str] = []

    def token_for(url: str) -> str | None:
        asked.append(url)
        return "c" * 32

    app = forwarding_app
    target = your_app.url + "/webhooks"
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = CheckScreen(store, registry, target=target, token_for=token_for)
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.press("ctrl+r")
        await wait_for(lambda: not screen.running and len(screen.results) == 14, timeout=30)
    sent = your_app.requests_to("POST", "/webhooks")
    assert asked == [target] and len(sent) == 14
    assert all(r.headers.getall(CHECK_HEADER) == ["c" * 32] for r in sent)


async def test_the_palette_opens_it(forwarding_app: WalletPassApp) -> None:
    app = forwarding_app
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Check my app")
        await pilot.pause(0.2)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, CheckScreen))


async def test_your_apps_answer_is_shown_literally_never_as_markup(
    forwarding_app: WalletPassApp,
) -> None:
    app = forwarding_app
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, CheckScreen))
        screen = app.screen
        assert isinstance(screen, CheckScreen)
        await pilot.press("ctrl+r")
        await wait_for(lambda: screen.cases[0].id in screen.results, timeout=30)
        screen.query_one("#check-table", DataTable).move_cursor(row=0)
        await pilot.pause()
        shown = screen.query_one("#check-answer", Static).content
        assert isinstance(shown, Text)
        assert "[bold red]pwned[/]" in shown.plain  # the brackets as typed, no style applied
        assert "\x1b" not in shown.plain and "\\x1b[2J" in shown.plain
        assert "\u202e" not in shown.plain
        await wait_for(lambda: not screen.running, timeout=30)


async def test_a_bad_url_or_secret_is_refused_in_the_form(
    make_app: Callable[..., WalletPassApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, CheckScreen))
        screen = app.screen
        assert isinstance(screen, CheckScreen)
        problem = screen.query_one("#check-problem", Static)
        target = screen.query_one("#check-target", Input)
        target.value = "localhost:3000"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "must start with http:// or https://" in str(problem.content)
        target.value = "http://127.0.0.1:9/webhooks"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "paste the secret" in str(problem.content)  # no endpoint known, none pasted
        screen.query_one("#check-secret", Input).value = "whsec_!!"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "not valid base64" in str(problem.content)
        assert not screen.running and screen.results == {}


async def test_leaving_mid_run_stops_the_check_and_the_dashboard_goes_on(
    settings: Settings, store: Store, registry: EndpointRegistry, start_server: Any
) -> None:
    hanging = await start_server()
    calls = 0

    async def never_answers(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        await request.read()
        await asyncio.sleep(60)
        return web.Response(status=200)

    hanging.reply("POST", "/webhooks", never_answers)
    registry.import_endpoint(
        ENDPOINT_ID, "https://hooks.example/webhooks", ["pass.activated"], SECRET
    )
    setup = DeliverySetup(routes=(Route(hanging.url + "/webhooks"),))
    async with DeliveryRuntime(settings, setup, store=store, registry=registry) as runtime:
        app = build_app(runtime, receiver_display="127.0.0.1:8787/webhooks")
        async with app.run_test(size=(140, 44)) as pilot:
            await pilot.pause()
            await pilot.press("c")
            await wait_for(lambda: isinstance(app.screen, CheckScreen))
            screen = app.screen
            assert isinstance(screen, CheckScreen)
            await pilot.press("ctrl+r")
            await wait_for(lambda: calls == 1, timeout=10)
            await pilot.press("escape")
            await wait_for(lambda: not isinstance(app.screen, CheckScreen))
            await wait_for(lambda: not screen.running)
            assert screen.results == {}  # nothing finished, nothing more sent
            assert calls == 1


async def test_a_target_that_refuses_stops_the_run_at_once(
    settings: Settings, store: Store, registry: EndpointRegistry
) -> None:
    """Nothing listens at the app's URL: one case is tried, the others say they were not sent,
    and the summary says what to do."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/webhooks"
    registry.import_endpoint(
        ENDPOINT_ID, "https://hooks.example/webhooks", ["pass.activated"], SECRET
    )
    setup = DeliverySetup(routes=(Route(closed),))
    async with DeliveryRuntime(settings, setup, store=store, registry=registry) as runtime:
        app = build_app(runtime, receiver_display="127.0.0.1:8787/webhooks")
        async with app.run_test(size=(140, 44)) as pilot:
            await pilot.pause()
            await pilot.press("c")
            await wait_for(lambda: isinstance(app.screen, CheckScreen))
            screen = app.screen
            assert isinstance(screen, CheckScreen)
            await pilot.press("ctrl+r")
            await wait_for(lambda: not screen.running and len(screen.results) == 1, timeout=30)
            await pilot.pause()
            table = screen.query_one("#check-table", DataTable)
            got = [str(table.get_cell(c.id, "got")) for c in screen.cases]
            assert got[0] == "no answer" and set(got[1:]) == {"not sent"}
            summary = screen.query_one("#check-summary", Static).content
            assert isinstance(summary, Text)
            assert summary.plain == (
                "Nothing answered (connection refused (is your app running?)). Start your app "
                "and run it again."
            )
