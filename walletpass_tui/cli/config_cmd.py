"""``config show``: each effective setting and where it came from (the API key masked)."""

from __future__ import annotations

import argparse

from walletpass_tui.cli.common import print_json, print_table, settings_from_args
from walletpass_tui.text import printable


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    cfg = sub.add_parser(
        "config",
        parents=parents,
        help="show the effective settings",
        description="Settings come from flags, then the environment (WALLETPASS_API_KEY, "
        "WALLETPASS_BASE_URL, WALLETPASS_REGISTRATION_URL, WALLETPASS_HOME), then a TOML file, "
        "then defaults.",
    )
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = cfg_sub.add_parser(
        "show",
        parents=parents,
        help="print each setting and where it came from (API key masked)",
        epilog="example: walletpass-tui config show --json",
    )
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_config_show)


def cmd_config_show(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    if args.json:
        typed = settings.typed()
        print_json(
            {
                "config_file": str(settings.config_file) if settings.config_file else None,
                "settings": {
                    name: {"value": value, "source": settings.source_of(name)}
                    for name, value in typed.items()
                },
            }
        )
        return 0
    rows = [[n, printable(v), s] for n, v, s in settings.describe()]
    print_table(rows, ["SETTING", "VALUE", "FROM"])
    print(f"config file: {settings.config_file}")
    return 0
