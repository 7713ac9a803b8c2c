"""The Endpoints pane and its forms: create at a stand-in service, see the secret once, import."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from typing import Any

from textual.widgets import Checkbox, Input, Switch
from ui_helpers import ENDPOINTS_PATH, SIZE, type_into, wait_for

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.endpoints import EndpointsPane
from walletpass_tui.ui.screens.create_endpoint import CreateEndpointScreen
from walletpass_tui.ui.screens.endpoint_secret import EndpointSecretScreen
from walletpass_tui.ui.screens.import_endpoint import ImportEndpointScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.widgets.notice import Notice
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

NEW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def created_answer(url: str, topics: list[str], enabled: bool) -> dict[str, Any]:
    return {
        "id": "ep_2Hk9sLq",
        "secret": NEW_SECRET,
        "url": url,
        "enabledTopics": topics,
        "enabled": enabled,
        "createdAt": "2026-11-23T14:02:11.204Z",
    }


async def main_screen(app: WalletPassApp) -> MainScreen:
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    assert isinstance(app.screen, MainScreen)
    return app.screen


async def test_create_an_endpoint_end_to_end_and_see_its_secret_once(
    make_app: Callable[..., WalletPassApp],
    service: Any,
    service_client: WalletPassClient,
    registry: EndpointRegistry,
) -> None:
    service.answer(
        "POST",
        ENDPOINTS_PATH,
        json=created_answer("https://hooks.example/wp", ["pass.deactivated"], False),
    )
    app = make_app(client=service_client, settings=service_client.settings)
    async with app.run_test(size=SIZE) as pilot:
        main = await main_screen(app)
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, CreateEndpointScreen))
        form = app.screen
        problem = form.query_one("#url-problem")
        url = form.query_one("#endpoint-url", Input)

        # Validated as typed: http is refused (allow_http is off), a host is required.
        await pilot.press(*"http:")
        assert "must start with https://" in str(problem.render())
        await type_into(pilot, url, "https://")
        assert "must name a host" in str(problem.render())
        await type_into(pilot, url, "https://hooks.example/wp")
        assert "looks right" in str(problem.render())

        form.query_one("#topic-pass-activated", Checkbox).value = False
        form.query_one("#endpoint-enabled", Switch).value = False
        await pilot.press("ctrl+s")
        await wait_for(lambda: isinstance(app.screen, EndpointSecretScreen))

        # The request carried exactly what the form said.
        sent = service.requests_to("POST", ENDPOINTS_PATH)
        assert len(sent) == 1
        assert sent[0].json() == {
            "enabledTopics": ["pass.deactivated"],
            "enabled": False,
            "url": "https://hooks.example/wp",
        }
        # Stored before the secret is shown, in a file only the user can read.
        path = registry.path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        stored = json.loads(path.read_text())["endpoints"]
        assert [(e["id"], e["secret"]) for e in stored] == [("ep_2Hk9sLq", NEW_SECRET)]

        modal = app.screen
        assert NEW_SECRET in str(modal.query_one("#secret-value").render())
        warning = str(modal.query_one("#secret-warning").render())
        assert "shown only now" in warning and "will not show it again" in warning
        assert str(path) in warning
        await pilot.press("c")
        assert app.clipboard == NEW_SECRET
        await pilot.press("escape")
        assert app.screen is main

        # Listed with the secret masked; the secret appears nowhere on the main screen again.
        table = main.endpoints.query_one("#endpoints-table")
        row = [str(cell) for cell in table.get_row_at(0)]  # type: ignore[attr-defined]
        assert row == [
            "ep_2Hk9sLq\n○ off",
            "https://hooks.example/wp\ndeactivated · whsec_…LaSw · 2026-11-23 14:02",
        ]
        assert str(main.endpoints.border_title) == "Endpoints 1"


async def test_a_failed_create_keeps_the_form_open_with_the_services_answer(
    make_app: Callable[..., WalletPassApp],
    service: Any,
    service_client: WalletPassClient,
    registry: EndpointRegistry,
) -> None:
    service.answer("POST", ENDPOINTS_PATH, status=422, json={"error": "url is not reachable"})
    app = make_app(client=service_client, settings=service_client.settings)
    async with app.run_test(size=SIZE) as pilot:
        await main_screen(app)
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, CreateEndpointScreen))
        form = app.screen
        await type_into(pilot, form.query_one("#endpoint-url", Input), "https://hooks.example/wp")
        await pilot.press("enter")
        notice = form.query_one("#create-notice", Notice)
        await wait_for(lambda: notice.notice is not None)
        text = str(notice.render())
        assert "422" in text and "url is not reachable" in text
        assert isinstance(app.screen, CreateEndpointScreen)
        assert registry.load() == []
        assert len(service.requests_to("POST", ENDPOINTS_PATH)) == 1  # a POST is never retried
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_without_a_key_the_form_says_what_to_set_and_sends_nothing(
    make_app: Callable[..., WalletPassApp],
) -> None:
    app = make_app(client=None)
    async with app.run_test(size=SIZE) as pilot:
        await main_screen(app)
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, CreateEndpointScreen))
        text = str(app.screen.query_one("#create-notice", Notice).render())
        assert "WALLETPASS_API_KEY" in text and "WALLETPASS_REGISTRATION_URL" in text
        await type_into(pilot, app.screen.query_one("#endpoint-url", Input), "https://h.example")
        await pilot.press("enter")
        assert isinstance(app.screen, CreateEndpointScreen)


async def test_import_an_endpoint_created_elsewhere(
    make_app: Callable[..., WalletPassApp], registry: EndpointRegistry
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main = await main_screen(app)
        await pilot.press("i")
        await wait_for(lambda: isinstance(app.screen, ImportEndpointScreen))
        form = app.screen
        await type_into(pilot, form.query_one("#import-id", Input), "ep_77c1")
        await type_into(pilot, form.query_one("#import-url", Input), "https://old.example/hooks")
        await type_into(pilot, form.query_one("#import-secret", Input), "not-a-secret")
        await pilot.press("enter")
        problem = str(form.query_one("#import-problem").render())
        assert "whsec_" in problem
        assert isinstance(app.screen, ImportEndpointScreen)
        form.query_one("#import-secret", Input).value = NEW_SECRET
        await pilot.press("ctrl+s")
        assert app.screen is main
        [endpoint] = registry.load()
        assert (endpoint.id, endpoint.origin, endpoint.secret.reveal()) == (
            "ep_77c1",
            "imported",
            NEW_SECRET,
        )
        assert main.query_one(EndpointsPane).endpoints[0].id == "ep_77c1"
