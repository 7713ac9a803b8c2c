"""The fake ``cloudflared`` on PATH (``fake_cloudflared.py`` beside this file), a way to count the
processes it left, and a real ``listen`` process with its output read line by line."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import httpx
import pytest

from walletpass_tui.webhooks.verify import sign

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

    def in_group(self, pgid: int) -> list[int]:
        """The pids of the processes of process group ``pgid`` still running (zombies
        excluded): those the fake started, whether its first process is gone or not."""
        found = []
        for pid in self.running():
            try:
                if os.getpgid(pid) == pgid:
                    found.append(pid)
            except ProcessLookupError:  # gone meanwhile
                continue
        return found

    def kill_leftovers(self) -> None:
        """Kill whatever of the fake still runs (after a test that failed halfway)."""
        for pid in self.running():
            with contextlib.suppress(ProcessLookupError):  # gone meanwhile
                os.kill(pid, signal.SIGKILL)

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


DEADLINE_S = 60.0  # "did not hang" guard, never a timing assertion


class Output:
    """The lines a process prints on one stream, read by a thread as they come."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, predicate: Callable[[str], bool], timeout: float = DEADLINE_S) -> str:
        """The first line from now on for which ``predicate`` holds."""
        end = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no such line within {timeout} s; so far {self.seen}"
                ) from None
            if line is None:
                raise AssertionError(f"the stream ended; so far {self.seen}")
            self.seen.append(line)
            if predicate(line):
                return line

    def rest(self) -> list[str]:
        """Every line left, once the process ended."""
        while (line := self._queue.get(timeout=DEADLINE_S)) is not None:
            self.seen.append(line)
        return self.seen


class Listen:
    """A real ``walletpass-tui listen`` process (more arguments given), its output read."""

    def __init__(self, *argv: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", "listen", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env or dict(os.environ),
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.out = Output(self.proc.stdout)
        self.err = Output(self.proc.stderr)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        """Send ``signum``; the exit status."""
        self.proc.send_signal(signum)
        return self.proc.wait(timeout=DEADLINE_S)

    def kill(self) -> None:
        """Stop it (a test that failed halfway): SIGTERM first, so it stops its tunnel too; a
        SIGKILL would leave the tunnel's program running."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:  # deaf to SIGTERM: killed
                self.proc.kill()
                self.proc.wait()


def signed_post(url: str, msg_id: str, body: bytes, secret: str) -> httpx.Response:
    headers = {**sign(secret, msg_id, body, datetime.now(UTC)), "Content-Type": "application/json"}
    with httpx.Client(timeout=DEADLINE_S, trust_env=False) as client:
        return client.post(url, content=body, headers=headers)
