"""The Check screen at 120 columns: what your app answered is shown whole ("200 in 12 ms"), not
cut to the width of the "waiting" placeholder the column was laid out for."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from textual.widgets import DataTable
from ui_helpers import ENDPOINT_ID, SECRET, wait_for

from walletpass_tui.check.cases import build_cases
from walletpass_tui.check.report import got
from walletpass_tui.check.runner import CheckOptions
from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.screens.check import CheckScreen
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.store import Store


@pytest.fixture
async def dashboard(
    settings: Settings, store: Store, registry: EndpointRegistry
) -> AsyncIterator[WalletPassApp]:
    registry.import_endpoint(
        ENDPOINT_ID, "https://hooks.example/webhooks", ["pass.activated"], SECRET
    )
    async with DeliveryRuntime(settings, store=store, registry=registry) as runtime:
        yield build_app(runtime, receiver_display="127.0.0.1:8787/webhooks")


def row_lines(table: DataTable[Any]) -> list[str]:
    return ["".join(s.text for s in table.render_line(y)) for y in range(table.size.height)]


async def test_the_answer_column_is_not_cut_at_120_columns(
    dashboard: WalletPassApp, start_server: Any
) -> None:
    app = dashboard
    server = await start_server()

    async def slow_enough(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.Response(status=200, text="ok")

    server.reply("POST", "/webhooks", slow_enough)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, CheckScreen))
        screen = app.screen
        assert isinstance(screen, CheckScreen)
        options = CheckOptions(server.url + "/webhooks", SECRET, ("pass.activated",))
        screen.start(options, build_cases(SECRET, options.topics)[:3])
        await wait_for(lambda: not screen.running and len(screen.results) == 3, timeout=20)
        await pilot.pause()
        lines = row_lines(screen.table)
        for result in screen.results.values():
            answer = got(result)
            assert answer.startswith("200 in ") and answer.endswith(("ms", "s"))
            assert any(answer in line for line in lines), (answer, lines)
