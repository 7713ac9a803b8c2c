"""Real ``walletpass-tui`` processes for the tests of ``events tail`` and friends: a ``listen`` on a
free port, any command whose output lines are read as they come, signed posts to a receiver."""

from __future__ import annotations

import base64
import os
import pty
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime

import httpx

from walletpass_tui.webhooks.verify import sign

SECRET = "whsec_" + base64.b64encode(b"t" * 32).decode()
STRANGER = "whsec_" + base64.b64encode(b"x" * 32).decode()
DEADLINE_S = 30.0  # "did not hang" guard, never a timing assertion


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lines:
    """The lines a stream prints, read by a thread as they come."""

    def __init__(self, stream: object) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def next(self, timeout: float = DEADLINE_S) -> str:
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout} s; so far {self.seen}") from None
        if line is None:
            raise AssertionError(f"the stream ended; so far {self.seen}")
        self.seen.append(line)
        return line

    def until(self, predicate: object, timeout: float = DEADLINE_S) -> str:
        """The first line (from now on) for which ``predicate(line)`` is true."""
        end = time.monotonic() + timeout
        while True:
            line = self.next(max(0.1, end - time.monotonic()))
            if predicate(line):  # type: ignore[operator]
                return line

    def rest(self) -> list[str]:
        """What is left, once the process ended."""
        left = []
        while True:
            line = self._queue.get(timeout=DEADLINE_S)
            if line is None:
                return left
            left.append(line)


class Proc:
    """A walletpass-tui process with its stdout and stderr read line by line."""

    def __init__(self, *argv: str, own_session: bool = False) -> None:
        """``own_session``: in a terminal session of its own, as in a terminal of its own."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
            start_new_session=own_session,
        )
        self.out = Lines(self.proc.stdout)
        self.err = Lines(self.proc.stderr)

    def interrupt(self) -> int:
        """Ctrl-C; the exit status."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=DEADLINE_S)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_listen(
    *args: str, port: int | None = None, secret: str = SECRET, own_session: bool = False
) -> tuple[Proc, str]:
    """``listen --json`` on ``port`` (default: a free one); (the process, its URL) once it is
    ready. ``own_session``: as ``Proc``'s."""
    port = port or free_port()
    proc = Proc(
        "listen", "--port", str(port), "--json", "--secret", secret, *args, own_session=own_session
    )
    proc.err.until(lambda line: line.startswith("History:"))
    return proc, f"http://127.0.0.1:{port}/webhooks"


def post(url: str, msg_id: str, body: bytes, secret: str = SECRET) -> int:
    headers = sign(secret, msg_id, body, datetime.now(UTC))
    headers["Content-Type"] = "application/json"
    with httpx.Client(timeout=DEADLINE_S, trust_env=False) as client:
        return client.post(url, content=body, headers=headers).status_code


# What a progress line ends with when it is erased (carriage return, erase the line).
CLEAR = "\r\x1b[2K"


def run_with_stderr_on_a_pty(*argv: str, stdout: object) -> tuple[int, str]:
    """Run walletpass-tui with stderr on a new pseudo-terminal; (status, what the pty got)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", *argv],
            stdout=stdout,
            stderr=follower,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ),
        )
        os.close(follower)
        got = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            got += chunk
        return proc.wait(timeout=60), got.decode("utf-8", "replace")
    finally:
        os.close(leader)
