"""The dashboard's first frame loads nothing of what comes after it: the Stats screen, the charts
and the traffic counts, the copy keys' curl form, the keys remapping, the TOML writer. Checked by
what a fresh process has loaded when its first log row is drawn, never by a timing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from factories import attempt

from walletpass_tui.webhooks.store import Store

LATER = (
    "walletpass_tui.ui.screens.stats",
    "walletpass_tui.ui.view.charts",
    "walletpass_tui.ui.view.traffic",
    "walletpass_tui.ui.copying",
    "walletpass_tui.ui.view.clipboard_text",
    "walletpass_tui.webhooks.export",
    "walletpass_tui.ui.keymap",
    "tomlkit",
)

PROBE = """
import asyncio, json, sys
from walletpass_tui.cli import main
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.widgets.log_lines import LogLines

LATER = {later!r}
report = {{}}
apps = []
original = WalletPassApp.run_async


async def run_async(self, **kwargs):
    apps.append(self)
    return await original(self, headless=True, size=(120, 36))


async def finish():
    app = apps[0]
    while app.live.traffic is None or not app.live.traffic.loaded:
        await asyncio.sleep(0.01)
    report["after"] = sorted(m for m in LATER if m in sys.modules)
    app.exit()


def painted(row):
    if "first_row" not in report:
        report["first_row"] = sorted(m for m in LATER if m in sys.modules)
        asyncio.get_running_loop().create_task(finish())


WalletPassApp.run_async = run_async
LogLines.paint_observer = painted
report["code"] = main(["--port", "0"])
with open(sys.argv[1], "w") as fh:
    json.dump(report, fh)
"""


@pytest.mark.slow
async def test_the_first_frame_loads_none_of_what_comes_after_it(
    clean_env: Path, tmp_path: Path
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        await store.record(
            attempt(
                "msg_1",
                b'{"type": "pass.activated"}',
                headers=(("webhook-id", "msg_1"),),
                topic="pass.activated",
            )
        )
        await store.settled()
    report = tmp_path / "report.json"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", PROBE.format(later=LATER), str(report)],
        env=dict(os.environ),
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert report.exists(), done.stderr.decode()[-2000:]
    result = json.loads(report.read_text())
    assert result["code"] == 0, (result, done.stderr.decode()[-3000:])
    assert result["first_row"] == [], f"loaded before the first row: {result['first_row']}"
    # The probe can fail: the traffic counts are loaded once the history is read.
    assert "walletpass_tui.ui.view.traffic" in result["after"], result
