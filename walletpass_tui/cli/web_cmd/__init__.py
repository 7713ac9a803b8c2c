"""``web``: the attached dashboard in a browser, served by textual-serve behind a secret URL.

Each browser tab runs its own ``walletpass-tui attach`` on the same home (server.py). The URL
printed holds a fresh random token (``secrets.token_urlsafe``, 256 bits) that every request must
carry; it is registered with the debug log's redaction so a ``--log-file`` never holds it, and
aiohttp's access log is off. The server binds loopback unless ``--host`` names another address,
and then says who can see the history.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import secrets
import shlex
import signal
import sys
from pathlib import Path

from walletpass_tui import logs
from walletpass_tui.cli.common import CommandError, bounded_int, settings_from_args
from walletpass_tui.runtime import instance

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8790
TOKEN_BYTES = 32  # 256 bits


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "web",
        parents=parents,
        help="the dashboard of the receiver running on this home, in a browser",
        description="Serve the dashboard of the receiver that runs on this home (listen, "
        "listen --relay, the demo or another dashboard) to a browser: each tab is its own "
        "attached dashboard, as `walletpass-tui attach` shows it. The URL printed holds a "
        "secret token made for this run; without it every request is refused (403). Only this "
        "machine can connect unless --host names another address.",
        epilog="examples:\n"
        "  walletpass-tui web\n"
        "  walletpass-tui web --port 8800 --home ~/work/wallet-hooks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--host",
        dest="web_host",
        default=DEFAULT_HOST,
        help=f"address to serve on (default {DEFAULT_HOST}); any other lets whoever reaches "
        "it and holds the URL see the history",
    )
    p.add_argument(
        "--port",
        dest="web_port",
        type=bounded_int(0, 65535),
        default=DEFAULT_PORT,
        help=f"port to serve on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    p.set_defaults(handler=cmd_web)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name, not an address: not loopback
        return False


def exposure_warning(host: str) -> str:
    return (
        f"warning: serving on {host}, not only this machine: anyone who can reach this port "
        "and has the URL sees the delivery history and can pause the receiver."
    )


def not_running(home: Path, found: instance.Found) -> str | None:
    """One sentence when no receiver runs on ``home`` (how to start one), else None."""
    if isinstance(found, instance.Running) and found.record is not None:
        return None
    flag = instance.home_flag(home)
    if isinstance(found, instance.Running):  # its state file could not be read
        return found.unreadable(home)
    return (
        f"No receiver runs on {home}. Start one with `walletpass-tui listen{flag}` first, then "
        f"run `walletpass-tui web{flag}` again."
    )


def attach_command(args: argparse.Namespace, home: Path) -> str:
    """The shell command textual-serve runs per browser tab: this program's attach on ``home``."""
    argv = [sys.executable, "-m", "walletpass_tui", "attach", "--home", str(home)]
    config = getattr(args, "config", None)
    if config:
        argv += ["--config", str(Path(config).expanduser().resolve())]
    return "exec " + shlex.join(argv)


def cmd_web(args: argparse.Namespace) -> int:
    from walletpass_tui.webhooks.listening import listening_socket

    settings = settings_from_args(args)
    home = Path(settings.home).expanduser().resolve()
    problem = not_running(home, instance.find(home))
    if problem:
        raise CommandError(problem)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    logs.redact(token)
    _quiet_server_logs()

    from walletpass_tui.cli.web_cmd.server import WebView, serve, url_host

    def receiver_problem() -> str | None:
        try:
            return not_running(home, instance.find(home, wait_s=0))
        except instance.InstanceError as exc:  # the reason is shown in the browser
            return str(exc)

    view = WebView(attach_command(args, home), token, receiver_problem=receiver_problem)
    host = args.web_host

    def ready(port: int) -> None:
        url = f"http://{url_host(host)}:{port}/{token}/"
        log.info("serving %s on %s for %s", home, url, view.command)  # the token scrubbed
        if not is_loopback(host):
            print(exposure_warning(host), file=sys.stderr, flush=True)
        print(f"Dashboard of {home} in a browser: open", flush=True)
        print(f"  {url}", flush=True)
        print(
            "Anyone with this URL sees the history; it changes each run. Ctrl+C stops.",
            flush=True,
        )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        sock = await listening_socket(host, args.web_port)  # ReceiverError: one sentence
        await serve(view, sock, ready, stop)

    asyncio.run(main())
    print("Stopped.", file=sys.stderr)
    return 0


def _quiet_server_logs() -> None:
    """aiohttp's and textual-serve's own messages: warnings only, to stderr, scrubbed of the
    token like the debug log (the access log, which would hold it in every line, is off)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logs.Redactor("%(name)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    for name in ("aiohttp", "textual-serve"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = True
    with contextlib.suppress(Exception):  # quieter access lines are a nicety
        logging.getLogger("aiohttp.access").disabled = True
