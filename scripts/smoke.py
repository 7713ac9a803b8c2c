"""Smoke commands against an installed walletpass-tui: the real binary, a fresh home, 127.0.0.1.

    python scripts/smoke.py [--bin PATH/TO/walletpass-tui]

Runs what a new user runs first, each as a process: ``--version``, ``config show --json``,
``events list --json`` on a fresh home, the first hour's loop with nothing restated (``listen
--forward-to`` an app, ``trigger activated``, ``events show last``, ``events replay last``), a
``relay serve`` storing one through its ingress, ``web`` serving its page, the dashboard drawing its first frame in a
pseudo-terminal and quitting on Ctrl+Q, and the demo drawing its first deliveries. ``tests/test_packaging.py`` runs it against the lowest
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


class YourApp:
    """A local app on 127.0.0.1 that answers 204 to every POST and counts them."""

    def __init__(self) -> None:
        import http.server
        import threading

        posts: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                posts.append(self.headers.get("webhook-id") or "")
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:  # quiet
                pass

        self.posts = posts
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def receive(binary: str, env: dict[str, str]) -> None:
    """The first hour's loop with nothing restated: listen (forwarding to an app), trigger
    activated, events show last, events replay last."""
    port = free_port()
    app = YourApp()
    try:
        with server(binary, env, "listen", "--port", str(port), "--forward-to", app.url) as listen:
            wait_for_port(port, listen)
            run(binary, env, "trigger", "activated")  # to this home's receiver, its test secret
            deadline = time.monotonic() + DEADLINE_S
            while not app.posts and time.monotonic() < deadline:
                time.sleep(0.05)
            shown = json.loads(run(binary, env, "events", "show", "last", "--json"))
            verdicts = [a.get("verdict") for a in shown.get("attempts", [])]
            if verdicts != ["verified"] or app.posts != [shown.get("webhook_id")]:
                raise SmokeError(f"listen stored {verdicts!r} and forwarded {app.posts!r}")
            run(binary, env, "events", "replay", "last")  # to where it was forwarded, re-signed
            if len(app.posts) != 2:
                raise SmokeError(f"the replay did not reach the app: {app.posts!r}")
    finally:
        app.close()


def web(binary: str, env: dict[str, str]) -> None:
    """``web`` beside a running ``listen``: the page at the URL it prints, token included."""
    port = free_port()
    with server(binary, env, "listen", "--port", str(port)) as listen:
        wait_for_port(port, listen)
        process = subprocess.Popen(
            [binary, "web", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            url = ""
            deadline = time.monotonic() + DEADLINE_S
            while not url and time.monotonic() < deadline:
                line = process.stdout.readline()
                if not line:
                    raise SmokeError(f"web ended with {process.wait()} before printing its URL")
                if line.strip().startswith("http://127.0.0.1:"):
                    url = line.strip()
            with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - http://127.0.0.1 only
                page = answer.read(1 << 20)
            if answer.status != 200 or b"<html" not in page.lower():
                raise SmokeError(f"web answered {answer.status} without a page")
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                process.kill()


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


def demo(binary: str, env: dict[str, str]) -> None:
    """The demo in a pseudo-terminal: deliveries drawn in its Events pane (the first one is where
    a textual too old for this code fails), then Ctrl+Q ends it with 0."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the demo on a 120x36 terminal
        os.environ.clear()
        os.environ.update({**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "36"})
        os.execv(binary, [binary, "demo", "--interval", "0.2"])  # noqa: S606 - the binary under test
    seen = b""
    deadline = time.monotonic() + DEADLINE_S
    try:
        while time.monotonic() < deadline and _plain(seen).count("pass.") < 3:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                raise SmokeError("the demo ended before drawing deliveries: " + _tail(seen))
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                with contextlib.suppress(OSError):
                    seen += os.read(fd, 65536)
        if _plain(seen).count("pass.") < 3:
            raise SmokeError("the demo drew no deliveries: " + _tail(seen))
        os.write(fd, b"\x11")  # Ctrl+Q
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                if os.waitstatus_to_exitcode(status) != 0:
                    raise SmokeError("the demo ended with a failure: " + _tail(seen))
                return
            with contextlib.suppress(OSError):
                if select.select([fd], [], [], 0.2)[0]:
                    seen += os.read(fd, 65536)
        raise SmokeError("the demo did not end on Ctrl+Q")
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


def _plain(raw: bytes) -> str:
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b" ", raw).decode("utf-8", "replace")


def _tail(raw: bytes) -> str:
    return " ".join(_plain(raw).split())[-300:]


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
            (
                "listen, trigger, events show and replay last, with nothing restated",
                lambda: receive(args.bin, env),
            ),
            ("relay serve stores a delivery", lambda: relay(args.bin, env)),
            ("web serves the dashboard's page", lambda: web(args.bin, env)),
            ("the dashboard draws and quits", lambda: dashboard(args.bin, env)),
            ("the demo draws its deliveries and quits", lambda: demo(args.bin, env)),
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
