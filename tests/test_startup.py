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

from walletpass_tui.webhooks.store import VERIFIED, Attempt, Store

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
            Attempt(
                received_at_ms=1_700_000_000_000,
                method="POST",
                path="/webhooks",
                headers=(("webhook-id", "msg_1"),),
                body=b'{"type": "pass.activated"}',
                verdict=VERIFIED,
                reason="verified",
                status=200,
                webhook_id="msg_1",
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
