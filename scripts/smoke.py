"""Smoke commands against an installed walletpass-tui: the real binary, a fresh home, 127.0.0.1.

    python scripts/smoke.py [--bin PATH/TO/walletpass-tui]

Runs what a new user runs first, each as a process: ``--version``, ``config show --json``,
``events list --json`` on a fresh home, ``listen`` receiving one signed delivery from ``trigger``,
a ``relay serve`` storing one through its ingress, and the dashboard drawing its first frame in
a pseudo-terminal and quitting on Ctrl+Q. ``tests/test_packaging.py`` runs it against the lowest
versions of the dependencies that ``pyproject.toml`` declares. Exit 0 when every step works; on a
failure, one line saying which step and what it printed, and exit 1.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

SECRET = "whsec_" + base64.b64encode(b"smoke test signing secret, 32 b.").decode()
DEADLINE_S = 60.0


class SmokeError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(binary: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [binary, *args], env=env, capture_output=True, text=True, timeout=DEADLINE_S
    )
    if done.returncode != 0:
        raise SmokeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SmokeError(f"the server on port {port} ended with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise SmokeError(f"nothing listened on port {port} within {DEADLINE_S:g} s")


@contextlib.contextmanager
def server(binary: str, env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [binary, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            raise SmokeError(f"{' '.join(args[:2])} did not stop on Ctrl+C") from None


def receive(binary: str, env: dict[str, str]) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/webhooks"
    with server(binary, env, "listen", "--port", str(port), "--secret", SECRET) as listen:
        wait_for_port(port, listen)
        run(binary, env, "trigger", "pass.activated", "--to", url, "--secret", SECRET)
    rows = json.loads(run(binary, env, "events", "list", "--json"))
    if [row.get("verdict") for row in rows] != ["verified"]:
        raise SmokeError(f"listen stored {rows!r}, not one verified delivery")


def relay(binary: str, env: dict[str, str]) -> None:
    port = free_port()
    relay_env = {**env, "WALLETPASS_HOME": env["WALLETPASS_HOME"] + "-relay"}
    base = f"http://127.0.0.1:{port}"
    serve = ("relay", "serve", "--host", "127.0.0.1", "--port", str(port))
    with server(binary, relay_env, *serve) as process:
        wait_for_port(port, process)
        added = run(
            binary, relay_env, "relay", "channel", "add", "smoke", "--public-url", base, "--json"
        )
        ingress = json.loads(added)["ingress_url"]
        run(binary, env, "trigger", "pass.activated", "--to", ingress, "--secret", SECRET)
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as answer:  # noqa: S310 - http://127.0.0.1 only
            if answer.status != 200:
                raise SmokeError(f"/healthz answered {answer.status}")


def dashboard(binary: str, env: dict[str, str]) -> None:
    """The dashboard in a pseudo-terminal: its first frame, then Ctrl+Q ends it with 0."""
    port = free_port()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the dashboard on a 120x36 terminal
        os.environ.clear()
        os.environ.update({**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "36"})
        os.execv(binary, [binary, "--port", str(port)])  # noqa: S606 - the binary under test
    seen = b""
    deadline = time.monotonic() + DEADLINE_S
    try:
        while b"Events" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                with contextlib.suppress(OSError):
                    seen += os.read(fd, 65536)
        if b"Events" not in seen:
            raise SmokeError("the dashboard drew no Events pane: " + _tail(seen))
        os.write(fd, b"\x11")  # Ctrl+Q
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                if os.waitstatus_to_exitcode(status) != 0:
                    raise SmokeError("the dashboard ended with a failure: " + _tail(seen))
                return
            with contextlib.suppress(OSError):
                if select.select([fd], [], [], 0.2)[0]:
                    seen += os.read(fd, 65536)
        raise SmokeError("the dashboard did not end on Ctrl+Q")
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


def _tail(raw: bytes) -> str:
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b" ", raw).decode("utf-8", "replace")
    return " ".join(text.split())[-300:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bin", default=shutil.which("walletpass-tui"), help="the installed binary"
    )
    args = parser.parse_args()
    if not args.bin:
        print("smoke: no walletpass-tui on PATH; pass --bin.", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="walletpass-smoke-") as top:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": top,
            "WALLETPASS_HOME": str(Path(top) / "home"),
            "LANG": "C.UTF-8",
        }
        steps = [
            ("--version", lambda: run(args.bin, env, "--version")),
            (
                "config show --json",
                lambda: json.loads(run(args.bin, env, "config", "show", "--json")),
            ),
            (
                "events list --json on a fresh home",
                lambda: _empty(run(args.bin, env, "events", "list", "--json")),
            ),
            ("listen receives a delivery from trigger", lambda: receive(args.bin, env)),
            ("relay serve stores a delivery", lambda: relay(args.bin, env)),
            ("the dashboard draws and quits", lambda: dashboard(args.bin, env)),
        ]
        for name, step in steps:
            try:
                step()
            except (SmokeError, subprocess.SubprocessError, OSError, ValueError) as exc:
                print(f"smoke: {name}: {exc}", file=sys.stderr)
                return 1
            print(f"ok  {name}", flush=True)
    return 0


def _empty(text: str) -> None:
    if json.loads(text) != []:
        raise SmokeError(f"expected [], got {text.strip()[:200]}")


if __name__ == "__main__":
    sys.exit(main())
