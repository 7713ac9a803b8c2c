"""The help examples of events tail, events stats and completion run as printed
(in bash, from the installed command, on a history); those of ``trigger``, ``sim emit`` and
``check`` (which name a receiver, a secret or a simulator of yours) parse as printed."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from walletpass_tui.cli import build_parser, main
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store


def examples(*command: str) -> list[str]:
    """The ``walletpass-tui ...`` lines of a command's help, as printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*command, "--help"]) == 0
    text = out.getvalue()
    starts = [text.index(word) for word in ("\nexample", "\ninstall") if word in text]
    epilog = text[min(starts) :]
    found = []
    for line in epilog.splitlines():
        line = line.strip()
        if line.startswith(("bash:", "zsh:", "fish:")):
            line = line.split(":", 1)[1].strip()
        if "walletpass-tui " in line and not line.startswith("("):
            found.append(line.split("  #")[0].strip())
    assert found, text
    return found


@pytest.fixture
async def history(clean_env: Path) -> Path:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        await store.record(
            Attempt(
                received_at_ms=int(time.time() * 1000),
                method="POST",
                path="/webhooks",
                headers=(),
                body=b'{"type": "pass.activated"}',
                verdict=VERIFIED,
                reason="verified",
                status=200,
                webhook_id="msg_1",
                topic="pass.activated",
            )
        )
    return clean_env


def bash(line: str, home: Path, **kwargs: object) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "HOME": str(home.parent / "user"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return subprocess.Popen(
        ["bash", "-c", line],
        env=env,
        cwd=home.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


@pytest.mark.slow
def test_the_stats_and_completion_examples_run_as_printed(history: Path) -> None:
    lines = examples("events", "stats") + examples("completion")
    assert len(lines) == 7
    for line in lines:
        proc = bash(line, history)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{line}\n{err}"
        assert err == "", line
    user = history.parent / "user"
    assert (user / ".local/share/bash-completion/completions/walletpass-tui").stat().st_size
    assert (user / ".zfunc/_walletpass-tui").stat().st_size
    assert (user / ".config/fish/completions/walletpass-tui.fish").stat().st_size


def test_the_tail_examples_run_until_ctrl_c(history: Path) -> None:
    lines = examples("events", "tail")
    assert len(lines) == 4
    for line in lines:
        if "| jq" in line and shutil.which("jq") is None:
            line = line.split("|")[0]  # the pipe's reader is not installed here
        proc = bash(f"exec {line}" if "|" not in line else line, history, start_new_session=True)
        assert proc.stderr is not None
        said = proc.stderr.readline()
        assert said.startswith("Following"), f"{line}: {said}"
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
        assert proc.returncode in (0, -signal.SIGINT, 130), line


@pytest.mark.parametrize("command", [("trigger",), ("sim", "emit"), ("check",)])
def test_the_examples_naming_your_own_services_parse(command: tuple[str, ...]) -> None:
    for line in examples(*command):
        words = shlex.split(line.split("|")[0].split(">")[0])
        argv = words[words.index("walletpass-tui") + 1 :]  # after any NAME=value before it
        parser = build_parser(argv)
        parser.parse_args(argv)  # a usage error would exit 2 here
