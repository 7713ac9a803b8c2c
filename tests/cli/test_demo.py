"""``demo``: the simulator, the receiver and the dashboard in one process, events flowing."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from walletpass_tui.cli.demo_cmd import demo_session
from walletpass_tui.config import Settings, load_settings
from walletpass_tui.runtime.demo import DemoInjection
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.webhooks.models import VERIFIED, Attempt


def _settings(tmp_path: Path) -> Settings:
    return load_settings({"home": str(tmp_path / "home")}, env={})


async def test_demo_registers_through_the_api_and_shows_events_arriving(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    async with demo_session(settings, port=0, interval=0.05) as app:
        async with app.run_test(size=(120, 36)) as pilot:
            # The endpoint was created through the real API client and its secret stored (0600).
            registry_file = settings.home / "demo" / "endpoints.json"
            stored = json.loads(registry_file.read_text())["endpoints"]
            assert len(stored) == 1 and stored[0]["id"].startswith("ep_")
            assert stored[0]["secret"].startswith("whsec_")
            assert registry_file.stat().st_mode & 0o777 == 0o600

            view = app.screen.query_one(LogLines)
            deadline = time.monotonic() + 15
            shown: list = []
            while time.monotonic() < deadline:
                await pilot.pause(0.1)
                shown = view.visible_rows()
                if len(shown) >= 5 and any(r.verdict == VERIFIED for r in shown):
                    break
            assert len(shown) >= 5, "events should flow from the simulator to the log on screen"
            assert any(r.verdict == VERIFIED and r.endpoint_id == stored[0]["id"] for r in shown)
            # Real history lives elsewhere: the demo writes only under <home>/demo.
            assert not (settings.home / "deliveries.sqlite3").exists()
        await asyncio.sleep(0)


def test_demo_failures_hit_some_messages_first_attempts_only() -> None:
    def attempt(msg: str, n: int) -> Attempt:
        return Attempt(
            received_at_ms=0,
            method="POST",
            path="/webhooks",
            headers=(),
            body=b"",
            verdict=VERIFIED,
            reason="verified",
            status=200,
            webhook_id=msg,
            attempt_no=n,
        )

    injection = DemoInjection()
    decided = {
        f"msg_{i}": [injection.decide(attempt(f"msg_{i}", n)).status for n in (1, 2, 3)]
        for i in range(200)
    }
    failing = [s for s in decided.values() if s[0] == 503]
    assert 0 < len(failing) < 100, "some, not most, messages fail at first"
    assert all(s[2] == 200 for s in decided.values()), "every message succeeds by its third attempt"
