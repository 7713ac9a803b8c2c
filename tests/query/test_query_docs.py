"""The field query examples of docs/history.md, run as written (in-process) against a sample
history of simulated deliveries: each answers with status 0 and finds what its line says."""

from __future__ import annotations

import asyncio
import json
import random
import re
import shlex
from datetime import UTC, datetime
from pathlib import Path

import factories
import pytest
from query_helpers import body, index_all

from walletpass_tui.cli import main
from walletpass_tui.sim.events import event_body
from walletpass_tui.webhooks.store import Store

DOC = Path(__file__).resolve().parents[2] / "docs" / "history.md"


def examples() -> list[str]:
    section = DOC.read_text().split("## Field queries", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


async def sample(home: Path) -> None:
    """Simulated deliveries of both topics, some with a balance, a loyalty tier or tags."""
    rng = random.Random(5)
    when = datetime(2026, 11, 23, tzinfo=UTC)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for n in range(60):
            topic = ("pass.activated", "pass.deactivated")[n % 3 == 0]
            doc = event_body(topic, when=when, rng=rng)
            if n % 2:
                doc["data"]["balance"] = n * 2
            if n % 5 == 0:
                doc["data"]["loyaltyTier"] = ("gold", "silver")[n % 10 == 0]
            if n % 7 == 0:
                doc["data"]["tags"] = ["vip", "new"] if n % 14 == 0 else ["new"]
            await store.record(factories.attempt(f"msg_{n:03d}", body(doc), topic=topic))
        await store.settled()
    index_all(home / "deliveries.sqlite3")


def test_the_docs_show_examples() -> None:
    assert len(examples()) >= 6


@pytest.mark.parametrize("line", examples())
async def test_each_field_query_example_runs_and_finds_deliveries(
    line: str, clean_env: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    await sample(clean_env)
    argv = shlex.split(line)
    argv = argv[: argv.index(">")] if ">" in argv else argv  # the shell's redirection
    assert argv[0] == "walletpass-tui"
    capsys.readouterr()
    code = await asyncio.to_thread(main, [*argv[1:], *(["--json"] if "list" in argv else [])])
    out, err = capsys.readouterr()
    assert code == 0, err
    found = json.loads(out) if "list" in argv else [json.loads(x) for x in out.splitlines()]
    assert found, line
