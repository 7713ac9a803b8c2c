"""``events stats`` over a history with known counts at known times, written with the real Store."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import factories
import pytest

from walletpass_tui.cli import main
from walletpass_tui.cli.events_cmd.stats import (
    FULL,
    SHADE,
    Activity,
    Bucket,
    bar,
    totals,
)
from walletpass_tui.cli.events_cmd.stats import print_stats_table as table
from walletpass_tui.text import format_ms
from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt, ForwardResult
from walletpass_tui.webhooks.store import Store

HOUR = 3_600_000
TARGET = "http://127.0.0.1:9/app"


def attempt(at: int, msg_id: str, topic: str | None, verdict: str = VERIFIED) -> Attempt:
    body = json.dumps({"type": topic}).encode()
    headers = (("webhook-id", msg_id),)
    return factories.attempt(msg_id, body, verdict=verdict, at=at, headers=headers, topic=topic)


@pytest.fixture
async def history(clean_env: Path) -> int:
    """Two hours of known traffic; returns the start of the first hour (epoch ms)."""
    start = (int(time.time() * 1000) // HOUR - 2) * HOUR
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        # Before the window: never counted.
        await store.record(attempt(start - 1, "msg_old", "pass.activated"))
        # Hour 0: 3 activated (one of them a redelivery), 3 rejected of which one deactivated,
        # one with a topic the service does not know and one with none.
        await store.record(attempt(start + 1_000, "msg_1", "pass.activated"))
        await store.record(attempt(start + 2_000, "msg_1", "pass.activated"))
        await store.record(attempt(start + 3_000, "msg_2", "pass.activated"))
        await store.record(attempt(start + 4_000, "msg_3", "pass.deactivated", REJECTED))
        await store.record(attempt(start + 5_000, "msg_4", "pass.exploded", REJECTED))
        await store.record(attempt(start + 6_000, "msg_5", None, REJECTED))
        # Hour 1: 7 deactivated, each forwarded to the app: five answers (10..50 ms, the last a
        # 500), one without an answer, one not tried yet.
        answers = [(200, 10.0), (200, 20.0), (200, 30.0), (200, 40.0), (500, 50.0), (None, 15000.0)]
        for i in range(7):
            at = start + HOUR + i * 1_000
            await store.record(attempt(at, f"msg_f{i}", "pass.deactivated"), forward_to=(TARGET,))
        for status, latency in answers:
            row = await store.next_pending_forward(TARGET)
            assert row is not None
            result = ForwardResult(status, latency, error=None if status else "timed out")
            await store.update_forward(row, result, next_try_at_ms=None)
        await store.settled()
    return start


def stats(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["events", "stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_stats_json_counts_each_bucket(history: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = stats(capsys, "--since", format_ms(history), "--by", "hour", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["by"] == "hour" and doc["bucket_seconds"] == 3600
    assert doc["since"] == format_ms(history)
    first, second, now = doc["buckets"]
    assert [b["start"] for b in doc["buckets"]] == [
        format_ms(history),
        format_ms(history + HOUR),
        format_ms(history + 2 * HOUR),
    ]
    assert first == {
        "start": format_ms(history),
        "attempts": 6,
        "topics": {"pass.activated": 3, "pass.deactivated": 1, "other": 2},
        "verdicts": {"verified": 3, "rejected": 3},
        "redeliveries": 1,
        "forwards": {"count": 0, "answered": 0, "failed": 0, "p50_ms": None, "p95_ms": None},
        "failures": {"forwards": 0, "rejected": 3},
    }
    assert second["attempts"] == 7 and second["topics"]["pass.deactivated"] == 7
    assert second["verdicts"] == {"verified": 7, "rejected": 0}
    assert second["forwards"] == {
        "count": 7,
        "answered": 5,
        "failed": 2,  # the 500 and the one without an answer
        "p50_ms": 30.0,
        "p95_ms": 50.0,
    }
    assert second["failures"] == {"forwards": 2, "rejected": 0}
    assert now["attempts"] == 0
    totals = doc["totals"]
    assert totals["attempts"] == 13 and totals["redeliveries"] == 1
    assert totals["verdicts"] == {"verified": 10, "rejected": 3}
    assert totals["forwards"]["p50_ms"] == 30.0


def test_stats_table_without_a_terminal_has_no_bars(
    history: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = stats(capsys, "--since", format_ms(history), "--by", "hour")
    assert code == 0, err
    lines = out.splitlines()
    header = lines[1].split()
    assert header[:3] == ["TIME", "(UTC)", "ATTEMPTS"] and "OTHER" in header
    first = lines[2].split()
    # time (2 words), attempts, activated, deactivated, other, rejected, redelivered, forwards...
    assert first[2:10] == ["6", "3", "1", "2", "3", "1", "0", "-"]
    second = lines[3].split()
    assert second[2:8] == ["7", "0", "7", "0", "0", "0"]
    assert second[8:] == ["7", "30", "ms", "50", "ms", "2"]
    assert lines[-1].split()[:2] == ["total", "13"]
    assert FULL not in out and SHADE not in out


def test_stats_default_bucket_and_duration_since(
    history: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = stats(capsys, "--since", "90m", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["by"] == "minute" and len(doc["buckets"]) in (91, 92)
    code, out, _ = stats(capsys, "--json")  # the last 24 h, by hour: msg_old too
    assert json.loads(out)["by"] == "hour" and json.loads(out)["totals"]["attempts"] == 14


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--since", "yesterday"], "is neither a duration nor an ISO 8601 time"),
        (["--since", "30d", "--by", "minute"], "makes 43,201 rows"),
        (["--since", "2999-01-01T00:00:00Z"], "is in the future"),
    ],
)
def test_stats_refuses_what_it_cannot_count(
    history: int, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = stats(capsys, *argv)
    assert code == 2 and message in err


def test_stats_without_a_history_says_so_and_creates_none(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = stats(capsys)
    assert code == 1 and "No history yet" in err
    assert not (clean_env / "deliveries.sqlite3").exists()


async def test_percentiles_are_the_nearest_rank_per_bucket_and_overall(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """20 answers of 1..20 ms in one hour and one of 1000 ms in the next: p50 and p95 per hour are
    the 10th and 19th of the sorted times; over both, the 11th and 20th of 21."""
    start = (int(time.time() * 1000) // HOUR - 1) * HOUR
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        times = [(start + i, float(ms)) for i, ms in enumerate(range(20, 0, -1))]
        times.append((start + HOUR, 1000.0))
        for at, ms in times:
            await store.record(attempt(at, f"msg_{at}", "pass.activated"), forward_to=(TARGET,))
            row = await store.next_pending_forward(TARGET)
            assert row is not None
            await store.update_forward(row, ForwardResult(200, ms), next_try_at_ms=None)
    code, out, _ = stats(capsys, "--since", format_ms(start), "--by", "hour", "--json")
    assert code == 0
    doc = json.loads(out)
    first, second = doc["buckets"]
    assert (first["forwards"]["p50_ms"], first["forwards"]["p95_ms"]) == (10.0, 19.0)
    assert (second["forwards"]["p50_ms"], second["forwards"]["p95_ms"]) == (1000.0, 1000.0)
    assert (doc["totals"]["forwards"]["p50_ms"], doc["totals"]["forwards"]["p95_ms"]) == (
        11.0,
        20.0,
    )


def test_bars_scale_to_the_width_and_shade_the_rejected() -> None:
    assert bar(10, 0, 10, 20) == FULL * 20
    assert bar(5, 0, 10, 20) == FULL * 10
    assert bar(5, 5, 10, 20) == FULL * 10 + SHADE * 10
    assert bar(1, 0, 1000, 20) == FULL  # any traffic shows
    assert bar(999, 1, 1000, 20) == FULL * 19 + SHADE  # and so does any rejection
    assert bar(0, 0, 10, 20) == ""


def test_the_table_gives_the_bars_the_width_left() -> None:
    buckets = [Bucket(0, verified=4), Bucket(60_000, verified=2, rejected=2), Bucket(120_000)]
    activity = Activity(buckets, totals(buckets, 0))
    wide, narrow = io.StringIO(), io.StringIO()
    table(activity, "minute", wide, with_bars=True, columns=160)
    table(activity, "minute", narrow, with_bars=True, columns=90)
    rows = wide.getvalue().splitlines()
    assert all(len(line) < 160 for line in rows)
    longest = rows[1].count(FULL)
    assert longest > 20 and rows[2].count(FULL) == rows[2].count(SHADE) == longest // 2
    assert FULL not in narrow.getvalue()  # no room left for a bar


@pytest.mark.slow
def test_stats_on_a_terminal_draws_bars(history: int, clean_env: Path) -> None:
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", "events", "stats", "--since", "3h"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
        timeout=60,
        check=False,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert done.returncode == 0, done.stderr
    text = out.decode()
    assert FULL in text and SHADE in text and "rejected" in text
