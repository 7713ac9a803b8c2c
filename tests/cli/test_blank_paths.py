"""A path setting that is empty (``--home "$DIR"`` with DIR unset) or only white space is refused
naming where it came from, before anything is read or written: never the default home, whose
history a prune would then delete; never a directory named " " made in the working directory.
Real ``walletpass-tui`` processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_helpers import DEADLINE_S

from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store


def run(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one error line a refused command printed (argparse puts its usage above it)."""
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    return errors[0]


@pytest.fixture
def default_home(clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The platform's default home (WALLETPASS_HOME unset), holding a history of one delivery."""
    monkeypatch.delenv("WALLETPASS_HOME")
    home = tmp_path / "xdg-data" / "walletpass-tui"
    home.mkdir(parents=True)

    async def seed() -> None:
        async with await Store.open(home / "deliveries.sqlite3") as store:
            await store.record(
                Attempt(
                    received_at_ms=int(time.time() * 1000) - 60_000,
                    method="POST",
                    path="/webhooks",
                    headers=(("webhook-id", "msg_kept"),),
                    body=b"{}",
                    verdict=VERIFIED,
                    reason="verified",
                    status=200,
                    webhook_id="msg_kept",
                )
            )
            await store.settled()

    asyncio.run(seed())
    return home


def attempts_in_default_home(cwd: Path) -> int:
    done = run("events", "stats", "--json", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["totals"]["attempts"])


def test_an_empty_home_never_prunes_the_default_homes_history(
    default_home: Path, tmp_path: Path
) -> None:
    assert attempts_in_default_home(tmp_path) == 1
    for flag in ("", " ", "\t"):
        done = run("--home", flag, "events", "prune", "--older-than", "0", "--yes", cwd=tmp_path)
        assert done.returncode == 2
        line = one_error_line(done)
        assert "argument --home: the value is" in line
        assert "give a directory, or leave --home out to use the default home" in line
    done = run("events", "prune", "--older-than", "0", "--yes", cwd=tmp_path, WALLETPASS_HOME="")
    assert done.returncode == 1
    assert one_error_line(done).endswith(
        "$WALLETPASS_HOME is empty (an unset shell variable?); give a directory, or unset it "
        "to use the default home."
    )
    assert attempts_in_default_home(tmp_path) == 1


def test_a_blank_home_from_the_environment_or_the_file_makes_no_directory(
    clean_env: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = run("listen", "--print-secret", cwd=work, WALLETPASS_HOME=" ")
    assert done.returncode == 1 and done.stdout == ""
    assert "$WALLETPASS_HOME is only white space; give a directory" in one_error_line(done)
    config = tmp_path / "config.toml"
    config.write_text('[receiver]\nport = 9999\ndata_dir = "  "\n')
    done = run("--config", str(config), "listen", "--print-secret", cwd=work)
    assert done.returncode == 1 and done.stdout == ""
    assert one_error_line(done).endswith(
        f"home in the config file {config} is only white space; give a directory, or remove "
        "it to use the default home."
    )
    assert list(work.iterdir()) == []
    assert not clean_env.exists()


def test_an_empty_config_or_log_file_is_refused_and_nothing_is_written(
    clean_env: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for argv, env, status, says in (
        (("--config", ""), {}, 2, "argument --config: the value is empty"),
        (("--log-file", " "), {}, 2, "argument --log-file: the value is only white space"),
        ((), {"WALLETPASS_LOG": " "}, 2, "$WALLETPASS_LOG is only white space; give a file"),
        ((), {"WALLETPASS_LOG": ""}, 2, "$WALLETPASS_LOG is empty (an unset shell variable?)"),
    ):
        done = run(*argv, "config", "show", cwd=work, **env)
        assert done.returncode == status, (argv, env, done.stderr)
        assert says in one_error_line(done)
        assert done.stdout == ""
    assert list(work.iterdir()) == []


def test_an_empty_relay_database_is_refused_not_read_as_the_default(
    clean_env: Path, tmp_path: Path
) -> None:
    done = run("relay", "serve", "--database", "", cwd=tmp_path)
    assert done.returncode == 2
    assert "argument --database: the value is empty" in one_error_line(done)
    done = run("relay", "serve", cwd=tmp_path, WALLETPASS_RELAY_DATABASE=" ")
    assert done.returncode == 1
    assert "$WALLETPASS_RELAY_DATABASE is only white space; give a PostgreSQL URL or a " in (
        one_error_line(done)
    )
    assert not clean_env.exists()
