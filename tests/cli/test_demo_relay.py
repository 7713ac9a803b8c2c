"""``demo --relay``: the simulated service posts to a relay in the same process, and the dashboard
receives every delivery through it: verified with the endpoint's secret, stored with the relay's
cursor, the relay's state in the header."""

from __future__ import annotations

import asyncio
from pathlib import Path

from walletpass_tui.cli.demo_cmd import demo_session
from walletpass_tui.config import load_settings
from walletpass_tui.ui.view.context import DashboardContext
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.models import Attempt


async def test_demo_with_a_relay_delivers_everything_through_it(tmp_path: Path) -> None:
    settings = load_settings({"home": str(tmp_path / "home")}, env={})
    session = demo_session(settings, port=0, interval=0.05, relay=True)
    async with session as app, app.run_test(size=(160, 36)) as pilot:
        context = app.context
        assert isinstance(context, DashboardContext)
        store = context.store
        found: list[Attempt] = []
        async with asyncio.timeout(30):
            while len([a for a in found if a.verified]) < 3:
                await pilot.pause(0.1)
                rows = await store.log_page(
                    None, limit=50, before_id=None, after_id=None, oldest_first=True
                )
                found = [a for r in rows if (a := await store.attempt(r.id)) is not None]
        header = app.screen.query_one(StatusBar).render().plain
    assert "⇄ relay" in header and "stopped" not in header
    # Every delivery came through the relay: the endpoint is the relay's ingress URL.
    assert all(a.relay_url and a.relay_cursor for a in found)
    assert all(a.path.startswith("/in/") for a in found)
    cursors = [a.relay_cursor for a in found]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)
    verified = [a for a in found if a.verified]
    assert verified and all(a.endpoint_id and a.endpoint_id.startswith("ep_") for a in verified)
