"""The Templates pane against a stand-in service: loads, shows JSON, and fails gracefully."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from ui_helpers import SIZE, TEMPLATES_PATH, wait_for

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import Secret
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.templates import TemplatesPane
from walletpass_tui.ui.screens.template_json import TemplateScreen
from walletpass_tui.ui.widgets.notice import Notice

TEMPLATES = [
    {
        "name": "Gym Membership",
        "id": "tpl_7Qm2Lx",
        "passType": "generic",
        "style": {"background": "#112233", "logo": {"url": "https://cdn.example/logo.png"}},
        "fields": [1, 2, 3],
    },
    {"id": "tpl_9Pz1Ka", "name": "Café Loyalty", "passType": "storeCard"},
]


def pane_of(app: WalletPassApp) -> TemplatesPane:
    return app.screen.query_one(TemplatesPane)


def notice_text(app: WalletPassApp) -> str:
    return str(pane_of(app).query_one(Notice).render())


async def loaded(app: WalletPassApp) -> TemplatesPane:
    await wait_for(lambda: app.screen.query(TemplatesPane))
    pane = pane_of(app)
    # Asked for once the log shows its first page, then answered.
    await wait_for(lambda: pane.asked > 0 and not pane.loading)
    return pane


async def test_templates_load_with_columns_from_their_keys_and_open_as_json(
    make_app: Callable[..., WalletPassApp], service: Any, service_client: WalletPassClient
) -> None:
    service.answer("GET", TEMPLATES_PATH, json={"data": TEMPLATES, "hasMore": False})
    app = make_app(client=service_client, settings=service_client.settings)
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app)
        assert str(pane.border_title) == "Templates 2"
        table = pane.table
        assert table.display and table.row_count == 2
        titles = [str(c.label) for c in table.columns.values()]
        assert titles[:3] == ["id", "name", "passType"]  # id-like first, then name-like
        assert [str(cell) for cell in table.get_row_at(0)][:2] == ["tpl_7Qm2Lx", "Gym Membership"]
        style_cell = str(table.get_row_at(0)[titles.index("style")])
        assert style_cell == "{2 keys}"  # nested values compact
        # A key of the list's answer is not a title: it is in the answer's JSON view (a).
        assert "hasMore" not in f"{pane.border_title} {pane.border_subtitle}"
        request = service.requests_to("GET", TEMPLATES_PATH)[0]
        assert request.headers["Authorization"] == "Bearer wp_test_4f9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c"

        await pilot.press("1")
        assert table.has_focus
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, TemplateScreen))
        shown = str(app.screen.query_one("#template-json").render())
        assert '"logo": {' in shown and '"url": "https://cdn.example/logo.png"' in shown
        await pilot.press("c")
        assert '"id": "tpl_7Qm2Lx"' in (app.clipboard or "")
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, TemplateScreen))
        await pilot.press("a")
        await wait_for(lambda: isinstance(app.screen, TemplateScreen))
        shown = str(app.screen.query_one("#template-json").render())
        assert '"hasMore": false' in shown and '"id": "tpl_7Qm2Lx"' in shown
        await pilot.press("escape")

        service.answer("GET", TEMPLATES_PATH, json=[TEMPLATES[1]])
        await pilot.press("r")
        await wait_for(lambda: str(pane.border_title) == "Templates 1")
        assert len(service.requests_to("GET", TEMPLATES_PATH)) == 2


async def test_a_rejected_key_is_explained_in_the_pane_with_a_retry_key(
    make_app: Callable[..., WalletPassApp], service: Any, service_client: WalletPassClient
) -> None:
    service.reply(
        "GET",
        TEMPLATES_PATH,
        {"status": 401, "json": {"error": "invalid key [@click=app.quit]x[/]"}},
        {"json": TEMPLATES},
    )
    app = make_app(client=service_client, settings=service_client.settings)
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app)
        text = notice_text(app)
        assert "The service answered 401 Unauthorized" in text
        assert "HTTP 401" in text and "Check the API key" in text
        assert "invalid key [@click=app.quit]x[/]" in text  # the service's answer, literally
        assert "retry" in text
        assert not pane.table.display
        await pilot.press("r")
        await wait_for(lambda: str(pane.border_title) == "Templates 2")
        assert pane.table.display
        assert app.is_running


async def test_service_down_is_reported_not_raised(
    make_app: Callable[..., WalletPassApp], settings: Settings
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = settings.with_values(base_url=f"http://127.0.0.1:{port}", api_key=Secret("wp_test_x"))
    async with WalletPassClient(down, retry_base_delay=0) as client:
        app = make_app(client=client, settings=down)
        async with app.run_test(size=SIZE):
            await loaded(app)
            text = notice_text(app)
            assert "Could not connect to 127.0.0.1" in text
            assert "Check the URL and that the service is reachable" in text
            assert app.is_running


async def test_an_answer_of_an_unknown_shape_shows_it_as_received(
    make_app: Callable[..., WalletPassApp], service: Any, service_client: WalletPassClient
) -> None:
    service.answer("GET", TEMPLATES_PATH, json={"count": 3, "next": None})
    app = make_app(client=service_client, settings=service_client.settings)
    async with app.run_test(size=SIZE):
        await loaded(app)
        text = notice_text(app)
        assert "shape this tool does not recognise" in text
        assert '{"count": 3, "next": null}' in text
        assert app.is_running


async def test_an_answer_that_is_not_json_is_shown_escaped(
    make_app: Callable[..., WalletPassApp], service: Any, service_client: WalletPassClient
) -> None:
    service.answer("GET", TEMPLATES_PATH, body="<html>\x1b[2J\x1b]0;owned\x07[b]x[/b]</html>")
    app = make_app(client=service_client, settings=service_client.settings)
    async with app.run_test(size=SIZE):
        await loaded(app)
        text = notice_text(app)
        assert "not JSON" in text
        assert "<html>\\x1b[2J\\x1b]0;owned\\x07[b]x[/b]</html>" in text
        assert "\x1b" not in text and "\x07" not in text


async def test_without_a_key_the_pane_says_how_to_set_one(
    make_app: Callable[..., WalletPassApp],
) -> None:
    app = make_app(client=None)
    async with app.run_test(size=SIZE):
        await loaded(app)
        text = notice_text(app)
        assert "WALLETPASS_API_KEY" in text
        assert "WALLETPASS_BASE_URL" in text
        assert app.is_running
