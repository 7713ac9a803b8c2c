"""Closing the terminal (SIGHUP) of a receiver with a tunnel stops the tunnel: the real binary in
a tmux session with a fake ``cloudflared`` on PATH, the session killed as a closed window is, and
the fake's processes counted in /proc. cloudflared runs in a session of its own (so that Ctrl-C
reaches the receiver first), so it never hears the terminal close: the receiver stops it."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tunnel_helpers import DEADLINE_S, FakeCloudflared, install_fake

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


class Terminal:
    """tmux on a socket of its own (never another program's server), one session per command."""

    def __init__(self) -> None:
        self.socket = f"wp-hangup-{os.getpid()}-{time.monotonic_ns() % 10**6}"

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=DEADLINE_S
        )
        return done.stdout

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> int:
        """Run ``walletpass-tui ARGV`` as the session's only process; its pid."""
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = shlex.join([sys.executable, "-m", "walletpass_tui", *argv])
        line = f"exec env -u COLUMNS -u LINES {exports} {command}"
        self.tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "40", line)
        return int(self.tmux("display-message", "-p", "-t", name, "#{pane_pid}"))

    def wait_for(self, name: str, text: str) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while text not in (shown := self.tmux("capture-pane", "-p", "-t", name)):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on {name}:\n{shown}")
            time.sleep(0.1)

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    term.close()


def until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + DEADLINE_S  # a "did not hang" guard, never a timing assertion
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/status").read_text().count("State:\tZ") == 1


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["listen", "--port", "0", "--tunnel", "cloudflared"], "Public URL:"),
        (["--port", "0", "--tunnel", "cloudflared"], "public https://"),  # the dashboard
        (["demo", "--port", "0", "--tunnel", "cloudflared"], "public https://"),
    ],
    ids=["listen", "dashboard", "demo"],
)
def test_closing_the_terminal_stops_the_tunnel(
    clean_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    terminal: Terminal,
    argv: list[str],
    shown: str,
) -> None:
    fake: FakeCloudflared = install_fake(tmp_path, monkeypatch)
    env = {
        name: os.environ[name]
        for name in ("PATH", "FAKE_CLOUDFLARED", "FAKE_CLOUDFLARED_DIR", "XDG_CONFIG_HOME")
    }
    env |= {"WALLETPASS_HOME": str(clean_env), "TERM": "xterm-256color"}
    pid = terminal.start("receiver", argv, env)
    try:
        terminal.wait_for("receiver", shown)
        [(tunnel_pid, _, _)] = fake.starts()
        assert fake.running() == [tunnel_pid]

        terminal.tmux("kill-session", "-t", "receiver")  # the window closed: SIGHUP

        assert until(lambda: gone(pid)), "the receiver still runs"
        assert fake.running() == []  # stopped by the receiver before it ended
        assert not (clean_env / "run" / "receiver.json").exists()  # and its state withdrawn
    finally:
        if not gone(pid):  # a receiver that froze is not left behind by a failing run
            os.kill(pid, 15)
            if not until(lambda: gone(pid)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
        for left in fake.running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(left, 9)
