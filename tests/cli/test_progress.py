"""Progress of long work: on stderr, only when stderr is a terminal (a real pty here), never in
piped output; at most ten redraws a second; cleared at the end. Prune deletes in steps."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import factories
import pytest
from process_helpers import CLEAR, run_with_stderr_on_a_pty

from walletpass_tui.cli import main
from walletpass_tui.cli.events_cmd import maintenance
from walletpass_tui.cli.progress import Progress
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.store import Store

COUNT = 1_200


def attempt(i: int, at: int) -> Attempt:
    body = json.dumps({"type": "pass.activated", "n": i}).encode()
    headers = (("webhook-id", f"msg_{i}"),)
    return factories.attempt(f"msg_{i}", body, at=at, headers=headers, topic="pass.activated")


async def fill(home: Path, times: list[int]) -> None:
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for start in range(0, len(times), 300):
            await asyncio.gather(
                *(
                    store.record(attempt(i, times[i]))
                    for i in range(start, min(len(times), start + 300))
                )
            )
        await store.settled()


@pytest.fixture
async def history(clean_env: Path) -> Path:
    old = int(time.time() * 1000) - 30 * 86_400_000
    await fill(clean_env, [old + i for i in range(COUNT)])
    return clean_env


@pytest.mark.slow
def test_export_shows_progress_on_a_terminal_and_clears_it(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "export.jsonl"
    with out.open("wb") as fh:
        code, shown = run_with_stderr_on_a_pty("events", "export", stdout=fh)
    assert code == 0
    assert f"exported 1 of {COUNT:,}" in shown  # the first redraw comes at once
    assert shown.endswith(CLEAR)  # and the line is erased at the end
    lines = out.read_text().splitlines()
    assert len(lines) == COUNT
    assert [json.loads(line)["webhook_id"] for line in lines[:2]] == ["msg_0", "msg_1"]


@pytest.mark.slow
def test_export_piped_writes_nothing_extra(history: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", "events", "export"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr == b""
    assert len(done.stdout.splitlines()) == COUNT


@pytest.mark.slow
def test_prune_shows_progress_on_a_terminal_only(history: Path) -> None:
    code, shown = run_with_stderr_on_a_pty(
        "events", "prune", "--older-than", "1d", "--yes", stdout=subprocess.DEVNULL
    )
    assert code == 0
    assert f"pruned 0 of {COUNT:,}" in shown and shown.endswith(CLEAR)


@pytest.mark.slow
def test_prune_with_stderr_piped_says_only_the_result(history: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", "events", "prune", "--older-than", "1d", "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == f"Removed {COUNT} attempt(s) older than 24 h.\n"


async def test_prune_in_steps_deletes_exactly_what_is_older_even_with_ties(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps of 7 over rows that share times: every older row goes, no newer one."""
    monkeypatch.setattr(maintenance, "FIRST_STEP", 7)
    monkeypatch.setattr(maintenance, "MIN_STEP", 7)
    monkeypatch.setattr(maintenance, "MAX_STEP", 7)
    now = int(time.time() * 1000)
    old = now - 10 * 86_400_000
    times = [old] * 20 + [old + 1 + i // 3 for i in range(40)] + [now - i for i in range(10)]
    await fill(clean_env, times)
    code = await asyncio.to_thread(main, ["events", "prune", "--older-than", "1d", "--yes"])
    assert code == 0
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        assert await store.count() == 10
        rows = await store.log_page(limit=100)
    assert all(r.received_at_ms > now - 86_400_000 for r in rows)


def test_progress_redraws_at_most_ten_times_a_second() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress("exported", 10_000, stream=stream, enabled=True, clock=lambda: now[0])
    for done in range(1, 10_001):
        now[0] += 0.0005  # 10,000 items in 5 s
        progress.update(done)
    progress.close()
    assert 45 <= progress.draws <= 51
    text = stream.getvalue()
    assert "exported 1 of 10,000" in text and text.endswith(CLEAR)


def test_progress_is_silent_when_not_on_a_terminal() -> None:
    stream = io.StringIO()  # not a terminal
    with Progress("pruned", 5, stream=stream) as progress:
        for done in range(6):
            progress.update(done)
    assert stream.getvalue() == ""


def test_a_terminal_that_goes_away_turns_the_progress_off() -> None:
    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(5, "Input/output error")

    progress = Progress("exported", 10, stream=Gone(), enabled=True)
    progress.update(1)  # no exception: the work goes on
    assert progress.enabled is False and progress.draws == 0
    progress.close()
