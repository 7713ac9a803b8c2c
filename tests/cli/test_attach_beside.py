"""The front of a dashboard drawn beside the receiver (cli/attach_beside.py), with real
processes: a front process waiting on a stand-in dashboard that records the signals it gets and
answers on the done pipe as the real one does. (The real receiver, dashboard and terminal:
test_attach_processes.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from process_helpers import DEADLINE_S

# The stand-in dashboard: records each signal, ignores SIGTERM unless told to end on it, and
# writes "7" to the done pipe when it ends on SIGHUP.
DASHBOARD = textwrap.dedent(
    """
    import os, signal, sys, time
    done, log, end_on_term = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "yes"
    os.set_inheritable(done, False)
    ending = []
    def got(sig, _frame):
        with open(log, "a") as f:
            f.write(signal.Signals(sig).name + "\\n")
        if sig == signal.SIGHUP or (sig == signal.SIGTERM and end_on_term):
            ending.append(sig)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH):
        signal.signal(sig, got)
    with open(log, "a") as f:
        f.write("ready\\n")
    while not ending:
        time.sleep(0.01)
    os.write(done, b"7")
    """
)

# The front: starts the stand-in, then waits for it as attach does.
FRONT = textwrap.dedent(
    """
    import os, subprocess, sys
    from walletpass_tui.cli.attach_beside import wait_for
    from walletpass_tui.cli.common import CommandError
    from walletpass_tui.runtime.draw_beside import Drawn
    life_r, life_w = os.pipe()
    done_r, done_w = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", sys.argv[1], str(done_w), sys.argv[2], sys.argv[3]],
        pass_fds=(done_w,),
    )
    os.close(done_w)
    os.close(life_r)
    try:
        status = wait_for(Drawn(child.pid, life_w, done_r), None)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        child.kill()
        raise SystemExit(130)
    except CommandError as exc:
        print(exc, flush=True)
        raise SystemExit(1)
    print(f"status {status}", flush=True)
    """
)


def start_front(tmp_path: Path, end_on_term: bool) -> tuple[subprocess.Popen[str], Path]:
    log = tmp_path / "signals.txt"
    front = subprocess.Popen(
        [sys.executable, "-c", FRONT, DASHBOARD, str(log), "yes" if end_on_term else "no"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    wait_until(lambda: "ready" in read(log))
    return front, log


def read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def wait_until(condition: object) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def test_resizes_and_a_stop_are_handed_on_and_the_dashboard_s_status_is_the_front_s(
    tmp_path: Path,
) -> None:
    front, log = start_front(tmp_path, end_on_term=False)
    os.kill(front.pid, signal.SIGWINCH)
    wait_until(lambda: "SIGWINCH" in read(log))
    os.kill(front.pid, signal.SIGHUP)
    out, _ = front.communicate(timeout=DEADLINE_S)
    assert out == "status 7\n"
    assert read(log).split() == ["ready", "SIGWINCH", "SIGHUP"]


def test_ctrl_c_reaches_the_dashboard_as_sigterm(tmp_path: Path) -> None:
    front, log = start_front(tmp_path, end_on_term=True)
    os.kill(front.pid, signal.SIGINT)
    out, _ = front.communicate(timeout=DEADLINE_S)
    assert out == "status 7\n"
    assert read(log).split() == ["ready", "SIGTERM"]


def test_a_second_stop_ends_the_front_when_the_dashboard_did_not_end(tmp_path: Path) -> None:
    front, log = start_front(tmp_path, end_on_term=False)
    os.kill(front.pid, signal.SIGTERM)
    wait_until(lambda: "SIGTERM" in read(log))
    os.kill(front.pid, signal.SIGTERM)
    out, _ = front.communicate(timeout=DEADLINE_S)
    assert front.returncode == 130 and out == "interrupted\n"
    assert read(log).split() == ["ready", "SIGTERM"]  # handed on once, not twice


def test_a_dashboard_that_ends_without_its_status_is_one_sentence(tmp_path: Path) -> None:
    front, _ = start_front(tmp_path, end_on_term=False)
    dashboard = int(
        subprocess.run(
            ["pgrep", "-P", str(front.pid)], capture_output=True, text=True
        ).stdout.split()[0]
    )
    os.kill(dashboard, signal.SIGKILL)
    out, _ = front.communicate(timeout=DEADLINE_S)
    assert front.returncode == 1
    assert out.startswith("The dashboard stopped before it finished (was it killed?).")
    assert "--normal-priority" in out
