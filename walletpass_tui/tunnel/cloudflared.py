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
program may print at most ``MAX_START_OUTPUT`` bytes within ``start_timeout_s``; a program that
exits first is a failed try (the watcher tries again, with backoff). It runs in its own session
(process group), so the terminal's Ctrl-C reaches this process only, and ``close()`` stops it:
SIGTERM to its group, a second SIGTERM after ``STOP_GRACE_S`` (cloudflared's own "stop now"),
then SIGKILL.
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
from walletpass_tui.tunnel.output import OutputLines
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
        tunnel = CloudflaredTunnel(proc, OutputLines(proc.stdout))
        try:
            url = await asyncio.wait_for(self._ready(tunnel), self.options.start_timeout_s)
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

    async def _ready(self, tunnel: CloudflaredTunnel) -> str:
        """The public URL once the output says the tunnel is there."""
        lines = tunnel.lines
        banner = False
        while True:
            if lines.total > MAX_START_OUTPUT:
                raise TunnelUnavailable(
                    f"cloudflared printed more than {MAX_START_OUTPUT // 1024} KiB without a "
                    "tunnel URL, so it was stopped; run it alone to see what it says."
                )
            line = await lines.next()
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
        self._drain = asyncio.create_task(self.lines.drain(), name="cloudflared output")

    async def wait(self) -> int:
        return await self.proc.wait()

    async def closed(self) -> str:
        status = await self.proc.wait()
        if self._drain is not None:
            with contextlib.suppress(asyncio.CancelledError):  # cancelled by close(): done
                await self._drain
        return f"cloudflared exited (status {status}: {self.lines.last_words()})"

    def _signal(self, signum: int) -> None:
        if self.proc.returncode is not None:
            return
        try:
            os.killpg(self.proc.pid, signum)
        except ProcessLookupError:  # gone already: nothing to stop
            pass
        except PermissionError:  # its group is not ours any more: signal the process itself
            with contextlib.suppress(ProcessLookupError):  # gone meanwhile
                self.proc.send_signal(signum)

    async def close(self) -> None:
        for signum, wait_s in (
            (signal.SIGTERM, STOP_GRACE_S),
            (signal.SIGTERM, KILL_AFTER_S),
            (signal.SIGKILL, None),
        ):
            if self.proc.returncode is not None:
                break
            self._signal(signum)
            try:
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), wait_s)
            except TimeoutError:
                log.info("cloudflared (pid %d) still runs after signal %d", self.pid, signum)
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
