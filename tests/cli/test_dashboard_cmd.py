"""The dashboard and the demo on a port that is taken: one clear line and exit 1, never a dashboard
that is not listening."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from walletpass_tui.cli import main
from walletpass_tui.ui.app import WalletPassApp


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


@pytest.fixture
def no_screen(monkeypatch: pytest.MonkeyPatch) -> list[WalletPassApp]:
    """Records any dashboard that would have been shown."""
    shown: list[WalletPassApp] = []

    async def run_async(self: WalletPassApp, **kwargs: Any) -> None:
        shown.append(self)

    monkeypatch.setattr(WalletPassApp, "run_async", run_async)
    return shown


def test_the_dashboard_on_a_taken_port_exits_1_without_a_screen(
    clean_env: Path,
    taken_port: int,
    no_screen: list[WalletPassApp],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--port", str(taken_port)])
    err = capsys.readouterr().err
    assert code == 1 and not no_screen
    assert err.count("\n") == 1 and f"Port {taken_port} is already in use" in err
    assert "Traceback" not in err


def test_the_demo_on_a_taken_port_exits_1_without_a_screen(
    clean_env: Path,
    taken_port: int,
    no_screen: list[WalletPassApp],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["demo", "--port", str(taken_port)])
    err = capsys.readouterr().err
    assert code == 1 and not no_screen
    assert err.count("\n") == 1 and f"Port {taken_port} is already in use" in err


@pytest.mark.slow
def test_a_second_demo_on_one_home_does_not_wipe_the_first(
    clean_env: Path, no_screen: list[WalletPassApp], capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process holds the demo's lock (a demo running): this one refuses, its data kept."""
    data = clean_env / "demo" / "deliveries.sqlite3"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"the running demo's history")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from pathlib import Path
                from walletpass_tui.runtime.demo import data_lock
                with data_lock(Path({str(clean_env)!r})):
                    print("locked", flush=True)
                    sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        code = main(["demo"])
    finally:
        holder.communicate("", timeout=10)
    err = capsys.readouterr().err
    assert code == 1 and not no_screen
    assert f"Another demo is running on {clean_env} (pid {holder.pid})" in err
    assert data.read_bytes() == b"the running demo's history"
    # Once the first demo is gone the lock is free again.
    assert main(["demo"]) == 0 and len(no_screen) == 1
