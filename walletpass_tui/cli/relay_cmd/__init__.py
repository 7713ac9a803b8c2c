"""``relay``: run the self-hosted relay and manage its channels.

This module only defines the arguments; each action's module (and the relay's storage, aiohttp...)
is imported when that action runs: serve.py (``relay serve``), follow.py (``relay follow``),
database.py (the relay database the settings name, ``relay migrate``), channels.py
(``relay channel add, token, list, revoke, remove``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from walletpass_tui.cli.common import bounded_float, bounded_int, lazy_handler, path_arg
from walletpass_tui.cli.receiver_flags import MAX_BODY_LIMIT, MAX_TOLERANCE_S
from walletpass_tui.cli.secret_flags import add_secret_flags
from walletpass_tui.config import ENV_RELAY_DATABASE, ENV_RELAY_TOKEN

# The bounds of relay serve's and relay channel add's numbers (ASCII digits only, as every command).
MAX_RETENTION_DAYS = 3650
MAX_STREAMS = 1_000_000
MAX_QUOTA_MB = 1024 * 1024  # 1 TiB

_HERE = __name__


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    relay = sub.add_parser(
        "relay",
        parents=parents,
        help="run your own relay: one stable URL for the service, deliveries fanned out to laptops",
        description="A relay receives the service's webhooks at one stable HTTPS URL, stores them "
        "(committed before the 2xx) and streams them to every subscribed laptop, which verifies "
        "them with the real secret and catches up after sleep. Its data lives in the data "
        "directory (WALLETPASS_HOME) in relay.sqlite3, or in PostgreSQL with --database "
        "postgresql://... (any number of relays on one database act as one).",
    )
    rsub = relay.add_subparsers(dest="relay_command", metavar="ACTION", required=True)
    database = argparse.ArgumentParser(add_help=False)
    database.add_argument(
        "--database",
        dest="relay_database",
        metavar="URL",
        type=path_arg(
            "--database", "a PostgreSQL URL or a SQLite file", "use relay.sqlite3 in the home"
        ),
        help="postgresql://user@host:5432/db, or a SQLite file (default: relay.sqlite3 in the "
        f"data directory); prefer {ENV_RELAY_DATABASE} or [relay] database in the config file, "
        "and ~/.pgpass for the password: a flag shows in ps",
    )

    serve = rsub.add_parser(
        "serve",
        parents=[*parents, database],
        help="run the relay server",
        description="Serve the relay: ingress for the service, event streams for the laptops, "
        "/healthz for a balancer. Prints one line per request (time, method, the channel by "
        "name, status, milliseconds; never a token or a whole ingress slug); --quiet prints none.",
        epilog="examples:\n"
        "  walletpass-tui relay serve --public-url https://relay.example.com --port 8080\n"
        "  walletpass-tui relay serve --allow-source service --trust-proxy 127.0.0.1\n"
        f"  {ENV_RELAY_DATABASE}=postgresql://relay@db:5432/relay walletpass-tui relay serve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", dest="relay_host", default="0.0.0.0", help="default 0.0.0.0")  # noqa: S104
    serve.add_argument(
        "--port", dest="relay_port", type=bounded_int(0, 65535), default=8080, help="default 8080"
    )
    serve.add_argument(
        "--public-url",
        dest="relay_public_url",
        metavar="URL",
        help="the address people and the service use (behind a TLS proxy, say)",
    )
    serve.add_argument("--tls-cert", type=Path, metavar="FILE", help="serve HTTPS with this cert")
    serve.add_argument("--tls-key", type=Path, metavar="FILE", help="... and this private key")
    serve.add_argument(
        "--allow-source",
        action="append",
        default=[],
        metavar="service|CIDR",
        help="accept posts only from these sources ('service': its published addresses)",
    )
    serve.add_argument(
        "--trust-proxy",
        action="append",
        default=None,
        metavar="CIDR",
        help="read X-Forwarded-For only from these peers (default: loopback)",
    )
    serve.add_argument(
        "--retention-days",
        type=bounded_float(0, MAX_RETENTION_DAYS),
        default=7.0,
        metavar="DAYS",
        help="delete deliveries older than this (default 7)",
    )
    serve.add_argument(
        "--max-body",
        type=bounded_int(1, MAX_BODY_LIMIT),
        default=argparse.SUPPRESS,
        metavar="BYTES",
        help="body limit (default 1 MiB)",
    )
    serve.add_argument(
        "--tolerance",
        type=bounded_int(0, MAX_TOLERANCE_S),
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="allowed webhook-timestamp skew (default 300)",
    )
    serve.add_argument(
        "--heartbeat",
        type=bounded_float(0, 3600),
        default=15.0,
        metavar="SECONDS",
        help="heartbeat comment interval on idle streams (default 15)",
    )
    serve.add_argument(
        "--max-subscribers",
        type=bounded_int(1, MAX_STREAMS),
        default=1000,
        metavar="N",
        help="open streams on the whole relay (default 1000; past it: 503)",
    )
    serve.add_argument(
        "--max-channel-subscribers",
        type=bounded_int(1, MAX_STREAMS),
        default=100,
        metavar="N",
        help="open streams on one channel (default 100; past it: 429)",
    )
    serve.add_argument(
        "--quiet",
        action="store_true",
        help="print no line per request (by default: time, method, channel, status, ms)",
    )
    serve.set_defaults(handler=lazy_handler(f"{_HERE}.serve", "cmd_serve"))

    migrate = rsub.add_parser(
        "migrate",
        parents=[*parents, database],
        help="create or upgrade the relay's database schema (relay serve also does at start)",
    )
    migrate.set_defaults(handler=lazy_handler(f"{_HERE}.database", "cmd_migrate"))

    follow = rsub.add_parser(
        "follow",
        parents=parents,
        help="POST a relay channel's deliveries to your own receiver (your app)",
        description="Stream a relay channel and POST every delivery to --to with its raw body and "
        "original headers, so the receiver verifies the real signature with the real secret. "
        "Resumes after the last delivery handed over (the cursor is kept in the data directory). "
        "To receive into walletpass-tui itself, use 'listen --relay URL' or the dashboard's "
        "--relay instead: no second hop, and deliveries caught up after a sleep still verify.",
        epilog="examples:\n"
        "  export WALLETPASS_RELAY_TOKEN=wpr_...\n"
        "  walletpass-tui relay follow https://relay.example.com/channels/SLUG/events\n"
        "  walletpass-tui relay follow URL --to http://localhost:3000/webhooks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    follow.add_argument("subscribe_url", metavar="SUBSCRIBE_URL")
    follow.add_argument(
        "--token",
        dest="relay_token",
        metavar="TOKEN",
        help=f"subscriber token; prefer the environment variable {ENV_RELAY_TOKEN}",
    )
    follow.add_argument(
        "--to",
        dest="target",
        metavar="URL",
        help="where to POST each delivery (default: the local receiver, --port/--path settings)",
    )
    follow.add_argument(
        "--from-start", action="store_true", help="ignore the saved cursor: everything stored"
    )
    follow.set_defaults(handler=lazy_handler(f"{_HERE}.follow", "cmd_follow"))

    parents = [*parents, database]  # every channel command takes --database
    channel = rsub.add_parser("channel", parents=parents, help="add, list, revoke, remove channels")
    csub = channel.add_subparsers(dest="channel_command", metavar="ACTION", required=True)
    add = csub.add_parser(
        "add",
        parents=parents,
        help="create a channel: prints its ingress URL, subscribe URL and a token (once)",
    )
    add.add_argument("name")
    add_secret_flags(
        add,
        what="the endpoint's signing secret, to verify at the relay: forged posts get 401 and "
        "are not fanned out",
        many=False,
    )
    add.add_argument("--public-url", dest="relay_public_url", metavar="URL")
    add.add_argument(
        "--quota-mb",
        type=bounded_int(1, MAX_QUOTA_MB),
        default=256,
        metavar="MB",
        help="storage quota (default 256)",
    )
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=lazy_handler(f"{_HERE}.channels", "cmd_channel_add"))

    token = csub.add_parser("token", parents=parents, help="issue another subscriber token")
    token.add_argument("name")
    token.add_argument("--public-url", dest="relay_public_url", metavar="URL")
    token.add_argument("--json", action="store_true")
    token.set_defaults(handler=lazy_handler(f"{_HERE}.channels", "cmd_channel_token"))

    lst = csub.add_parser("list", parents=parents, help="channels, their usage and quota")
    lst.add_argument("--public-url", dest="relay_public_url", metavar="URL")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=lazy_handler(f"{_HERE}.channels", "cmd_channel_list"))

    revoke = csub.add_parser(
        "revoke", parents=parents, help="revoke one token, or every token of a channel"
    )
    revoke.add_argument("target", metavar="NAME|TOKEN")
    revoke.set_defaults(handler=lazy_handler(f"{_HERE}.channels", "cmd_channel_revoke"))

    remove = csub.add_parser(
        "remove", parents=parents, help="delete a channel and everything stored for it"
    )
    remove.add_argument("name")
    remove.set_defaults(handler=lazy_handler(f"{_HERE}.channels", "cmd_channel_remove"))
