"""What every command shares: the common flags, settings from them, output and error helpers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from walletpass_tui.config import Settings, load_settings
from walletpass_tui.formatting import printable

__all__ = ["CommandError", "print_json", "print_table", "printable", "settings_from_args"]

PROG = "walletpass-tui"


class CommandError(Exception):
    """An expected failure of a command: printed as one line on stderr, exit status 1."""


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """Flags every command accepts, before or after the subcommand.

    Defaults are SUPPRESS so a subcommand's parser never overwrites a value given before it.
    """
    group = parser.add_argument_group("settings (flags > environment > config file > defaults)")
    s = argparse.SUPPRESS
    group.add_argument(
        "--config", metavar="PATH", default=s, help="read settings from this TOML file"
    )
    group.add_argument(
        "--home",
        metavar="DIR",
        default=s,
        help="data and config directory (env WALLETPASS_HOME): history database, endpoint secrets",
    )
    group.add_argument(
        "--base-url", metavar="URL", default=s, help="host of GET /api/v0/passTemplates"
    )
    group.add_argument(
        "--registration-url", metavar="URL", default=s, help="host of POST /v0/webhookEndpoints"
    )
    group.add_argument(
        "--api-key",
        metavar="KEY",
        default=s,
        help="API key; prefer WALLETPASS_API_KEY, a flag shows up in your shell history",
    )
    group.add_argument(
        "--allow-http",
        action="store_const",
        const=True,
        default=s,
        help="allow http:// endpoint URLs (only for a local simulated service)",
    )


def add_receiver_flags(parser: argparse.ArgumentParser, *, suppress: bool = True) -> None:
    s = argparse.SUPPRESS
    group = parser.add_argument_group("receiver")
    group.add_argument("--host", default=s, help="address to listen on (default 127.0.0.1)")
    group.add_argument("--port", type=int, default=s, help="port to listen on (default 8787)")
    group.add_argument("--path", default=s, help="path webhooks are posted to (default /webhooks)")


_FLAG_TO_SETTING = {
    "home": "home",
    "base_url": "base_url",
    "registration_url": "registration_url",
    "api_key": "api_key",
    "allow_http": "allow_http",
    "host": "receiver_host",
    "port": "receiver_port",
    "path": "receiver_path",
    "tolerance": "tolerance_s",
    "max_body": "max_body",
    "public_url": "public_url",
}


def settings_from_args(args: argparse.Namespace, env: dict[str, str] | None = None) -> Settings:
    flags = {
        setting: getattr(args, flag)
        for flag, setting in _FLAG_TO_SETTING.items()
        if getattr(args, flag, None) is not None
    }
    config = getattr(args, "config", None)
    return load_settings(flags, env=env, config_file=Path(config) if config else None)


def print_json(data: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_table(rows: list[list[str]], headers: list[str], out: TextIO | None = None) -> None:
    """A plain aligned text table (no colour, safe for pipes)."""
    out = out or sys.stdout
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    line = "  ".join(h.ljust(widths[i]) for i, h in enumerate(headers))
    out.write(line.rstrip() + "\n")
    for row in rows:
        out.write("  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() + "\n")


Handler = Callable[[argparse.Namespace], int]
