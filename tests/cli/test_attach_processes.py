"""The real binary in a real terminal: ``walletpass-tui attach`` and a plain ``walletpass-tui`` in
tmux panes of 120x36 over a ``listen`` process. The screen is read with ``tmux capture-pane`` and
polled with a generous "did not hang" deadline; keys go in with ``tmux send-keys``."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_helpers import DEADLINE_S, Proc, post, start_listen

from walletpass_tui.cli import give_way

BODY = b'{"type": "pass.activated", "data": {"passId": "pass_tmux"}}'

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """tmux on a socket of its own (never another program's server), one session per command."""

    def __init__(self) -> None:
        self.socket = f"wp-attach-{os.getpid()}-{time.monotonic_ns() % 10**6}"

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=DEADLINE_S
        )
        return done.stdout

    def start(self, name: str, argv: list[str], home: Path) -> None:
        env = {
            "WALLETPASS_HOME": str(home),
            "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME", str(home / "xdg")),
            "TERM": "xterm-256color",
        }
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = shlex.join([sys.executable, "-m", "walletpass_tui", *argv])
        # COLUMNS and LINES are unset (a test runner may set them): the size is the pane's.
        line = f"exec env -u COLUMNS -u LINES {exports} {command}"
        self.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "36", line)
        # The pane stays after the command ends, so what it printed last can still be read.
        self.tmux("set-option", "-t", name, "remain-on-exit", "on")

    def attach_then(self, name: str, home: Path, then: str, before: str = "") -> None:
        """``attach`` on ``home`` in a new session, the shell line ``before`` run first and
        ``then`` after it ends."""
        dashboard = shlex.join([sys.executable, "-m", "walletpass_tui", "attach"])
        line = (
            f"{before}exec env -u COLUMNS -u LINES WALLETPASS_HOME={shlex.quote(str(home))} "
            f"TERM=xterm-256color sh -c {shlex.quote(dashboard + '; ' + then)}"
        )
        self.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "36", line)

    def screen(self, name: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", name)

    def wait_for(self, name: str, text: str) -> str:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            shown = self.screen(name)
            if text in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on {name}:\n{shown}")
            time.sleep(0.1)

    def keys(self, name: str, *keys: str) -> None:
        self.tmux("send-keys", "-t", name, *keys)

    def ended(self, name: str) -> bool:
        return self.tmux("display-message", "-p", "-t", name, "#{pane_dead}").strip() == "1"

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    term.close()


@pytest.mark.parametrize("sig", ["TERM", "HUP"])
def test_sigterm_or_sighup_ends_the_dashboard_in_order(
    clean_env: Path, terminal: Terminal, tmp_path: Path, sig: str
) -> None:
    """The terminal is given back usable (echo and line input on) and, where autogroups exist,
    the session its earlier priority."""
    listen, _ = start_listen(own_session=True)
    after = tmp_path / "after.txt"
    try:
        terminal.attach_then(
            "one",
            clean_env,
            f"cat /proc/self/autogroup > {after} 2>&1; stty -a >> {after} 2>&1; sleep 60",
        )
        terminal.wait_for("one", f"attached to listen, pid {listen.proc.pid}")
        shell = int(terminal.tmux("display-message", "-p", "-t", "one", "#{pane_pid}"))
        viewer = int(
            subprocess.run(
                ["pgrep", "-P", str(shell)], capture_output=True, text=True
            ).stdout.split()[0]
        )
        os.kill(viewer, getattr(signal, f"SIG{sig}"))
        deadline = time.monotonic() + DEADLINE_S
        while "speed" not in (after.read_text() if after.exists() else ""):
            assert time.monotonic() < deadline, "the dashboard did not end"
            time.sleep(0.1)
        said = after.read_text()
        words = said.replace(";", " ").split()
        assert "echo" in words and "icanon" in words, said  # not -echo, -icanon
        if give_way.autogroup() is not None:
            assert said.split("\n")[0].endswith(" nice 0"), said
    finally:
        listen.kill()


def test_attach_and_a_plain_dashboard_follow_listen_in_real_terminals(
    clean_env: Path, terminal: Terminal
) -> None:
    listen, url = start_listen(own_session=True)
    try:
        pid = listen.proc.pid
        terminal.start("one", ["attach"], clean_env)
        terminal.wait_for("one", f"attached to listen, pid {pid}")
        # Looking gives way to receiving: listen draws the dashboard beside it, in its own
        # session at the idle policy, on this terminal; the terminal's own session is left as
        # it was.
        front = int(terminal.tmux("display-message", "-p", "-t", "one", "#{pane_pid}"))
        drawn = drawn_by(pid)
        assert len(drawn) == 1
        assert os.getsid(drawn[0]) == os.getsid(pid) != os.getsid(front)
        assert os.sched_getscheduler(drawn[0]) == os.SCHED_IDLE
        assert os.sched_getscheduler(pid) != os.SCHED_IDLE
        if give_way.autogroup(front) is not None:
            assert give_way.autogroup(front) == (give_way.autogroup(front)[0], 0)
        assert post(url, "msg_on_screen", BODY) == 200
        terminal.wait_for("one", "msg_on_screen")

        terminal.keys("one", "p")
        terminal.wait_for("one", "ACKS PAUSED")
        assert post(url, "msg_paused", BODY) == 503
        terminal.keys("one", "p")
        deadline = time.monotonic() + DEADLINE_S
        while "ACKS PAUSED" in terminal.screen("one"):
            assert time.monotonic() < deadline, "still paused"
            time.sleep(0.1)
        assert post(url, "msg_resumed", BODY) == 200

        # A plain dashboard on the same home attaches instead of failing to bind its port.
        terminal.start("two", ["--port", "0"], clean_env)
        shown = terminal.wait_for("two", f"attached to listen, pid {pid}")
        terminal.wait_for("two", "msg_resumed")
        terminal.wait_for("two", "--port is not used")
        assert "error" not in shown.lower()

        assert listen.interrupt() == 0
        for name in ("one", "two"):
            terminal.wait_for(name, "receiver stopped; showing the history")
            assert "msg_resumed" in terminal.screen(name)

        again, again_url = start_listen(own_session=True)
        try:
            terminal.wait_for("one", f"attached to listen, pid {again.proc.pid}")
            assert post(again_url, "msg_back", BODY) == 200
            terminal.wait_for("one", "msg_back")
            terminal.wait_for("two", "msg_back")
            for name in ("one", "two"):
                terminal.keys(name, "C-q")
            deadline = time.monotonic() + DEADLINE_S
            while not (terminal.ended("one") and terminal.ended("two")):
                assert time.monotonic() < deadline, "the dashboards did not quit"
                time.sleep(0.1)
            # Detaching left the receiver as it was, and ended what the first listen drew.
            assert again.proc.poll() is None
            assert not [p for p in drawn if running(p)]
            assert post(again_url, "msg_after", BODY) == 200
            assert again.interrupt() == 0
        finally:
            again.kill()
    finally:
        listen.kill()


def running(pid: int) -> bool:
    """Whether ``pid`` runs (an ended process not yet reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):  # gone
        return False
    return state != "Z"


def drawn_by(pid: int) -> list[int]:
    """The dashboards a receiver drew beside it (its children running ``attach``)."""
    found = subprocess.run(["pgrep", "-P", str(pid), "-f", "drawn-for"], capture_output=True)
    return [int(p) for p in found.stdout.split()]


def test_a_dashboard_drawn_beside_listen_ends_with_its_terminal_s_process(
    clean_env: Path, terminal: Terminal
) -> None:
    """Killed outright, the ``attach`` in the terminal takes the dashboard drawn for it along:
    nothing keeps drawing on a terminal that went back to its shell."""
    listen, _ = start_listen(own_session=True)
    try:
        terminal.start("one", ["attach"], clean_env)
        terminal.wait_for("one", f"attached to listen, pid {listen.proc.pid}")
        assert len(drawn_by(listen.proc.pid)) == 1
        front = int(terminal.tmux("display-message", "-p", "-t", "one", "#{pane_pid}"))
        os.kill(front, signal.SIGKILL)
        deadline = time.monotonic() + DEADLINE_S
        while drawn_by(listen.proc.pid):
            assert time.monotonic() < deadline, "the dashboard outlived its terminal's process"
            time.sleep(0.1)
        assert listen.proc.poll() is None
    finally:
        listen.kill()


def test_what_attach_s_flags_set_reaches_the_dashboard_drawn_beside_never_its_command_line(
    clean_env: Path, terminal: Terminal, tmp_path: Path
) -> None:
    """--api-key (a secret), --base-url and --log-file travel in the environment, which only this
    user can read; the dashboard's debug log goes to the file attach was given."""
    key = "wp_test_key_never_in_ps_1234567890"
    log_file = tmp_path / "debug.log"
    listen, _ = start_listen(own_session=True)
    try:
        argv = ["attach", "--api-key", key, "--base-url", "http://127.0.0.1:9/api"]
        terminal.start("one", [*argv, "--log-file", str(log_file)], clean_env)
        terminal.wait_for("one", f"attached to listen, pid {listen.proc.pid}")
        (drawn,) = drawn_by(listen.proc.pid)
        command = Path(f"/proc/{drawn}/cmdline").read_bytes()
        env = dict(
            item.split(b"=", 1)
            for item in Path(f"/proc/{drawn}/environ").read_bytes().split(b"\0")
            if b"=" in item
        )
        assert key.encode() not in command and b"api" not in command.lower()
        assert env[b"WALLETPASS_API_KEY"] == key.encode()
        assert env[b"WALLETPASS_BASE_URL"] == b"http://127.0.0.1:9/api"
        assert env[b"WALLETPASS_LOG"] == str(log_file).encode()
        deadline = time.monotonic() + DEADLINE_S
        while f"pid {drawn}" not in (log_file.read_text() if log_file.exists() else ""):
            assert time.monotonic() < deadline, "the drawn dashboard never logged"
            time.sleep(0.1)
        assert key not in log_file.read_text()
        terminal.keys("one", "C-q")
    finally:
        listen.kill()


def test_attach_from_a_removed_working_directory_is_drawn_beside_listen(
    clean_env: Path, terminal: Terminal, tmp_path: Path
) -> None:
    listen, _ = start_listen(own_session=True)
    gone = tmp_path / "gone"
    gone.mkdir()
    try:
        where = shlex.quote(str(gone))
        terminal.attach_then(
            "one", clean_env, "sleep 60", before=f"cd {where} && rmdir {where} && "
        )
        terminal.wait_for("one", f"attached to listen, pid {listen.proc.pid}")
        assert len(drawn_by(listen.proc.pid)) == 1
    finally:
        listen.kill()


HOG = "import time\nwhile True: time.perf_counter()"


def test_a_dashboard_that_gets_no_cpu_beside_listen_is_drawn_in_its_terminal_instead(
    clean_env: Path, terminal: Terminal
) -> None:
    """At the idle policy a dashboard gives way to all the work of the receiver's session: busy
    work there (two CPU hogs beside a listen started in this test's session) leaves it none.
    Its attach ends it and draws the dashboard itself, saying why."""
    listen, url = start_listen()  # in this test's session, where the hogs run
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        terminal.start("one", ["attach"], clean_env)
        terminal.wait_for("one", f"attached to listen, pid {listen.proc.pid}")
        # On a machine already busy in this session, it was replaced before it was seen.
        for drawn in drawn_by(listen.proc.pid):
            hogs = [
                subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(os.cpu_count() or 2)
            ]
            deadline = time.monotonic() + DEADLINE_S
            while running(drawn):
                assert time.monotonic() < deadline, "the starving dashboard was never replaced"
                time.sleep(0.1)
            for hog in hogs:
                hog.kill()
                hog.wait()
        terminal.wait_for("one", "too busy")  # the notice, wrapped in its toast
        front = int(terminal.tmux("display-message", "-p", "-t", "one", "#{pane_pid}"))
        assert drawn_by(listen.proc.pid) == []
        assert post(url, "msg_here", BODY) == 200
        terminal.wait_for("one", "msg_here")  # the dashboard drawn by attach itself
        assert not terminal.ended("one") and running(front)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        listen.kill()


def test_a_killed_dashboard_gives_the_terminal_back_with_one_line(
    clean_env: Path, terminal: Terminal, tmp_path: Path
) -> None:
    listen, _ = start_listen(own_session=True)
    after = tmp_path / "after.txt"
    try:
        terminal.attach_then(
            "one", clean_env, f"echo status=$? > {after}; stty -a >> {after} 2>&1; sleep 60"
        )
        terminal.wait_for("one", f"attached to listen, pid {listen.proc.pid}")
        (drawn,) = drawn_by(listen.proc.pid)
        os.kill(drawn, signal.SIGKILL)
        shown = terminal.wait_for("one", "The dashboard stopped before it finished")
        deadline = time.monotonic() + DEADLINE_S
        while "speed" not in (after.read_text() if after.exists() else ""):
            assert time.monotonic() < deadline, "attach did not end"
            time.sleep(0.1)
        said = after.read_text()
        assert said.startswith("status=1\n"), said
        words = said.replace(";", " ").split()
        assert "echo" in words and "icanon" in words, said  # not -echo, -icanon
        assert "--normal-priority" in shown.replace("\n", "")
        assert listen.proc.poll() is None
    finally:
        listen.kill()


def trigger() -> tuple[int, list[str]]:
    """``walletpass-tui trigger activated`` to this home's receiver: its status and stderr."""
    proc = Proc("trigger", "activated")
    status = proc.proc.wait(timeout=DEADLINE_S)
    return status, proc.err.rest()


def test_a_pause_made_in_an_attached_dashboard_ends_when_it_closes(
    clean_env: Path, terminal: Terminal
) -> None:
    """With nobody looking, a pause left behind would answer every delivery 503: it is the
    dashboard's, said by listen while it lasts, named by trigger's error with how to lift it."""
    listen, url = start_listen(own_session=True)
    try:
        terminal.start("one", ["attach"], clean_env)
        terminal.wait_for("one", f"attached to listen, pid {listen.proc.pid}")
        terminal.keys("one", "p")
        terminal.wait_for("one", "ACKS PAUSED")
        listen.err.until(
            lambda line: line.startswith(
                "Injecting failures as an attached dashboard asked, until it changes them back "
                "or closes: Verified deliveries are answered 503 (acknowledgements paused)."
            )
        )
        status, err = trigger()
        assert status == 1 and err == [
            "walletpass-tui: error: The receiver answered 503 because a dashboard paused its "
            "acknowledgements: press p in that dashboard to resume them (or close it); the "
            "service would count this as a failed attempt and retry in 5 s."
        ]

        terminal.keys("one", "C-q")
        deadline = time.monotonic() + DEADLINE_S
        while not terminal.ended("one"):
            assert time.monotonic() < deadline, "the dashboard did not quit"
            time.sleep(0.1)
        listen.err.until(
            lambda line: (
                line == "The dashboard that injected failures closed: deliveries are "
                "answered as usual again."
            )
        )
        assert trigger() == (0, [])
        assert post(url, "msg_after", BODY) == 200
        assert listen.interrupt() == 0
    finally:
        listen.kill()


def test_attach_exits_1_with_one_line_when_nothing_runs(clean_env: Path) -> None:
    proc = Proc("attach")
    assert proc.proc.wait(timeout=DEADLINE_S) == 1
    err = proc.err.rest()
    assert len(err) == 1 and err[0].startswith("walletpass-tui: error: No receiver runs on")
    assert proc.out.rest() == []  # nothing on stdout, where a terminal server may speak
