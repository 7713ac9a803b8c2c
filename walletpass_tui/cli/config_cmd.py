"""``config show``: each effective setting and where it came from (the API key masked)."""

from __future__ import annotations

import argparse

from walletpass_tui.cli.common import print_json, print_table, settings_from_args
from walletpass_tui.text import printable


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
