"""The command line: parses arguments first, then imports only what the chosen command runs.

Exit status: 0 on success, 1 on an expected failure (one clear line on stderr), 2 on usage errors.
Writing to a closed pipe (``walletpass-tui events list | head -1``) ends the command quietly.

Start-up is kept cheap: only the chosen command's module is imported to build its parser (the
others appear in ``--help`` by name), and each module imports its heavy parts (Textual, aiohttp,
httpx, the store) inside the handler that needs them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from walletpass_tui import __version__, logs
from walletpass_tui.cli.common import PROG, add_settings_flags
from walletpass_tui.errors import UsageError, WalletpassError
from walletpass_tui.text import printable, visible

# Top-level command -> (module that registers it, one line for --help). A module's
# register(subparsers, parents) adds every command it lists here.
COMMANDS: dict[str, tuple[str, str]] = {
    "templates": ("walletpass_tui.cli.templates_cmd", "list the workspace's pass templates"),
    "endpoints": ("walletpass_tui.cli.endpoints_cmd", "create, list and import webhook endpoints"),
    "config": ("walletpass_tui.cli.config_cmd", "show the effective settings"),
    "listen": (
        "walletpass_tui.cli.listen_cmd",
        "receive and verify webhooks without the dashboard",
    ),
    "events": (
        "walletpass_tui.cli.events_cmd",
        "the delivery history: list, show, tail, stats, replay, export, prune",
    ),
    "schema": (
        "walletpass_tui.cli.schema_cmd",
        "payload schemas learned from verified deliveries: list, show, drift, export, rebuild",
    ),
    "sim": ("walletpass_tui.cli.sim_cmd", "run or drive the simulated Wallet Pass Service"),
    "trigger": ("walletpass_tui.cli.sim_cmd", "sign and send one webhook to a receiver"),
    "attach": (
        "walletpass_tui.cli.attach_cmd",
        "open the dashboard on the receiver already running on this home",
    ),
    "web": (
        "walletpass_tui.cli.web_cmd",
        "the dashboard of the receiver running on this home, in a browser",
    ),
    "demo": (
        "walletpass_tui.cli.demo_cmd",
        "the dashboard on a built-in simulated service (no account needed)",
    ),
    "check": (
        "walletpass_tui.cli.check_cmd",
        "test your own webhook receiver as the service and an attacker would",
    ),
    "relay": (
        "walletpass_tui.cli.relay_cmd",
        "run your own relay: one stable URL for the service, deliveries fanned out to laptops",
    ),
    "completion": (
        "walletpass_tui.cli.completion_cmd",
        "print a shell completion script (bash, zsh or fish)",
    ),
}

DESCRIPTION = """\
A terminal dashboard for the Wallet Pass Service: list pass templates, register webhook endpoints,
and receive, verify, inspect and replay webhooks on your own machine.

With no command, opens the dashboard with its receiver on --host/--port/--path.
Try 'walletpass-tui demo' to see everything work against a built-in simulated service."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help shows the command's own options first and the shared
    settings once (see help_layout.py), and whose epilog (the examples) is shown exactly as
    written, one per line and never wrapped to the terminal's width, so each can be copied and
    run as it is. Every command's parser is one: subparsers take their parent's class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from walletpass_tui.cli.help_layout import HelpFormatter

        kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)

    def format_usage(self) -> str:
        from walletpass_tui.cli.help_layout import format_usage

        return format_usage(self)

    def format_help(self) -> str:
        from walletpass_tui.cli.help_layout import format_help

        text = format_help(self)
        if not self.epilog:
            return text
        return text + "\n" + self.epilog.strip("\n") + "\n"


def chosen_command(argv: Sequence[str]) -> str | None:
    """The first argument that names a command, or None (the dashboard)."""
    return next((arg for arg in argv if arg in COMMANDS), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: the chosen command's module registers its full parser; the other
    commands are listed by name only. Without ``argv`` every module is registered."""
    from walletpass_tui.cli.receiver_flags import add_delivery_flags, add_receiver_flags

    common = argparse.ArgumentParser(add_help=False)
    add_settings_flags(common)
    parser = Parser(
        prog=PROG,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_receiver_flags(parser)
    add_delivery_flags(parser)
    parser.add_argument(
        "--theme",
        metavar="NAME",
        help="the dashboard's theme for this run, whatever [ui] theme in the config file says",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else chosen_command(argv)
    if argv is None:
        modules = list(dict.fromkeys(module for module, _ in COMMANDS.values()))
    else:
        modules = [COMMANDS[chosen][0]] if chosen else []
    registered: set[str] = set()
    for name, (module, summary) in COMMANDS.items():
        if module in modules:
            if module not in registered:
                importlib.import_module(module).register(sub, [common])
                registered.add(module)
        else:
            sub.add_parser(name, help=summary, add_help=False)
    return parser


def _start_log(args: argparse.Namespace, argv: Sequence[str]) -> None:
    """``--log-file`` / WALLETPASS_LOG: the debug log, before the command runs."""
    flag = getattr(args, "log_file", None)
    if flag is None and logs.ENV_LOG in os.environ:
        from walletpass_tui.config import blank_path

        problem = blank_path(os.environ[logs.ENV_LOG])
        if problem:  # set, even to nothing: a log file meant, whose name went missing
            raise UsageError(f"${logs.ENV_LOG} {problem}; give a file, or unset it to log nothing.")
    path = logs.log_path(flag)
    if path is None:
        return
    for name in ("api_key", "relay_token"):  # flags whose values have no recognisable shape
        logs.redact(getattr(args, name, None))
    try:
        logs.configure(path, command=chosen_command(argv) or "the dashboard")
    except OSError as exc:
        raise UsageError(
            f"Cannot write the log file {printable(str(path), 200)} ({exc.strerror or exc}); "
            "give a new file, or a regular file of your own, in a directory you can write."
        ) from None


def _default_handler(args: argparse.Namespace) -> int:
    from walletpass_tui.cli import dashboard_cmd

    return dashboard_cmd.run_dashboard(args)


def _quiet_after_broken_pipe() -> int:
    """The reader went away (``| head -1``): say nothing, and keep Python's exit-time flush of
    stdout from failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout already gone: nothing left to quiet
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version, or a usage error argparse reported
            return exc.code if isinstance(exc.code, int) else 2
        _start_log(args, argv)
        handler = getattr(args, "handler", None) or _default_handler
        return handler(args)
    except BrokenPipeError:  # the reader went away (| head): quiet exit, nothing to say
        return _quiet_after_broken_pipe()
    except WalletpassError as exc:  # a failure of the world, not a bug: one line, its status
        # escaped: an error may carry another program's words (a receiver's, a relay's)
        print(f"{PROG}: error: {visible(str(exc), keep_newlines=True)}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:  # Ctrl-C: said on stderr
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
