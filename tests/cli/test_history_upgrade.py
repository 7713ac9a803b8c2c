"""A history an older walletpass-tui wrote is counted by minute once, by the first command that
opens it, which says so on stderr; its numbers are those of every row, and no command says it
again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import factories
import pytest

from walletpass_tui.webhooks.store import Store

pytestmark = pytest.mark.slow  # walletpass-tui processes


def run(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_an_old_history_is_upgraded_once_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    now = int(time.time() * 1000)
    await asyncio.to_thread(home.mkdir)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for i in range(30):
            await store.record(
                factories.json_attempt(
                    f"msg_{i % 25}",
                    at=now - i * 1000,
                    topic="pass.activated",
                    verdict="rejected" if i % 10 == 0 else "verified",
                )
            )
    with contextlib.closing(
        sqlite3.connect(home / "deliveries.sqlite3", isolation_level=None)
    ) as db:
        factories.as_version_8(db)
        db.execute("DROP TABLE activity")  # as the version before the counts by minute left it
        db.execute("DROP INDEX forwards_by_time")
        db.execute("DROP INDEX forwards_by_attempt")
        db.execute("PRAGMA user_version = 7")

    first = await asyncio.to_thread(run, home, "events", "stats", "--since", "1h", "--json")
    assert first.returncode == 0, first.stderr
    assert "Upgrading the history" in first.stderr and "30 attempts by minute" in first.stderr
    assert "Upgraded in" in first.stderr
    totals = json.loads(first.stdout)["totals"]
    assert (totals["attempts"], totals["verdicts"]["rejected"], totals["redeliveries"]) == (
        30,
        3,
        5,
    )

    again = await asyncio.to_thread(run, home, "events", "list", "--json")
    assert again.returncode == 0 and again.stderr == ""
    assert len(json.loads(again.stdout)) == 25
