"""An attached dashboard gives way to the receiver: checked in real child processes (the test
process itself keeps its priority), each reporting what it sees of itself from ``/proc``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from process_helpers import start_listen

from walletpass_tui.cli import attach_cmd, give_way
from walletpass_tui.cli import main as cli_main

CHILD = """
import json, os, sys
from walletpass_tui.cli import give_way
def seen():
    group = give_way.autogroup()
    return {"group": group[1] if group else None, "nice": os.getpriority(os.PRIO_PROCESS, 0)}
before = seen()
with give_way.giving_way(int(sys.argv[1])):
    during = seen()
print(json.dumps({"before": before, "during": during, "after": seen()}))
"""

needs_autogroup = pytest.mark.skipif(
    give_way.autogroup() is None, reason="this system has no scheduler autogroups"
)


def child(receiver_pid: int, *, own_session: bool) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(receiver_pid)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        start_new_session=own_session,
    )
    return dict(json.loads(out.stdout))


@needs_autogroup
def test_a_dashboard_in_a_terminal_of_its_own_lowers_its_session_then_gives_it_back() -> None:
    seen = child(os.getpid(), own_session=True)  # the receiver: this process, another session
    assert seen["before"]["group"] == 0
    assert seen["during"]["group"] == give_way.AUTOGROUP_NICE
    assert seen["during"]["nice"] >= give_way.NICENESS
    assert seen["after"]["group"] == 0  # the session (its shell) has its priority back


FOLLOW = """
import json, os, sys
from walletpass_tui.cli import give_way
way = give_way.GivingWay()
seen = []
way.start(int(sys.argv[1]))           # a receiver in another session
seen.append(give_way.autogroup()[1])
way.follow(os.getpid())               # the next one runs in this session
seen.append(give_way.autogroup()[1])
way.follow(int(sys.argv[1]))          # and the one after in another again
seen.append(give_way.autogroup()[1])
way.end()
seen.append(give_way.autogroup()[1])
print(json.dumps(seen))
"""


@needs_autogroup
def test_following_the_next_receiver_lowers_or_gives_back_as_its_session_asks() -> None:
    out = subprocess.run(
        [sys.executable, "-c", FOLLOW, str(os.getpid())],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        start_new_session=True,
    )
    nice = give_way.AUTOGROUP_NICE
    assert json.loads(out.stdout) == [nice, 0, nice, 0]


@needs_autogroup
def test_a_dashboard_in_the_receivers_session_leaves_the_session_alone() -> None:
    mine = give_way.autogroup()
    seen = child(os.getpid(), own_session=False)  # the receiver shares the session
    assert seen["during"]["group"] == (mine[1] if mine else None)
    assert seen["during"]["nice"] >= give_way.NICENESS
    assert give_way.autogroup() == mine


@needs_autogroup
def test_a_receiver_that_is_gone_leaves_the_session_alone() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    seen = child(gone.pid, own_session=True)
    assert seen["during"]["group"] == 0 and seen["during"]["nice"] >= give_way.NICENESS


@pytest.mark.skipif(sys.platform != "linux", reason="Linux time slices")
def test_the_short_slice_keeps_the_policy_and_the_nice_value() -> None:
    code = (
        "import os; from walletpass_tui.cli import give_way; os.nice(3); "
        "ok = give_way.short_slice(); "
        "print(ok, os.sched_getscheduler(0) == os.SCHED_OTHER, os.getpriority(os.PRIO_PROCESS, 0))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    known = os.uname().machine in ("x86_64", "aarch64")
    assert out.stdout.split() == [str(known), "True", str(os.getpriority(os.PRIO_PROCESS, 0) + 3)]


def test_normal_priority_attaches_without_giving_way(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[bool] = []

    def run_attached(*args: Any, give_way: bool = True, **kwargs: Any) -> int:
        asked.append(give_way)
        return 0

    monkeypatch.setattr(attach_cmd, "run_attached", run_attached)
    listen, _ = start_listen()
    try:
        assert cli_main(["attach", "--normal-priority"]) == 0
        assert cli_main(["attach"]) == 0
    finally:
        listen.kill()
    assert asked == [False, True]
