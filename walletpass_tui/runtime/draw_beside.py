"""An attached dashboard drawn beside the receiver: started by the receiver, in its terminal
session, on the terminal of the ``attach`` that asked.

Why: Linux schedules each terminal session as one group (its *autogroup*), and a process's own
priority counts only inside its group. A dashboard in a terminal of its own therefore competes
with the receiver as an equal, however low a priority it takes for itself. Started from the
receiver's own session at the idle policy (``SCHED_IDLE``), it runs only on time the receiver
leaves: a delivery that wakes the receiver takes the CPU from it at once.

The ``attach`` that asks (the *front*) stays in its terminal, as its foreground process, and only
waits: it passes the dashboard what it needs to draw there, hands on the terminal's resizes and
its own stop signals, and ends with the dashboard's exit status (``cli/attach_beside.py``).

Transport: a Unix stream socket, ``<home>/run/draw.sock``, mode 0600 inside the 0700 run
directory; the peer's uid is checked as well (``SO_PEERCRED``). One request a connection::

    front -> receiver   one JSON object and its newline, at most MAX_REQUEST bytes, with exactly
                        FDS descriptors (SCM_RIGHTS): the terminal's input, output and error, the
                        read end of the front's *life* pipe (end of file: the front is gone, the
                        dashboard ends) and the write end of its *done* pipe (the dashboard
                        writes its exit status there, and the pipe's end of file says it ended)
      {"env": {"NAME": "value", ...}, "cwd": "/abs/path", "theme": "name" | null,
       "config": "/abs/path" | null, "notices": ["...", ...]}
    receiver -> front   {"pid": N}   the dashboard started, or {"error": "reason"}; then closed

Bounds: MAX_WAITING requests read at once (another connection is answered at once and closed),
each within REQUEST_TIMEOUT_S, at most MAX_REQUEST bytes, exactly FDS descriptors (any more are
closed; none is inherited by another program), the input and output a terminal, at most
MAX_DRAWN dashboards started and still running at once, MAX_NOTICES notices of at most ``control.MAX_TEXT`` characters. The
dashboard runs ``python -P -m walletpass_tui attach`` of the receiver's own install on the
receiver's home: the request names no program and no home. The environment is the front's (the
same user's: its terminal type, colours, locale and config), less ``COLUMNS`` and ``LINES``,
which would pin the size.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from walletpass_tui.errors import WalletpassError
from walletpass_tui.runtime.control import (
    MAX_TEXT,
    accept_each,
    bind_private,
    decode,
    peer_uid,
    reachable_path,
)

log = logging.getLogger(__name__)

DRAW_SOCKET_NAME = "draw.sock"
FDS = 5  # input, output, error, the life pipe's read end, the done pipe's write end
MAX_REQUEST = 64 * 1024
MAX_REPLY = 4096
MAX_DRAWN = 16
MAX_WAITING = 8  # requests being read at once; another connection is closed at once
MAX_NOTICES = 4
MAX_NAME = 200  # a theme's name
REQUEST_TIMEOUT_S = 5.0


_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0)  # descriptors received never inherited


class DrawRefused(WalletpassError):
    """The receiver would not draw the dashboard; the message says why."""


@dataclass(frozen=True)
class DrawRequest:
    """A front's request, checked."""

    env: dict[str, str]
    cwd: str
    theme: str | None
    config: str | None
    notices: tuple[str, ...]

    def to_line(self) -> bytes:
        body = {
            "env": self.env,
            "cwd": self.cwd,
            "theme": self.theme,
            "config": self.config,
            "notices": list(self.notices),
        }
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> DrawRequest:
        """ValueError saying what is wrong."""
        env = message.get("env")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v
            for k, v in env.items()
        ):
            raise ValueError("env must be an object of names and string values")
        cwd = message.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd:
            raise ValueError("cwd must be an absolute path")
        theme, config = message.get("theme"), message.get("config")
        if theme is not None and (not isinstance(theme, str) or not 0 < len(theme) <= MAX_NAME):
            raise ValueError(f"theme must be a name of at most {MAX_NAME} characters, or null")
        if config is not None and (
            not isinstance(config, str) or not os.path.isabs(config) or "\0" in config
        ):
            raise ValueError("config must be an absolute path, or null")
        notices = message.get("notices", [])
        if (
            not isinstance(notices, list)
            or len(notices) > MAX_NOTICES
            or not all(isinstance(n, str) and len(n) <= MAX_TEXT for n in notices)
        ):
            raise ValueError(
                f"notices must be a list of at most {MAX_NOTICES} texts of at most "
                f"{MAX_TEXT} characters"
            )
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        return cls(env, cwd, theme, config, tuple(notices))


def socket_path(run_dir: Path) -> Path:
    return run_dir / DRAW_SOCKET_NAME


def _check_fds(fds: Sequence[int]) -> None:
    if len(fds) != FDS:
        raise ValueError(f"a request must carry exactly {FDS} descriptors, not {len(fds)}")
    if not (os.isatty(fds[0]) and os.isatty(fds[1])):
        raise ValueError("the dashboard's input and output must be a terminal")
    for fd in fds[3:]:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise ValueError("the life and done descriptors must be pipes")


class DrawServer:
    """Serves ``draw.sock`` for a receiver on ``home``; ``stop`` leaves the dashboards it drew
    running (each follows the next receiver that starts on the home, or ends with its front)."""

    def __init__(
        self,
        path: Path,
        home: Path,
        *,
        max_drawn: int | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.path = Path(path)
        self.home = Path(home)
        self.max_drawn = max_drawn or MAX_DRAWN
        self.timeout_s = timeout_s or REQUEST_TIMEOUT_S
        self.drawing: dict[int, subprocess.Popen[bytes]] = {}  # drawn and still running
        self._starting = 0  # dashboards being started now
        self._pidfds: dict[int, int] = {}  # what tells of each one's end
        self.refused = 0  # requests turned away, for tests and debug logs
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._serving: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._sock = sock = bind_private(self.path, 16)
        self._accepting = asyncio.create_task(
            accept_each(sock, "draw socket", self._start_serving), name="draw accept"
        )

    async def stop(self) -> None:
        task, self._accepting = self._accepting, None
        for each in [task, *self._serving]:
            if each is not None:
                each.cancel()
                with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                    await each
        loop = asyncio.get_running_loop()
        for pidfd in self._pidfds.values():  # the dashboards go on; their ends go unheard
            loop.remove_reader(pidfd)
            os.close(pidfd)
        self._pidfds.clear()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
            with contextlib.suppress(FileNotFoundError):  # already gone
                os.unlink(self.path)

    async def _start_serving(self, conn: socket.socket) -> None:
        if len(self._serving) >= MAX_WAITING:
            self.refused += 1
            with contextlib.suppress(OSError):  # the peer may be gone: refused anyway
                conn.send(b'{"error": "too many requests at once; try again"}\n')
            conn.close()
            return
        task = asyncio.create_task(self._serve(conn), name="draw request")
        self._serving.add(task)
        task.add_done_callback(self._serving.discard)

    async def _serve(self, conn: socket.socket) -> None:
        try:
            reply = await self._answer(conn)
            if reply is None:
                return
            if "error" in reply:
                self.refused += 1
                log.info("draw socket: refused a request (%s)", reply["error"])
            with contextlib.suppress(OSError):  # the front may be gone: nothing to tell
                conn.send(json.dumps(reply).encode() + b"\n")
        finally:
            conn.close()

    async def _answer(self, conn: socket.socket) -> dict[str, Any] | None:
        """What to answer ``conn``'s request (None: nothing, a stranger)."""
        fds: list[int] = []
        try:
            uid = peer_uid(conn)
            if uid is not None and uid != os.geteuid():
                self.refused += 1
                log.warning("draw socket: refused a process of uid %d", uid)
                return None
            line = await asyncio.wait_for(self._receive(conn, fds), self.timeout_s)
            _check_fds(fds)
            request = DrawRequest.from_message(decode(line, MAX_REQUEST))
            if len(self.drawing) + self._starting >= self.max_drawn:
                raise ValueError(
                    f"{self.max_drawn} dashboards are drawn beside this receiver already"
                )
            self._starting += 1
            try:
                loop = asyncio.get_running_loop()
                proc = await loop.run_in_executor(None, self._spawn, request, fds)
            finally:
                self._starting -= 1
            self._watch(proc)
            return {"pid": proc.pid}
        except TimeoutError:  # answered to the front with the bound it broke
            return {"error": f"a request not finished within {self.timeout_s:g} s"}
        except ValueError as exc:  # answered to the front with its reason
            return {"error": str(exc)[:MAX_TEXT]}
        except OSError as exc:  # the dashboard could not be started: said to the front
            return {"error": f"the dashboard could not be started ({exc.strerror or exc})"}
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):  # closed already: nothing to release
                    os.close(fd)

    async def _receive(self, conn: socket.socket, fds: list[int]) -> bytes:
        """One line and the descriptors sent with it (appended to ``fds`` as they arrive, so
        the caller closes them whatever happens)."""
        loop = asyncio.get_running_loop()
        data = bytearray()
        while b"\n" not in data:
            await _readable(loop, conn)
            try:
                chunk, got, flags, _ = socket.recv_fds(conn, MAX_REQUEST, FDS + 1, _CLOEXEC)
            except BlockingIOError:  # woken for nothing: wait again
                continue
            fds.extend(got)
            if flags & socket.MSG_CTRUNC or len(fds) > FDS:
                raise ValueError(f"a request must carry exactly {FDS} descriptors")
            if not chunk:
                raise ValueError("the request ended before its newline")
            data += chunk
            if len(data) > MAX_REQUEST:
                raise ValueError(f"a request larger than {MAX_REQUEST} bytes")
        return bytes(data[: data.index(b"\n")])

    def _spawn(self, request: DrawRequest, fds: Sequence[int]) -> subprocess.Popen[bytes]:
        life, done = fds[3], fds[4]
        argv = [
            sys.executable,
            "-P",  # never a walletpass_tui of the front's working directory
            "-m",
            "walletpass_tui",
            "attach",
            f"--home={self.home}",
            f"--drawn-for={life},{done}",
        ]
        if request.theme is not None:
            argv.append(f"--theme={request.theme}")
        if request.config is not None:
            argv.append(f"--config={request.config}")
        argv += [f"--notice={notice}" for notice in request.notices]
        cwd = request.cwd if os.path.isdir(request.cwd) else str(self.home)
        proc = subprocess.Popen(
            argv,
            stdin=fds[0],
            stdout=fds[1],
            stderr=fds[2],
            pass_fds=(life, done),
            env=request.env,
            cwd=cwd,
            process_group=0,  # Ctrl-C in the receiver's terminal is not for it
        )
        log.info("drew a dashboard beside the receiver (pid %d)", proc.pid)
        return proc

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        """Count ``proc`` as drawing until it ends, then reap it: through a pidfd on the event
        loop (no thread), or where there are none, a thread that waits for it."""
        loop = asyncio.get_running_loop()
        self.drawing[proc.pid] = proc
        try:
            pidfd = os.pidfd_open(proc.pid)
        except (OSError, AttributeError):  # no pidfds here: a thread waits instead
            threading.Thread(
                target=lambda: (proc.wait(), loop.call_soon_threadsafe(self._ended, proc, None)),
                name="draw reap",
                daemon=True,
            ).start()
            return
        self._pidfds[proc.pid] = pidfd
        loop.add_reader(pidfd, self._ended, proc, pidfd)

    def _ended(self, proc: subprocess.Popen[bytes], pidfd: int | None) -> None:
        if pidfd is not None:
            asyncio.get_running_loop().remove_reader(pidfd)
            os.close(pidfd)
            self._pidfds.pop(proc.pid, None)
        proc.poll()  # reaped: no zombie left
        self.drawing.pop(proc.pid, None)


async def _readable(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def woken() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(conn.fileno(), woken)
    try:
        await ready
    finally:
        loop.remove_reader(conn.fileno())


@dataclass
class Drawn:
    """A dashboard drawn beside the receiver, as its front holds it: its pid, the write end of
    the life pipe (kept open while the front lives) and the read end of the done pipe."""

    pid: int
    life: int
    done: int

    def close(self) -> None:
        for fd in (self.life, self.done):
            with contextlib.suppress(OSError):  # closed already: nothing to release
                os.close(fd)


def ask_to_draw(
    run_dir: Path,
    request: DrawRequest,
    terminal: tuple[int, int, int] = (0, 1, 2),
    timeout_s: float = 10.0,
) -> Drawn | None:
    """Ask the receiver serving ``run_dir`` to draw the dashboard on ``terminal`` (input, output,
    error: this process's own by default). None where it serves no draw socket (an older version); DrawRefused
    with its reason; OSError where the socket cannot be reached."""
    path = socket_path(run_dir)
    if not path.exists():
        return None
    life_r, life_w = os.pipe()
    done_r, done_w = os.pipe()
    kept = False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout_s)
            with reachable_path(path) as where:
                sock.connect(where)
            uid = peer_uid(sock)
            if uid is not None and uid != os.geteuid():
                raise DrawRefused(f"the draw socket {path} is served by another user")
            socket.send_fds(sock, [request.to_line()], [*terminal, life_r, done_w])
            os.close(life_r)
            os.close(done_w)
            life_r = done_w = -1
            raw = bytearray()
            while b"\n" not in raw and len(raw) <= MAX_REPLY:
                chunk = sock.recv(MAX_REPLY)
                if not chunk:
                    break
                raw += chunk
        try:
            reply = json.loads(bytes(raw).split(b"\n", 1)[0])
        except ValueError:
            raise DrawRefused("the receiver's answer could not be read") from None
        pid = reply.get("pid") if isinstance(reply, dict) else None
        if type(pid) is not int or pid <= 1:
            error = reply.get("error") if isinstance(reply, dict) else None
            raise DrawRefused(str(error)[:MAX_TEXT] if error else "refused")
        kept = True
        return Drawn(pid, life_w, done_r)
    finally:
        for fd in (life_r, done_w) if kept else (life_r, life_w, done_r, done_w):
            if fd >= 0:
                with contextlib.suppress(OSError):  # closed already: nothing to release
                    os.close(fd)
