"""What every command shares: the common flags, settings from them, argument types that refuse
bad input at parse time (exit 2), output and error helpers.

Kept light on purpose: every command imports this module before it parses its arguments, so it
imports nothing heavier than the standard library, ``config`` and the ``api`` rules.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from walletpass_tui import logs
from walletpass_tui.api.topics import TopicError, parse_topic
from walletpass_tui.api.urls import TARGET_SCHEMES, UrlError, check_settings_urls, check_url
from walletpass_tui.config import blank_path
from walletpass_tui.errors import UsageError, WalletpassError
from walletpass_tui.text import parse_ascii_int, printable

if TYPE_CHECKING:
    from walletpass_tui.config import Settings

__all__ = [
    "CommandError",
    "bounded_float",
    "bounded_int",
    "forward_to_arg",
    "lazy_handler",
    "path_arg",
    "print_json",
    "print_table",
    "read_bounded_file",
    "settings_from_args",
    "target_url_arg",
    "topic_arg",
    "url_arg",
]

PROG = "walletpass-tui"
SETTINGS_TITLE = "settings (flags > environment > config file > defaults)"


class CommandError(WalletpassError):
    """An expected failure of a command: printed as one line on stderr, exit status 1."""


# -- argument types: argparse turns ArgumentTypeError into "error: argument X: ..." and exit 2 ----


def topic_arg(text: str) -> str:
    """``activated`` or ``pass.activated`` -> ``pass.activated``; unknown names are refused."""
    try:
        return parse_topic(text)
    except TopicError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def schema_topic_arg(text: str) -> str:
    """A schema command's TOPIC, kept as typed: it is read against the topics learned when the
    command runs (``schema_cmd.actions.group_key``); as a type it tells completion what to
    offer."""
    return text


def url_arg(text: str) -> str:
    """An http(s) URL (settings, targets): malformed ones refused with the reason."""
    try:
        return check_url(text, what="the URL", schemes=TARGET_SCHEMES)
    except UrlError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


target_url_arg = url_arg


def path_arg(flag: str, what: str, default: str) -> Callable[[str], str]:
    """The type of a flag naming a file or directory: an empty value (``--home "$DIR"`` with DIR
    unset) or one of white space only is refused, never read as leaving the flag out."""

    def check(text: str) -> str:
        problem = blank_path(text)
        if problem:
            raise argparse.ArgumentTypeError(
                f"the value {problem}; give {what}, or leave {flag} out to {default}"
            )
        return text

    return check


def forward_to_arg(text: str) -> str:
    """``URL`` or ``TOPIC=URL`` (the topic in either spelling), returned in its full form."""
    topic, sep, url = text.partition("=")
    if sep and not topic.strip().lower().startswith(("http://", "https://")):
        return f"{topic_arg(topic)}={url_arg(url)}"
    return url_arg(text)


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high``; the message states that range."""

    def parse(text: str) -> int:
        value = parse_ascii_int(text.strip())  # the digits 0-9 only: no sign, no other script
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{printable(text, 40)!r} is not a whole number from {low} to {high}."
            )
        return value

    parse.__name__ = "number"
    return parse


def bounded_float(
    low: float, high: float, *, low_inclusive: bool = False
) -> Callable[[str], float]:
    """A number above ``low`` (or from it, when ``low_inclusive``) up to ``high``."""

    def parse(text: str) -> float:
        value = _ascii_float(text.strip())
        above = value is not None and (value >= low if low_inclusive else value > low)
        if value is None or not above or not value <= high:
            lower = f"from {low:g}" if low_inclusive else f"more than {low:g}"
            raise argparse.ArgumentTypeError(
                f"{printable(text, 40)!r} is not a number {lower} and at most {high:g}."
            )
        return value

    parse.__name__ = "number"
    return parse


_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+", re.ASCII)


def _ascii_float(text: str) -> float | None:
    """``12``, ``0.5``, ``.5``: the ASCII digits 0-9 only, no sign, exponent, ``inf`` or ``nan``
    (``float()`` takes all of those, and every script's digits)."""
    return float(text) if len(text) <= 32 and _DECIMAL.fullmatch(text) else None


def read_bounded_file(
    path: str,
    limit: int,
    *,
    what: str = "The file",
    limit_name: str = "the receiver's body limit (max_body)",
) -> bytes:
    """At most ``limit`` bytes of ``path`` (``-`` is standard input); a longer one is refused.

    Reads ``limit + 1`` bytes at most, so ``/dev/urandom`` or a huge file costs nothing.
    """
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
    except OSError as exc:
        raise CommandError(f"Cannot read {printable(path, 200)} ({exc.strerror or exc}).") from None
    if len(data) > limit:
        raise UsageError(
            f"{what} {printable(path, 200)} is larger than {limit} bytes, {limit_name}; give a "
            "smaller one."
        )
    return data


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """Flags every command accepts, before or after the subcommand.

    Defaults are SUPPRESS so a subcommand's parser never overwrites a value given before it.
    """
    group = parser.add_argument_group(SETTINGS_TITLE)
    s = argparse.SUPPRESS
    group.add_argument(
        "--config",
        metavar="PATH",
        type=path_arg("--config", "a TOML file", "use config.toml in the home"),
        default=s,
        help="read settings from this TOML file",
    )
    group.add_argument(
        "--home",
        metavar="DIR",
        type=path_arg("--home", "a directory", "use the default home"),
        default=s,
        help="data and config directory (env WALLETPASS_HOME): history database, endpoint secrets",
    )
    group.add_argument(
        "--base-url",
        metavar="URL",
        type=url_arg,
        default=s,
        help="host of GET /api/v0/passTemplates",
    )
    group.add_argument(
        "--registration-url",
        metavar="URL",
        type=url_arg,
        default=s,
        help="host of POST /v0/webhookEndpoints",
    )
    group.add_argument(
        "--api-key",
        metavar="KEY",
        default=s,
        help="API key; prefer WALLETPASS_API_KEY, a flag shows up in your shell history",
    )
    group.add_argument(
        "--log-file",
        metavar="PATH",
        type=path_arg("--log-file", "a file", "write no log"),
        default=s,
        help=f"append a debug log to PATH (env {logs.ENV_LOG}), private (0600), secrets removed: "
        "attach it to a bug report",
    )
    group.add_argument(
        "--allow-http",
        action="store_const",
        const=True,
        default=s,
        help="allow http:// endpoint URLs (a local simulated service) and http:// relay URLs "
        "to another machine (a network you trust: the relay token crosses it in clear text)",
    )


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
    "tunnel": "tunnel",
}


def settings_from_args(args: argparse.Namespace, env: dict[str, str] | None = None) -> Settings:
    """The effective settings for this command; URLs checked by the one URL rule (a bad one from
    a flag is a usage error, exit 2; from the environment or the file, a failure, exit 1)."""
    from walletpass_tui.config import load_settings
    from walletpass_tui.config.errors import ConfigError

    flags = {
        setting: getattr(args, flag)
        for flag, setting in _FLAG_TO_SETTING.items()
        if getattr(args, flag, None) is not None
    }
    config = getattr(args, "config", None)
    settings = load_settings(flags, env=env, config_file=Path(config) if config else None)
    for secret in (settings.api_key, settings.relay_token):  # never in a --log-file
        logs.redact(secret.reveal() if secret else None)
    try:
        check_settings_urls(settings)
    except UrlError as exc:
        from_flag = any(settings.source_of(k) == "flag" for k in _URL_SETTINGS)
        raise (UsageError if from_flag else ConfigError)(str(exc)) from None
    return settings


_URL_SETTINGS = ("base_url", "registration_url", "public_url", "tunnel_url")


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


def lazy_handler(module: str, name: str) -> Handler:
    """A handler that imports ``module`` only when the command runs, so parsing stays cheap."""

    def run(args: argparse.Namespace) -> int:
        handler: Handler = getattr(importlib.import_module(module), name)
        return handler(args)

    run.__qualname__ = f"{module}.{name}"
    return run
