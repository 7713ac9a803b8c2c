"""What is at a home's schema path but was not made by walletpass-tui: another program's SQLite
database (put there, or reached through a symlink), or one holding a table named like ours with
other columns. Real ``walletpass-tui`` processes: the reading commands say so in one line with
the fix, ``schema rebuild`` and a running ``listen`` delete it (a symlink's target is never
opened, written or chmod-ed) and learn into a file of their own."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_helpers import DEADLINE_S, post, start_listen

from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.schemas.schema_file import schemas_path
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store

pytestmark = pytest.mark.slow

BODY = json.dumps({"type": "pass.activated", "data": {"x": 1}}).encode()


def walletpass(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def foreign_database(path: Path, script: str) -> None:
    db = sqlite3.connect(path)
    try:
        db.executescript(script)
    finally:
        db.close()
    os.chmod(path, 0o644)


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.S_IMODE(path.stat().st_mode)


def learned_samples(history: Path) -> int:
    groups = SchemaReader(history).groups()
    return sum(g.samples for g in groups if g.group.topic == "pass.activated")


def receive_one(history: Path, samples: int = 1) -> str:
    """Run ``listen``, post one signed delivery, wait until ``pass.activated`` has ``samples``
    learned; listen's stderr."""
    proc, url = start_listen()
    try:
        assert post(url, "msg_one", BODY) == 200
        deadline = time.monotonic() + DEADLINE_S  # "did not hang" only
        while True:
            try:
                if learned_samples(history) == samples:
                    break
            except SchemaError:  # the file is being made anew: asked again
                if time.monotonic() > deadline:
                    raise
            assert time.monotonic() < deadline, "the delivery was never learned"
            time.sleep(0.1)
        assert proc.interrupt() == 0
    finally:
        proc.kill()
    return "\n".join(proc.err.rest())


def not_ours_line(history: Path) -> str:
    return f"walletpass-tui: error: The schema file {schemas_path(history)} is not one walletpass-tui made ("


@pytest.mark.parametrize("through", ["symlink", "file"])
def test_another_programs_database_at_the_schema_path_is_never_written_into(
    clean_env: Path, tmp_path: Path, through: str
) -> None:
    clean_env.mkdir(parents=True)
    history = clean_env / "deliveries.sqlite3"
    victim = tmp_path / "victim.db"
    foreign_database(victim, "CREATE TABLE notes(t); INSERT INTO notes VALUES ('keep me');")
    before = fingerprint(victim)
    if through == "symlink":
        schemas_path(history).symlink_to(victim)
    else:
        schemas_path(history).write_bytes(victim.read_bytes())

    done = walletpass("schema", "list")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(not_ours_line(history)), done.stderr
    assert done.stderr.count("\n") == 1
    assert "walletpass-tui schema rebuild" in done.stderr

    err = receive_one(history)
    assert "failed" not in err, err
    mine = schemas_path(history)
    assert not mine.is_symlink() and stat.S_IMODE(mine.stat().st_mode) == 0o600
    assert fingerprint(victim) == before  # not opened for writing, not chmod-ed
    with sqlite3.connect(f"file:{victim}?mode=ro", uri=True) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["notes"]
    listed = walletpass("schema", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(g["topic"], g["samples"]) for g in json.loads(listed.stdout)] == [
        ("pass.activated", 1)
    ]


async def test_a_table_named_like_ours_with_other_columns_is_said_then_made_anew(
    clean_env: Path,
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True)
    history = clean_env / "deliveries.sqlite3"
    async with await Store.open(history) as store:
        await store.record(
            Attempt(
                received_at_ms=1_795_000_000_000,
                method="POST",
                path="/webhooks",
                headers=(),
                body=BODY,
                verdict=VERIFIED,
                reason="verified",
                status=200,
                webhook_id="msg_stored",
                topic="pass.activated",
            )
        )
        await store.settled()
    paths_table = "CREATE TABLE paths(x); INSERT INTO paths VALUES ('not ours');"
    foreign_database(schemas_path(history), paths_table)

    for argv in (["schema", "list"], ["schema", "show", "activated"], ["schema", "drift"]):
        done = await asyncio.to_thread(walletpass, *argv)
        assert done.returncode == 1, (argv, done.stdout)
        assert done.stderr.startswith(not_ours_line(history)), done.stderr
        assert "its table paths has other columns" in done.stderr
        assert done.stderr.count("\n") == 1
    done = await asyncio.to_thread(walletpass, "schema", "rebuild")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Learned 1 verified deliveries again")
    assert await asyncio.to_thread(learned_samples, history) == 1

    # The same file under a running receiver: it learns on, into a file of its own.
    for file in (schemas_path(history), *schemas_path(history).parent.glob("*-schemas-*")):
        file.unlink()
    foreign_database(schemas_path(history), paths_table)
    err = await asyncio.to_thread(receive_one, history, 2)  # the stored one and the new one
    assert "failed" not in err, err
