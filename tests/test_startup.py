"""Commands start at once: each imports only what it runs. Checked by which heavy modules a fresh
process has loaded after the command (``sys.modules``), never by a timing."""

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

HEAVY = ("textual", "rich", "aiohttp", "httpx", "standardwebhooks")

PROBE = """
import json, sys
from walletpass_tui.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
with open(sys.argv[1], "w") as fh:
    json.dump({{"code": code, "heavy": heavy}}, fh)
"""


def loaded_by(tmp_path: Path, env: dict[str, str], *argv: str) -> dict[str, object]:
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), str(report), *argv],
        env=env,
        capture_output=True,
        check=False,
        timeout=60,
    )
    return json.loads(report.read_text())


@pytest.fixture
async def history(clean_env: Path) -> Path:
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
    return clean_env


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["--help"],
        ["events", "--help"],
        ["config", "show"],
        ["config", "show", "--json"],
        ["events", "list", "--limit", "20", "--json"],
        ["events", "list", "--topic", "activated"],
        ["events", "show", "msg_1"],
        ["events", "show", "msg_1", "--json"],
        ["events", "export"],
        ["events", "export", "--format", "curl"],
    ],
)
def test_light_commands_load_no_ui_and_no_http_stack(
    history: Path, tmp_path: Path, argv: list[str]
) -> None:
    result = loaded_by(tmp_path, dict(os.environ), *argv)
    assert result["code"] == 0, result
    assert result["heavy"] == [], f"{' '.join(argv)} loaded {result['heavy']}"


def test_the_probe_sees_heavy_modules_when_a_command_needs_them(
    history: Path, tmp_path: Path
) -> None:
    """The check above can fail: a command that sends HTTP does load httpx."""
    env = {
        **os.environ,
        "WALLETPASS_API_KEY": "wp_test_x" * 3,
        "WALLETPASS_BASE_URL": "http://127.0.0.1:9",
    }
    result = loaded_by(tmp_path, env, "templates")
    assert result["code"] == 1
    assert "httpx" in result["heavy"]


DASHBOARD_PROBE = """
import asyncio, json, sys
from walletpass_tui.cli import main
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.widgets.log_lines import LogLines

HTTP_STACK = ("aiohttp", "httpx", "httptools")
report = {}
apps = []
original = WalletPassApp.run_async


def loaded():
    return sorted(m for m in HTTP_STACK if m in sys.modules)


async def run_async(self, **kwargs):
    apps.append(self)
    return await original(self, headless=True, size=(120, 36))


async def finish():
    app = apps[0]
    while not app.runtime.serving:  # the receiver is built once the first frame is drawn
        await asyncio.sleep(0.01)
    report["serving"] = loaded()
    app.exit()


def painted(row):
    if "first_row" not in report:
        report["first_row"] = loaded()
        asyncio.get_running_loop().create_task(finish())


WalletPassApp.run_async = run_async
LogLines.paint_observer = painted
report["code"] = main(["--port", "0"])
with open(sys.argv[1], "w") as fh:
    json.dump(report, fh)
"""


@pytest.mark.slow
def test_the_dashboard_paints_its_first_row_before_loading_the_http_stack(
    history: Path, tmp_path: Path
) -> None:
    """The real dashboard (headless, over a stored delivery): when its first log row is drawn
    neither the receiver's HTTP parser (httptools), aiohttp nor httpx (the service's client,
    forwarding, the tunnel lookup) is loaded; the receiver is built right after and then its
    parser is."""
    report = tmp_path / "dashboard.json"
    env = {
        **os.environ,
        "WALLETPASS_API_KEY": "wp_test_x" * 3,
        "WALLETPASS_BASE_URL": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", DASHBOARD_PROBE, str(report)],
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert report.exists(), done.stderr.decode()[-2000:]
    result = json.loads(report.read_text())
    assert result["code"] == 0, result
    assert result["first_row"] == [], f"loaded before the first row: {result['first_row']}"
    assert "httptools" in result["serving"], result
