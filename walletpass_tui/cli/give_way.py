"""How an attached dashboard drawn in its own process gives way to the receiver it shows, on a
busy machine. (Where it can, ``attach`` has the receiver draw the dashboard beside it instead,
at the idle policy in the receiver's own session: ``attach_beside.py``. This is for where it
cannot: input or output not a terminal, a receiver without the draw socket, or one that refuses.)

Three settings, each only ever lowers this process's claim on the CPU (none needs a privilege),
and each is skipped where the system does not offer it:

* This process's nice value becomes at least ``NICENESS``, so among the processes of its own
  terminal session the receiver and anything else at the usual priority come first.
* Its session's *autogroup* (Linux, ``/proc/self/autogroup``). Linux schedules each terminal
  session as one group, so a nice value counts only against processes of the same session.
  Where the receiver runs in another session (another terminal, another tmux pane), this
  session's group gets ``AUTOGROUP_NICE`` while the dashboard runs, and its earlier value back
  when it ends. Where the receiver shares the session, nothing changes: that would slow the
  receiver too. A dashboard follows the next receiver that starts on the home: the session is
  lowered or given back again as that receiver's session asks.
* A short time slice (Linux 6.12 and newer, ``sched_setattr``). The dashboard may be interrupted
  after ``SLICE_NS`` instead of the usual 1-3 ms, so a receiver woken by a delivery runs at once.
  Older kernels ignore it.

Measured in ``benchmarks/attach.py`` (docs/attach.md): two dashboards drawn in tmux panes of
their own raised listen's acknowledgement p99 at 200/s 1.88x with only the nice value, 1.42x with
all three, in the same run; drawn beside the receiver, 1.02x.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct
import sys
import threading
import time
from collections.abc import Iterator

NICENESS = 5  # this process's nice value at least
AUTOGROUP_NICE = 19  # the session's group while a dashboard looks at a receiver in another one
SLICE_NS = 100_000  # 0.1 ms, the shortest slice Linux takes
ACTIVE = True  # False: nothing is changed (a process that must keep its priority)


def active() -> bool:
    """Whether giving way changes anything in this process (tests turn it off)."""
    return ACTIVE


_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
_ATTR = struct.Struct("=IIQiIQQQII")  # struct sched_attr, its first version (56 bytes)
_RETRIES = 6  # writes to an autogroup are refused for 0.1 s after anyone's (EAGAIN)


def autogroup(pid: int | str = "self") -> tuple[str, int] | None:
    """``("/autogroup-42", 0)`` for a process, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/autogroup", encoding="ascii") as f:
            name, word, nice = f.read().split()
        return (name, int(nice)) if word == "nice" else None
    except (OSError, ValueError, UnicodeDecodeError):  # no autogroups here, or not readable
        return None


def set_autogroup_nice(nice: int) -> bool:
    """This session's group at ``nice``; False where that was refused."""
    for attempt in range(_RETRIES):
        try:
            with open("/proc/self/autogroup", "w", encoding="ascii") as f:
                f.write(str(nice))
            return True
        except OSError as exc:  # refused: the session keeps its value, nothing lost
            if exc.errno != errno.EAGAIN or attempt == _RETRIES - 1:
                return False
            time.sleep(0.11)
    return False


def short_slice(ns: int = SLICE_NS) -> bool:
    """This process's time slice at ``ns`` (its threads to come take it too); False where the
    system has no such call. Its policy and nice value stay as they are."""
    number = _SCHED_SETATTR.get(os.uname().machine) if sys.platform == "linux" else None
    if number is None:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        policy = os.sched_getscheduler(0)
        nice = os.getpriority(os.PRIO_PROCESS, 0)
    except (OSError, AttributeError):  # no such call here: the usual slice
        return False
    if policy not in (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE):
        return False  # a real-time policy: not ours to touch
    attr = ctypes.create_string_buffer(_ATTR.pack(_ATTR.size, policy, 0, nice, 0, ns, 0, 0, 0, 0))
    return int(libc.syscall(number, 0, attr, 0)) == 0


class GivingWay:
    """The three settings for one dashboard: ``start`` (the nice value, the slice, the session
    for the receiver found at start), ``follow`` when another receiver is followed (the session
    lowered or given back as that one's session asks), ``end`` (the session given back)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # ``follow`` may run on a thread while another ends
        self._given_back: int | None = None  # the session's value before it was lowered
        self._followed: int | None = None  # the receiver's pid last looked at

    @property
    def followed(self) -> int | None:
        """The receiver's pid last looked at."""
        return self._followed

    def start(self, receiver_pid: int | None) -> None:
        if not ACTIVE:
            return
        with contextlib.suppress(OSError, AttributeError):  # no nice values here: the usual one
            if os.getpriority(os.PRIO_PROCESS, 0) < NICENESS:
                os.setpriority(os.PRIO_PROCESS, 0, NICENESS)
        short_slice()
        self.follow(receiver_pid)

    def follow(self, receiver_pid: int | None) -> None:
        """The receiver now followed: its session another than ours lowers ours, the same one
        gives ours back. None (no receiver now) changes nothing."""
        if not ACTIVE or not receiver_pid:
            return
        with self._lock:
            if receiver_pid == self._followed:
                return
            self._followed = receiver_pid
            mine, theirs = autogroup(), autogroup(receiver_pid)
            if mine is None or theirs is None:
                return
            if mine[0] == theirs[0]:
                self._give_back(mine)
            elif (
                self._given_back is None
                and 0 <= mine[1] < AUTOGROUP_NICE
                and set_autogroup_nice(AUTOGROUP_NICE)
            ):
                self._given_back = mine[1]

    def end(self) -> None:
        with self._lock:
            self._give_back(autogroup())

    def _give_back(self, now: tuple[str, int] | None) -> None:
        # Only if nobody changed it meanwhile (another dashboard in the session that ended
        # first gave it back already, or the user set one of their own).
        before, self._given_back = self._given_back, None
        if before is not None and now is not None and now[1] == AUTOGROUP_NICE:
            set_autogroup_nice(before)


@contextlib.contextmanager
def giving_way(receiver_pid: int | None) -> Iterator[GivingWay]:
    """All three, for as long as the block runs; the session is given its value back."""
    way = GivingWay()
    way.start(receiver_pid)
    try:
        yield way
    finally:
        way.end()
