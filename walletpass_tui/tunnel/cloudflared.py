"""A tunnel through the ``cloudflared`` program the user installed.

A quick tunnel (no Cloudflare account)::

    cloudflared tunnel --no-autoupdate --url http://127.0.0.1:8787

asks Cloudflare for a random ``https://<words>.trycloudflare.com`` host and logs it (on stderr,
zerolog's console format) in a box::

    2024-05-02T09:14:03Z INF +--------------------------------------------------------------+
    2024-05-02T09:14:03Z INF |  Your quick Tunnel has been created! Visit it at (it may ...  |
    2024-05-02T09:14:03Z INF |  https://oklahoma-solo-younger-truck.trycloudflare.com        |
    2024-05-02T09:14:03Z INF +--------------------------------------------------------------+

A named tunnel (``[tunnel] name`` and ``url`` in config.toml, made once with ``cloudflared
tunnel create`` and ``route dns``) keeps its host name, which cloudflared does not print::

    cloudflared tunnel --no-autoupdate run --url http://127.0.0.1:8787 NAME

and is up once a line says ``Registered tunnel connection``.

The output is hostile (:mod:`walletpass_tui.tunnel.output`): only a box row right after the
banner is read for the URL, and only a plain ``https://`` host name is taken (an ``http://``
URL, a path, a user, a port: refused, the program stopped, not retried). Before the URL the
program may print at most ``MAX_START_OUTPUT`` bytes (a line without end counts in full) within
``start_timeout_s``; a program that exits first is a failed try (the watcher tries again, with
backoff). The tunnel is down as soon as its process exits, whether or not something it started
still holds its output open. It runs in its own session (process group), so the terminal's
Ctrl-C reaches this process only, and ``close()`` stops the whole group, its first process gone
or not: SIGTERM, a second SIGTERM after ``STOP_GRACE_S`` (cloudflared's own "stop now"), then
SIGKILL after ``KILL_AFTER_S``, each only while a process of the group is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
from dataclasses import dataclass

from walletpass_tui.text import printable
from walletpass_tui.tunnel.output import OutputLines, TooMuchOutput
from walletpass_tui.tunnel.provider import TunnelFailed, TunnelUnavailable
from walletpass_tui.tunnel.public_url import plain_https_url

log = logging.getLogger(__name__)

PROGRAM = "cloudflared"
INSTALL_HINT = (
    "install it (https://developers.cloudflare.com/cloudflare-one/connections/connect-networks"
    "/downloads/) or use --tunnel ngrok"
)
START_TIMEOUT_S = 45.0  # cloudflared asks its service for a quick tunnel with a 15 s timeout
MAX_START_OUTPUT = 256 * 1024  # bytes printed before the URL, at most
STOP_GRACE_S = 2.0  # after a first SIGTERM; a second one makes cloudflared stop at once
KILL_AFTER_S = 3.0  # after the second SIGTERM
PIPE_CLOSE_S = 1.0  # for the end of its output once it exited
EXIT_POLL_S = 0.2  # how often its exit is looked for besides the event loop's own word
GROUP_POLL_S = 0.05  # how often a stopping group is looked at (its members are not our children)

BANNER = "quick tunnel has been created"
REGISTERED = "registered tunnel connection"
_BOX_ROW = re.compile(r"\|\s*(\S+)\s*\|\s*$")


@dataclass(frozen=True)
class CloudflaredOptions:
    """``name``/``url``: a named tunnel and its public URL (both, or neither: a quick tunnel)."""

    program: str = PROGRAM
    name: str | None = None
    url: str | None = None
    start_timeout_s: float = START_TIMEOUT_S


class Cloudflared:
    """The cloudflared provider (see the module's docstring)."""

    name = "cloudflared"

    def __init__(self, options: CloudflaredOptions | None = None) -> None:
        self.options = options or CloudflaredOptions()

    @property
    def describe(self) -> str:
        if self.options.name:
            return f"the cloudflared tunnel {printable(self.options.name, 60)}"
        return "a cloudflared quick tunnel"

    def argv(self, program: str, local_url: str) -> list[str]:
        if self.options.name:
            return [
                program,
                "tunnel",
                "--no-autoupdate",
                "run",
                "--url",
                local_url,
                self.options.name,
            ]
        return [program, "tunnel", "--no-autoupdate", "--url", local_url]

    async def open(self, local_url: str) -> CloudflaredTunnel:
        program = shutil.which(self.options.program)
        if program is None:
            raise TunnelUnavailable(
                f"--tunnel cloudflared: the {self.options.program} program is not installed "
                f"(or not on PATH); {INSTALL_HINT}."
            )
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv(program, local_url),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise TunnelUnavailable(
                f"--tunnel cloudflared: {printable(program, 120)} cannot be started "
                f"({exc.strerror or exc}); {INSTALL_HINT}."
            ) from None
        log.info("cloudflared started, pid %d: %s", proc.pid, " ".join(self.argv("", local_url)))
        assert proc.stdout is not None  # PIPE asked for
        tunnel = CloudflaredTunnel(proc, OutputLines(proc.stdout, limit=MAX_START_OUTPUT))
        try:
            url = await asyncio.wait_for(self._until_ready(tunnel), self.options.start_timeout_s)
        except TimeoutError:
            await tunnel.close()
            raise TunnelFailed(
                f"cloudflared gave no tunnel URL within {self.options.start_timeout_s:.0f} s "
                f"(its last line: {tunnel.lines.last_words()})"
            ) from None
        except BaseException:
            await tunnel.close()
            raise
        tunnel.running(url)
        return tunnel

    async def _until_ready(self, tunnel: CloudflaredTunnel) -> str:
        """The public URL, read while the program runs; TunnelFailed once it exits first (even
        when something it started keeps its output open)."""
        ready = asyncio.ensure_future(self._ready(tunnel))
        exited = asyncio.ensure_future(tunnel.wait())
        try:
            await asyncio.wait({ready, exited}, return_when=asyncio.FIRST_COMPLETED)
            if not exited.done():
                return ready.result()
            # What it printed last may still be in its pipe: read for a moment, for its last
            # words. A URL given by a program that is gone already is not used.
            await asyncio.wait({ready}, timeout=PIPE_CLOSE_S)
            error = ready.exception() if ready.done() else None
            if error is not None:
                raise error
            gave = (
                "right after giving its tunnel URL"
                if ready.done()
                else "before giving a tunnel URL"
            )
            raise TunnelFailed(
                f"cloudflared exited (status {exited.result()}) {gave}: {tunnel.lines.last_words()}"
            )
        finally:
            ready.cancel()
            exited.cancel()

    async def _ready(self, tunnel: CloudflaredTunnel) -> str:
        """The public URL once the output says the tunnel is there."""
        lines = tunnel.lines
        banner = False
        while True:
            try:
                line = await lines.next()
            except TooMuchOutput:
                raise TunnelUnavailable(
                    f"cloudflared printed more than {MAX_START_OUTPUT // 1024} KiB without a "
                    "tunnel URL, so it was stopped; run it alone to see what it says."
                ) from None
            if line is None:
                status = await tunnel.wait()
                raise TunnelFailed(
                    f"cloudflared exited (status {status}) before giving a tunnel URL: "
                    f"{lines.last_words()}"
                )
            if self.options.name:
                if REGISTERED in line.lower() and self.options.url:
                    return self.options.url
                continue
            if BANNER in line.lower():
                banner = True
                continue
            row = _BOX_ROW.search(line) if banner else None
            if row is None:
                continue
            url = plain_https_url(row.group(1))
            if url is None:
                raise TunnelUnavailable(
                    "cloudflared printed a tunnel address that is not a plain https:// host "
                    f"name ({printable(row.group(1), 80)}), so it is not used; check which "
                    "program runs as cloudflared."
                )
            return url


class CloudflaredTunnel:
    """A running cloudflared: its process, its output (drained once up)."""

    def __init__(self, proc: asyncio.subprocess.Process, lines: OutputLines) -> None:
        self.proc = proc
        self.lines = lines
        self._url: str | None = None
        self._drain: asyncio.Task[None] | None = None
        self._stopped = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def public_url(self) -> str:
        if self._url is None:
            raise RuntimeError("The tunnel is not up yet.")
        return self._url

    def running(self, url: str) -> None:
        self._url = url
        self.lines.limit = None  # up: its output is drained at a bounded rate instead
        self._drain = asyncio.create_task(self.lines.drain(), name="cloudflared output")

    async def wait(self) -> int:
        """Its exit status once its process has ended, whether or not its pipe is still open
        (``Process.wait()`` alone may wait for the pipe too, on some event loops)."""
        waiter = asyncio.ensure_future(self.proc.wait())
        try:
            while self.proc.returncode is None and not waiter.done():
                await asyncio.wait({waiter}, timeout=EXIT_POLL_S)
        finally:
            waiter.cancel()
        returncode = self.proc.returncode
        return returncode if returncode is not None else waiter.result()

    async def closed(self) -> str:
        status = await self.wait()
        # Its last lines are read to the end of its pipe, unless something it started still
        # holds the pipe open: the tunnel is down all the same, said with what was read.
        # Waited for, never cancelled or shielded: a stop asked of the task waiting here (the
        # watcher's, on Ctrl-C) goes through instead of being taken for the drain's end.
        if self._drain is not None:  # still open after a moment: close() stops the rest
            await asyncio.wait({self._drain}, timeout=PIPE_CLOSE_S)
        return f"cloudflared exited (status {status}: {self.lines.last_words()})"

    def _group_left(self) -> bool:
        """Whether a process of its group is still there (its first one, or one it started)."""
        if self.proc.returncode is None:
            return True
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:  # the group is empty: nothing left to stop
            return False
        except PermissionError:  # its group holds a process that is not ours: not ours to stop
            return False
        return True

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.proc.pid, signum)
        except ProcessLookupError:  # the group is gone already: nothing to stop
            pass
        except PermissionError:  # its group is not ours any more: signal the process itself
            if self.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):  # gone meanwhile
                    self.proc.send_signal(signum)

    async def _group_gone(self, wait_s: float) -> bool:
        """Whether its whole group is gone within ``wait_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while self._group_left():
            left = deadline - loop.time()
            if left <= 0:
                return False
            if self.proc.returncode is None:  # its first process: woken by its exit
                with contextlib.suppress(TimeoutError):  # still running: looked at again
                    await asyncio.wait_for(self.wait(), left)
            else:  # the rest of its group is not ours to wait for: looked at again and again
                await asyncio.sleep(min(left, GROUP_POLL_S))
        return True

    async def close(self) -> None:
        if self._stopped:
            return  # its group was stopped already: its number may belong to another by now
        for signum, wait_s in (
            (signal.SIGTERM, STOP_GRACE_S),
            (signal.SIGTERM, KILL_AFTER_S),
            (signal.SIGKILL, KILL_AFTER_S),
        ):
            if not self._group_left():
                break
            self._signal(signum)
            if not await self._group_gone(wait_s):
                log.info("cloudflared (pid %d) still runs after signal %d", self.pid, signum)
        self._stopped = True
        self.lines.limit = None  # its last words are read whatever it printed before
        # What it printed last is read to the end of its pipe (which closes the pipe with it),
        # unless something it started still holds the pipe open: then reading stops.
        if self._drain is None:
            self._drain = asyncio.create_task(self.lines.drain(), name="cloudflared output")
        try:
            await asyncio.wait_for(asyncio.shield(self._drain), PIPE_CLOSE_S)
        except TimeoutError:  # its pipe stays open: given up, the task cancelled
            self._drain.cancel()
        except Exception as exc:  # reading its last words failed: nothing left to stop
            log.info("cloudflared (pid %d) output not read to its end: %r", self.pid, exc)
        log.info("cloudflared (pid %d) stopped: status %s", self.pid, self.proc.returncode)
