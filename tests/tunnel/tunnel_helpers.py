"""The fake ``cloudflared`` on PATH (``fake_cloudflared.py`` beside this file) and a way to count
the processes it left."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

FAKE_SOURCE = Path(__file__).with_name("fake_cloudflared.py")


@dataclass
class FakeCloudflared:
    """Where the fake lives (``program``) and what it wrote about each start."""

    program: Path
    state: Path

    def starts(self) -> list[tuple[int, int, str]]:
        """(pid, public port, host) of each start so far."""
        try:
            text = (self.state / "starts").read_text()
        except FileNotFoundError:
            return []
        rows = []
        for line in text.splitlines():
            pid, port, host = line.split()
            rows.append((int(pid), int(port), host))
        return rows

    def running(self) -> list[int]:
        """The pids of every process of the fake still running (zombies excluded)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                status = (entry / "status").read_text()
            except OSError:  # gone meanwhile, or not ours to read
                continue
            if str(self.program).encode() in cmdline and "State:\tZ" not in status:
                found.append(int(entry.name))
        return found

    def env(self, mode: str = "quick") -> dict[str, str]:
        """The environment a walletpass-tui process finds the fake with."""
        return {
            **os.environ,
            "PATH": f"{self.program.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAKE_CLOUDFLARED": mode,
            "FAKE_CLOUDFLARED_DIR": str(self.state),
        }


def install_fake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str = "quick"
) -> FakeCloudflared:
    """The fake as ``cloudflared`` first on PATH (run by this interpreter), in ``mode``."""
    bin_dir = tmp_path / "bin"
    state = tmp_path / "cloudflared-state"
    bin_dir.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    program = bin_dir / "cloudflared"
    program.write_text(f"#!{sys.executable}\n" + FAKE_SOURCE.read_text())
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_CLOUDFLARED", mode)
    monkeypatch.setenv("FAKE_CLOUDFLARED_DIR", str(state))
    return FakeCloudflared(program, state)
