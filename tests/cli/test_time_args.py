"""One reading of a time wherever a command asks for one (``--since``, ``--until``,
``--older-than``): a duration back from now or an ISO 8601 time, ASCII digits only."""

from __future__ import annotations

import asyncio
import json
import time
import tokenize
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from walletpass_tui.cli import main
from walletpass_tui.cli.time_args import MAX_DURATION_S, When, parse_duration, parse_when
from walletpass_tui.errors import UsageError
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store

NOW_MS = 1_790_000_000_000
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("15min", 900),
        ("12h", 43200),
        ("12H", 43200),
        (" 12 h ", 43200),
        ("1h30m", 5400),
        ("1h 30m", 5400),
        ("1.5h", 5400),
        ("7d", 604800),
        ("2w", 1209600),
        ("7", 604800),  # a bare number counts days
        ("0", 0),
    ],
)
def test_a_duration_counts_back_from_now(text: str, seconds: int) -> None:
    assert parse_when(text, now_ms=NOW_MS) == When(NOW_MS - seconds * 1000, ago_s=seconds)
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "stamp"),
    [
        ("2026-11-23T14:00:00Z", "2026-11-23T14:00:00+00:00"),
        ("2026-11-23T14:00:00z", "2026-11-23T14:00:00+00:00"),
        ("2026-11-23T15:00+01:00", "2026-11-23T14:00:00+00:00"),
        ("2026-11-23T14:00:00.250Z", "2026-11-23T14:00:00.250+00:00"),
    ],
)
def test_an_iso_time_is_that_time(text: str, stamp: str) -> None:
    expected = int(datetime.fromisoformat(stamp).timestamp() * 1000)
    assert parse_when(text, now_ms=NOW_MS) == When(expected)


def test_a_time_without_a_zone_is_local_and_a_date_is_its_local_midnight() -> None:
    local = datetime(2026, 11, 23, 14, 0).astimezone()
    assert parse_when("2026-11-23 14:00").ms == int(local.timestamp() * 1000)
    midnight = datetime(2026, 11, 23).astimezone()
    assert parse_when("2026-11-23").ms == int(midnight.timestamp() * 1000)


@pytest.mark.parametrize(
    "text",
    [
        "\u0661\u0662h",  # Arabic-Indic 12, which \d and float() read as 12
        "\u0661\u0662",
        "\uff11\uff12h",  # fullwidth 12
        "12\u0968h",  # a Devanagari digit among ASCII ones
        "2026-\u0661\u0661-23",
        "12x",
        "h",
        "",
        "   ",
        "-5m",
        "+5m",
        "1e3h",
        "nan",
        "inf",
        "12h!",
        "1h30",
        "1_000s",
        "yesterday",
        "2026-13-01",
        "9" * 100,
    ],
)
def test_anything_else_is_refused_in_one_sentence_with_examples(text: str) -> None:
    with pytest.raises(UsageError, match=r"is neither a duration nor an ISO 8601 time; e\.g\. 45s"):
        parse_when(text, now_ms=NOW_MS)


def test_more_than_a_century_is_a_typo() -> None:
    with pytest.raises(UsageError, match="longer than 100 years"):
        parse_when("5300w", now_ms=NOW_MS)
    with pytest.raises(UsageError, match="longer than 100 years"):
        parse_duration("36501")


@given(st.text(max_size=40))
@example("\u0661\u0662h")
@example("1" * 64 + "h")
def test_every_text_is_a_time_or_one_usage_error(text: str) -> None:
    try:
        when = parse_when(text, now_ms=NOW_MS)
    except UsageError as exc:
        assert str(exc).endswith(".") and "\n" not in str(exc)
        return
    assert text.isascii()  # only ASCII is ever read as a time
    if when.ago_s is not None:
        assert 0 <= when.ago_s <= MAX_DURATION_S
        assert when.ms == NOW_MS - int(when.ago_s * 1000)


def test_no_pattern_in_the_package_reads_digits_with_backslash_d() -> None:
    r"""``\d`` matches every script's digits: patterns spell out [0-9]."""
    offenders = []
    for path in sorted((ROOT / "walletpass_tui").rglob("*.py")):
        with path.open("rb") as fh:
            for token in tokenize.tokenize(fh.readline):
                if token.type != tokenize.STRING:
                    continue
                quoted = token.string.lstrip("rRbBuUfF")
                raw = "r" in token.string[: len(token.string) - len(quoted)].lower()
                found = "\\d" in quoted if raw else "\\\\d" in quoted
                if found and not quoted.startswith(('"""', "'''")):  # prose in docstrings
                    offenders.append(f"{path.relative_to(ROOT)}:{token.start[0]}")
    assert offenders == []


# -- every command that asks for a time takes both forms -------------------------------------------


def _attempt(msg_id: str, age_s: float) -> Attempt:
    return Attempt(
        received_at_ms=int((time.time() - age_s) * 1000),
        method="POST",
        path="/webhooks",
        headers=(("content-type", "application/json"),),
        body=b'{"type": "pass.activated"}',
        verdict=VERIFIED,
        reason="verified",
        status=200,
        webhook_id=msg_id,
        topic="pass.activated",
    )


@pytest.fixture
async def aged_history(clean_env: Path) -> Path:
    """Three messages: three hours, ninety minutes and ten minutes old."""
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        for msg_id, age in (("msg_old", 3 * 3600), ("msg_mid", 90 * 60), ("msg_new", 600)):
            await store.record(_attempt(msg_id, age))
        await store.settled()
    return clean_env


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_events_list_takes_a_duration_window(
    aged_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = await run(capsys, "events", "list", "--since", "2h", "--until", "30m", "--json")
    assert code == 0
    assert [m["webhook_id"] for m in json.loads(out)] == ["msg_mid"]
    code, out, _ = await run(capsys, "events", "list", "--since", "1h", "--json")
    assert [m["webhook_id"] for m in json.loads(out)] == ["msg_new"]


async def test_events_export_takes_a_duration_and_a_time(
    aged_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = await run(capsys, "events", "export", "--since", "2h")
    assert code == 0
    assert [json.loads(line)["webhook_id"] for line in out.splitlines()] == ["msg_mid", "msg_new"]
    an_hour_ago = datetime.fromtimestamp(time.time() - 3600, UTC).isoformat()
    code, out, _ = await run(capsys, "events", "export", "--until", an_hour_ago)
    assert [json.loads(line)["webhook_id"] for line in out.splitlines()] == ["msg_old", "msg_mid"]


async def test_events_prune_takes_a_time_as_well_as_a_duration(
    aged_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_hours_ago = datetime.fromtimestamp(time.time() - 7200, UTC).isoformat()
    code, out, _ = await run(capsys, "events", "prune", "--older-than", two_hours_ago)
    assert code == 0 and "Removed 1 attempt(s) received before" in out
    code, out, _ = await run(capsys, "events", "prune", "--older-than", "1h")
    assert code == 0 and "Removed 1 attempt(s) older than 1 h" in out
    code, out, _ = await run(capsys, "events", "list", "--json")
    assert [m["webhook_id"] for m in json.loads(out)] == ["msg_new"]


async def test_schema_drift_takes_a_duration(
    aged_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await run(capsys, "schema", "drift", "--since", "1h", "--json")
    assert code == 0, err
    assert json.loads(out) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["events", "list", "--since", "\u0661\u0662h"],
        ["events", "list", "--until", "yesterday"],
        ["events", "export", "--since", "12x"],
        ["events", "stats", "--since", "\u0661\u0662h"],
        ["events", "prune", "--older-than", "\u0661\u0662h"],
        ["schema", "drift", "--since", "\u0661\u0662h"],
    ],
)
async def test_a_time_that_is_not_one_is_a_usage_error_everywhere(
    aged_history: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = await run(capsys, *argv)
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert "is neither a duration nor an ISO 8601 time" in last and "Traceback" not in err


async def test_until_must_come_after_since(
    aged_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await run(capsys, "events", "list", "--since", "1h", "--until", "2h")
    assert code == 2 and "--until (2 h ago) must be after --since (1 h ago)" in err
