"""``--port`` is bounded when the command line is read, for every command that listens."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from walletpass_tui.cli import main


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("command", [["demo"], ["sim", "serve"], ["listen"]])
@pytest.mark.parametrize("port", ["65536", "-1", "99999999", "eighty"])
async def test_a_port_outside_0_to_65535_is_a_usage_error_before_anything_starts(
    clean_env: Path, capsys: pytest.CaptureFixture[str], command: list[str], port: str
) -> None:
    code, err = await run(capsys, *command, "--port", port)
    assert code == 2
    assert "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "--port" in line and "65535" in line, line
