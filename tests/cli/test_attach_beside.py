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

from walletpass_tui.cli.attach_beside import Starving

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


def starving_over(waits_ms: list[int]) -> list[bool]:
    """``Starving`` fed one reading every 0.5 s: the time waited to run so far, in ms."""
    now = [0.0]
    readings = iter(waits_ms)
    starving = Starving(0, read=lambda: next(readings) * 1_000_000, clock=lambda: now[0])
    said = []
    for _ in waits_ms:
        said.append(starving.starved())
        now[0] += 0.5
    return said


def test_a_dashboard_counts_as_starving_only_after_waiting_most_of_three_seconds() -> None:
    # Waiting 400 ms of every 500 ms: starving once 2.5 s of it were seen, not before.
    assert starving_over([400 * i for i in range(8)]) == [False] * 5 + [True] * 3
    # Busy but running: waiting 100 ms of every 500 ms never counts, however long.
    assert starving_over([100 * i for i in range(20)]) == [False] * 20
    # A start that waited, then ran: the wait falls out of the window.
    waits = [0, 500, 1000, 1500, 1600, 1700, 1800, 1900, 2000]
    assert starving_over(waits)[-1] is False


def test_a_dashboard_whose_waits_cannot_be_read_never_counts_as_starving() -> None:
    starving = Starving(0, read=lambda: None)
    assert [starving.starved() for _ in range(10)] == [False] * 10
