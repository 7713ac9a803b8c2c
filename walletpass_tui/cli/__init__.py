"""The command line: parses arguments, builds objects, picks the dashboard or a headless command.

Exit status: 0 on success, 1 on an expected failure (one clear line on stderr), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from walletpass_tui import __version__
from walletpass_tui.api.errors import ApiError
from walletpass_tui.cli import demo_cmd, events_cmd, listen_cmd, service_cmds, sim_cmd
from walletpass_tui.cli.common import PROG, CommandError, add_receiver_flags, add_settings_flags
from walletpass_tui.cli.receiver_flags import add_delivery_flags
from walletpass_tui.config import ConfigError
from walletpass_tui.webhooks.receiver import ReceiverError
from walletpass_tui.webhooks.store import StoreError

# Each module adds its subcommands with register(subparsers, parents).
COMMAND_MODULES = [service_cmds, listen_cmd, events_cmd, sim_cmd, demo_cmd]

DESCRIPTION = """\
A terminal dashboard for the Wallet Pass Service: list pass templates, register webhook endpoints,
and receive, verify, inspect and replay webhooks on your own machine.

With no command, opens the dashboard with its receiver on --host/--port/--path.
Try 'walletpass-tui demo' to see everything work against a built-in simulated service."""


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    add_settings_flags(common)
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_receiver_flags(parser)
    add_delivery_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub, [common])
    return parser


def _default_handler(args: argparse.Namespace) -> int:
    from walletpass_tui.cli import dashboard_cmd

    return dashboard_cmd.run_dashboard(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None) or _default_handler
    try:
        return handler(args)
    except (CommandError, ConfigError, ApiError, StoreError, ReceiverError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
