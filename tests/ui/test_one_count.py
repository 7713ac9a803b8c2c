"""One count everywhere: the dashboard's header, its Stats screen and ``events stats`` give the
same numbers over one history (the one activity query), before and after live deliveries, with
the requests "Check my app" sent stored but never counted as deliveries and a retried forward
counted once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_helpers import ENDPOINT_ID, SECRET, attempt, body_for, record_all, sender_for, wait_for

from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.ui.screens.stats import StatsScreen
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.forward import Route
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.store import Store

pytestmark = pytest.mark.slow  # runs walletpass-tui processes


def events_stats(home: Path) -> dict[str, Any]:
    """``walletpass-tui events stats --since 1h --json`` in a process of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", "events", "stats", "--since", "1h", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    totals: dict[str, Any] = json.loads(done.stdout)["totals"]
    return totals


def numbers(app: WalletPassApp) -> dict[str, int]:
    """What the header and the Stats screen's numbers (open) say, as ``events stats`` names them."""
    header = app.stats
    screen = app.screen
    assert isinstance(screen, StatsScreen)
    table = screen.numbers
    keys = [str(column.key.value) for column in table.columns.values()]

    def column(key: str) -> int:
        at = keys.index(key)
        return sum(int(str(table.get_row_at(r)[at]).replace(",", "")) for r in range(60))

    return {
        "header received": header.received,
        "header verified": header.verified,
        "header rejected": header.rejected,
        "header redeliveries": header.redeliveries,
        "screen deliveries": column("deliveries"),
        "screen rejected": column("rejected"),
        "screen redelivered": column("redelivered"),
        "screen forwards": column("forwards"),
        "screen failed": column("failed"),
    }


def expected(totals: dict[str, Any]) -> dict[str, int]:
    return {
        "header received": totals["attempts"],
        "header verified": totals["verdicts"]["verified"],
        "header rejected": totals["verdicts"]["rejected"],
        "header redeliveries": totals["redeliveries"],
        "screen deliveries": totals["attempts"],
        "screen rejected": totals["verdicts"]["rejected"],
        "screen redelivered": totals["redeliveries"],
        "screen forwards": totals["forwards"]["count"],
        "screen failed": totals["forwards"]["failed"],
    }


@pytest.fixture
async def your_app(start_server: Any) -> Any:
    """The user's app: its first answer is a 500 (that forward is tried again), then 200s."""
    server = await start_server()
    server.reply("POST", "/hooks", {"status": 500}, {"status": 200, "json": {"ok": True}})
    return server


@pytest.fixture
async def runtime(
    settings: Settings, store: Store, registry: EndpointRegistry, your_app: Any
) -> AsyncIterator[DeliveryRuntime]:
    registry.import_endpoint(
        ENDPOINT_ID,
        "https://hooks.example/webhooks",
        ["pass.activated", "pass.deactivated"],
        SECRET,
    )
    setup = DeliverySetup(
        options=ReceiverOptions(host="127.0.0.1", port=0),
        routes=(Route(your_app.url + "/hooks"),),
    )
    async with DeliveryRuntime(settings, setup, store=store, registry=registry) as opened:
        yield opened


async def test_header_stats_screen_and_events_stats_count_the_same(
    settings: Settings, store: Store, runtime: DeliveryRuntime, your_app: Any
) -> None:
    now = int(time.time() * 1000)
    ago = [now - minutes * 60_000 for minutes in (30, 20, 10, 5)]
    await record_all(
        store,
        [
            attempt(1, at_ms=ago[0]),
            attempt(2, at_ms=ago[0], topic="pass.deactivated"),
            attempt(3, at_ms=ago[1], webhook_id="msg_000001"),  # a redelivery of the first
            attempt(4, at_ms=ago[1], verdict="rejected"),
            attempt(5, at_ms=ago[2], topic="pass.renamed"),  # a topic the service does not know
            attempt(6, at_ms=ago[2], note="check pass: valid delivery → 200 in 3 ms"),
            attempt(7, at_ms=ago[3], verdict="rejected", note="check fail: forged → 200 in 2 ms"),
        ],
        one_by_one=True,
    )
    app = build_app(runtime, receiver_display="127.0.0.1:8787/webhooks")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(lambda: app.stats.received == 5 and app.traffic.loaded, timeout=60)
        await pilot.press("s")
        await wait_for(lambda: isinstance(app.screen, StatsScreen), timeout=30)
        await pilot.press("n")
        await pilot.pause()
        before = events_stats(settings.home)
        assert before["attempts"] == 5 and before["topics"]["other"] == 1
        assert numbers(app) == expected(before)

        # Live: deliveries over HTTP, each forwarded to your app (the first answered 500, then
        # tried again), a redelivery, a rejected post, and a request the check sends.
        send = sender_for(runtime, httpx.AsyncClient(timeout=30.0))  # type: ignore[arg-type]
        try:
            for n in (11, 12, 13):
                body = body_for("pass.activated", f"pass_{n:04d}")
                assert (await send.post(body, msg_id=f"msg_live{n}")).status_code == 200
            body = body_for("pass.activated", "pass_0011")
            assert (await send.post(body, msg_id="msg_live11")).status_code == 200
            forged = await send.post(body, msg_id="msg_forged", secret="whsec_" + "A" * 32)
            assert forged.status_code == 401
        finally:
            await send.http.aclose()
        await record_all(store, [attempt(20, at_ms=now, note="check pass: replayed → 200")])
        await wait_for(lambda: app.stats.received == 10, timeout=60)
        await wait_for(lambda: len(your_app.requests_to("POST", "/hooks")) == 5, timeout=60)

        def agree() -> bool:
            return numbers(app) == expected(events_stats(settings.home))

        await wait_for(agree, timeout=60, interval=0.3)
        after = events_stats(settings.home)
        assert after["attempts"] == 10 and after["redeliveries"] == 2
        assert after["forwards"] == {
            "count": 4,
            "answered": 4,
            "failed": 0,
            "p50_ms": after["forwards"]["p50_ms"],
            "p95_ms": after["forwards"]["p95_ms"],
        }
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, StatsScreen), timeout=30)
        assert app.screen.query_one(StatusBar).stats == app.stats
