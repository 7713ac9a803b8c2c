"""``attach`` with the dashboard drawn beside the receiver (``runtime/draw_beside.py`` says why
and how): the *front*, which stays in the terminal and waits, and what the dashboard it asked
for does with the two pipes it is given.

The front asks only where it helps and can work: its input and output are a terminal, the
receiver runs in another terminal session, and the receiver serves the draw socket. Otherwise,
or when the receiver refuses, the dashboard is drawn in the front's own process, giving way as
``give_way.py`` says. While the dashboard runs, the front hands it the terminal's resizes
(SIGWINCH) and its own stop signals (SIGTERM, SIGHUP; SIGINT as SIGTERM), and ends with its exit
status; a second stop signal ends the front at once (exit 130), the terminal restored. A
dashboard that ends without a status (killed) leaves the terminal as the front found it. At the
idle policy the dashboard gives way to all the work of the receiver's terminal session, not only
to the receiver: when it waits to run most of 3 s (other work busy there), the front ends it,
restores the terminal and draws the dashboard in its own process instead, saying why. The
dashboard ends when its front is gone, killed included (the life pipe's end of file).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import stat
import sys
import termios
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from walletpass_tui import logs
from walletpass_tui.cli.common import CommandError
from walletpass_tui.config import ENV_API_KEY, ENV_BASE_URL, ENV_REGISTRATION_URL, Settings
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.draw_beside import Drawn, DrawRefused, DrawRequest, ask_to_draw

log = logging.getLogger(__name__)

STARVED = (
    "This dashboard is drawn by this terminal's own process: the receiver's terminal session was "
    "too busy with other work to draw it beside the receiver."
)

LOOK_S = 0.5  # how often the front looks whether the dashboard gets CPU
STARVED_WINDOW_S = 3.0
STARVED_SHARE = 0.6  # waiting to run this share of the window: starving
MAX_STATUS = 16  # bytes of the exit status read from the done pipe
# What a full-screen app leaves behind if it is killed: the alternate screen, a hidden cursor,
# mouse reporting, bracketed paste. Written back to usual when a dashboard ends without a status.
RESET = "\x1b[?7h\x1b[?1004l\x1b[?1015l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?25h\x1b[?1049l"
FORWARDED: dict[int, int] = {
    signal.SIGWINCH: signal.SIGWINCH,
    signal.SIGTERM: signal.SIGTERM,
    signal.SIGHUP: signal.SIGHUP,
    signal.SIGINT: signal.SIGTERM,
}


def draw_beside(
    settings: Settings,
    record: instance.InstanceRecord,
    theme: str | None,
    notices: Sequence[str],
    config: str | None = None,
) -> int | str | None:
    """The dashboard drawn beside the receiver and waited for: its exit status. None where it
    was not drawn there, or a notice (``STARVED``) where it was ended there because it got no
    CPU: the caller draws it here. ``config``: the --config given, if one was."""
    if not (os.isatty(0) and os.isatty(1)) or _same_session(record.pid):
        return None
    try:
        saved = termios.tcgetattr(0)
    except termios.error:  # not a terminal after all: drawn here
        return None
    request = DrawRequest(
        env=_environment(settings),
        cwd=_working_directory(settings.home),
        theme=theme,
        config=str(Path(config).resolve()) if config is not None else None,
        notices=tuple(notices),
    )
    try:
        drawn = ask_to_draw(instance.run_dir(settings.home), request)
    except (OSError, DrawRefused) as exc:  # drawn here instead: said in the log
        log.info("the receiver did not draw the dashboard beside it (%s); drawn here", exc)
        return None
    if drawn is None:
        return None
    status = wait_for(drawn, saved)
    if status is None:
        log.info("the dashboard drawn beside the receiver got no CPU; drawn here instead")
        return STARVED
    return status


def _environment(settings: Settings) -> dict[str, str]:
    """This process's environment, and what its flags set that the dashboard reads, the debug
    log's file included (the environment is never visible to other users, unlike a command
    line)."""
    env = dict(os.environ)
    if settings.source_of("base_url") == "flag" and settings.base_url:
        env[ENV_BASE_URL] = settings.base_url
    if settings.source_of("registration_url") == "flag" and settings.registration_url:
        env[ENV_REGISTRATION_URL] = settings.registration_url
    if settings.source_of("api_key") == "flag" and settings.api_key:
        env[ENV_API_KEY] = settings.api_key.reveal()
    log_file = logs.configured_path()
    if log_file is not None:  # --log-file: the dashboard logs to the same file
        env[logs.ENV_LOG] = str(log_file)
    return env


def _working_directory(home: Path) -> str:
    """This process's working directory, or the home where it was removed meanwhile."""
    try:
        return os.getcwd()
    except OSError:  # removed under the shell: the dashboard starts in the home instead
        return str(Path(home).absolute())


def _same_session(pid: int) -> bool:
    """Whether the receiver runs in this terminal session (or cannot be looked at): then
    drawing beside it gains nothing."""
    try:
        return os.getsid(pid) == os.getsid(0)
    except OSError:  # gone, or another's: drawn here
        return True


def wait_for(drawn: Drawn, saved: list[Any] | None, starving: Starving | None = None) -> int | None:
    """Wait for the dashboard's exit status, handing it resizes and stop signals meanwhile; a
    second stop signal ends the wait (KeyboardInterrupt), the terminal restored. None: the
    dashboard got no CPU (``starving``), so it was ended and the terminal restored."""
    target = _Target(drawn.pid)
    starving = starving or Starving(drawn.pid)
    before = {sig: signal.signal(sig, target.forward) for sig in FORWARDED}
    try:
        status = bytearray()
        while True:
            if not select.select([drawn.done], [], [], LOOK_S)[0]:  # retried after a signal
                if starving.starved():
                    target.kill()  # it runs no more of its own code, nothing more is drawn
                    _restore(saved)
                    return None
                continue
            chunk = os.read(drawn.done, MAX_STATUS)
            if not chunk:
                break
            status += chunk
            del status[:-MAX_STATUS]
    except KeyboardInterrupt:
        _restore(saved)
        raise
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        target.close()
        drawn.close()
    try:
        return int(status.decode("ascii"))
    except ValueError:
        _restore(saved)
        raise CommandError(
            "The dashboard stopped before it finished (was it killed?). Run the same command "
            "again, or add --normal-priority to draw it in this terminal's own process."
        ) from None


class Starving:
    """Whether a dashboard at the idle policy gets no CPU: other work busy in the receiver's
    terminal session takes it all (the idle policy gives way to any of it, not only to the
    receiver). Read from ``/proc/<pid>/schedstat``: the time it waited to run, over the last
    ``STARVED_WINDOW_S``; where that cannot be read, it never counts as starving."""

    def __init__(
        self,
        pid: int,
        read: Callable[[], int | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read or (lambda: _waited_ns(pid))
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque()

    def starved(self) -> bool:
        waited = self._read()
        if waited is None:
            return False
        now = self._clock()
        self._samples.append((now, waited))
        while now - self._samples[0][0] > STARVED_WINDOW_S:
            self._samples.popleft()
        then, before = self._samples[0]
        span = now - then
        return span >= STARVED_WINDOW_S * 0.8 and (waited - before) / 1e9 >= STARVED_SHARE * span


def _waited_ns(pid: int) -> int | None:
    """How long ``pid`` waited for a CPU so far, in ns (None: not readable)."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1])
    except (OSError, ValueError, IndexError):  # no schedstat here, or gone: never starving
        return None


def _restore(saved: list[Any] | None) -> None:
    """The terminal's modes as the front found them (``saved``; None: not a terminal), and what
    a full-screen app turns on turned off."""
    if saved is None:
        return
    with contextlib.suppress(termios.error, OSError):  # the terminal is gone: nothing to restore
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
        os.write(1, RESET.encode())


class _Target:
    """The dashboard's process, signalled through a pidfd where the system has them (never
    another process that took its pid)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.stops = 0  # stop signals handed on so far
        self.pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):  # no pidfds here: by pid
            self.pidfd = os.pidfd_open(pid)

    def forward(self, sig: int, _frame: FrameType | None) -> None:
        if sig != signal.SIGWINCH:
            self.stops += 1
            if self.stops > 1:  # the dashboard did not end on the first: stop waiting for it
                raise KeyboardInterrupt
        self.send(FORWARDED[sig])

    def kill(self) -> None:
        self.send(signal.SIGKILL)

    def send(self, sig: int) -> None:
        with contextlib.suppress(OSError):  # it ended meanwhile: its status comes next
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, sig)
            else:
                os.kill(self.pid, sig)

    def close(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):  # closed already
                os.close(self.pidfd)


# -- the dashboard's side -----------------------------------------------------------------------


def parse_pipes(text: str) -> tuple[int, int]:
    """``--drawn-for LIFE,DONE``: the two descriptors the receiver passed on."""
    life, done = (int(part) for part in text.split(","))
    for fd in (life, done):
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):  # OSError where there is no such descriptor
            raise ValueError(f"descriptor {fd} is not a pipe")
        os.set_inheritable(fd, False)  # never held by a program the dashboard starts
    return life, done


def idle_priority() -> None:
    """The idle policy: the receiver beside it, woken by a delivery, takes the CPU at once."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):  # no idle policy here: the lowest nice value instead
        with contextlib.suppress(OSError, AttributeError):  # no nice values either
            os.setpriority(os.PRIO_PROCESS, 0, 19)


def say_done(done: int, status: int) -> None:
    """The exit status to the front (it ends with it once the pipe closes at exit)."""
    with contextlib.suppress(OSError):  # the front is gone: nobody to tell
        os.write(done, str(status).encode("ascii"))
    sys.stdout.flush()
