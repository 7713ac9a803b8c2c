"""The dashboard's import form never replaces a secret already stored (the same rule as
``endpoints import``): an id already known is refused with a sentence saying how to overwrite."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Input
from ui_helpers import SIZE, type_into, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.screens.import_endpoint import ImportEndpointScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

FIRST = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SECOND = "whsec_C2FtcGxlIHNlY3JldCBmb3IgdGVzdGluZyE="


async def test_the_import_form_refuses_an_id_already_known(
    make_app: Callable[..., WalletPassApp], registry: EndpointRegistry
) -> None:
    registry.import_endpoint("ep_known", "https://a.example/wh", ["pass.activated"], FIRST)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        await pilot.press("i")
        await wait_for(lambda: isinstance(app.screen, ImportEndpointScreen))
        form = app.screen
        await type_into(pilot, form.query_one("#import-id", Input), "ep_known")
        await type_into(pilot, form.query_one("#import-url", Input), "https://b.example/wh")
        form.query_one("#import-secret", Input).value = SECOND
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, ImportEndpointScreen), "the form stays open"
        problem = str(form.query_one("#import-problem").render())
        assert "already known" in problem and "--replace" in problem
        assert SECOND not in problem and FIRST not in problem
    [kept] = registry.load()
    assert (kept.url, kept.secret.reveal()) == ("https://a.example/wh", FIRST)
