"""``relay``: run the self-hosted relay and manage its channels."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path
from typing import Any

from walletpass_tui.cli.common import (
    CommandError,
    bounded_float,
    bounded_int,
    path_arg,
    print_json,
    print_table,
    settings_from_args,
)
from walletpass_tui.cli.receiver_flags import MAX_BODY_LIMIT, MAX_TOLERANCE_S
from walletpass_tui.cli.secret_flags import add_secret_flags, one_secret
from walletpass_tui.text import printable

# The bounds of relay serve's and relay channel add's numbers (ASCII digits only, as every command).
MAX_RETENTION_DAYS = 3650
MAX_STREAMS = 1_000_000
MAX_QUOTA_MB = 1024 * 1024  # 1 TiB

DEFAULT_LOCAL_URL = "http://127.0.0.1:8080"
ENV_RELAY_TOKEN = "WALLETPASS_RELAY_TOKEN"
ENV_RELAY_DATABASE = "WALLETPASS_RELAY_DATABASE"
LATE_HINT_S = 240


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
    serve.set_defaults(handler=cmd_serve)

    migrate = rsub.add_parser(
        "migrate",
        parents=[*parents, database],
        help="create or upgrade the relay's database schema (relay serve also does at start)",
    )
    migrate.set_defaults(handler=cmd_migrate)

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
    follow.set_defaults(handler=cmd_follow)

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
    add.set_defaults(handler=cmd_channel_add)

    token = csub.add_parser("token", parents=parents, help="issue another subscriber token")
    token.add_argument("name")
    token.add_argument("--public-url", dest="relay_public_url", metavar="URL")
    token.add_argument("--json", action="store_true")
    token.set_defaults(handler=cmd_channel_token)

    lst = csub.add_parser("list", parents=parents, help="channels, their usage and quota")
    lst.add_argument("--public-url", dest="relay_public_url", metavar="URL")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=cmd_channel_list)

    revoke = csub.add_parser(
        "revoke", parents=parents, help="revoke one token, or every token of a channel"
    )
    revoke.add_argument("target", metavar="NAME|TOKEN")
    revoke.set_defaults(handler=cmd_channel_revoke)

    remove = csub.add_parser(
        "remove", parents=parents, help="delete a channel and everything stored for it"
    )
    remove.add_argument("name")
    remove.set_defaults(handler=cmd_channel_remove)


# -- serve -----------------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from walletpass_tui.relay.server.channels import public_base
    from walletpass_tui.relay.server.ingress import IngressOptions
    from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
    from walletpass_tui.webhooks.sources import SourcePolicy

    settings = settings_from_args(args)
    sources = SourcePolicy.build(args.allow_source, args.trust_proxy)
    public_url = public_base(args.relay_public_url) if args.relay_public_url else None
    options = RelayOptions(
        home=settings.home,
        database=_database(args, settings),
        host=args.relay_host,
        port=args.relay_port,
        public_url=public_url,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        retention_days=args.retention_days,
        heartbeat_s=args.heartbeat,
        max_subscribers=args.max_subscribers,
        max_channel_subscribers=args.max_channel_subscribers,
        request_lines=None if args.quiet else sys.stdout,
        ingress=IngressOptions(
            max_body=settings.max_body, tolerance_s=settings.tolerance_s, sources=sources
        ),
    )
    from walletpass_tui.cli.listen_cmd import run_loop  # uvloop where installed, as listen

    run_loop(_serve(RelayServer(options)))
    return 0


async def _serve(server: Any) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            # no signal handlers here: Ctrl-C still stops it
            loop.add_signal_handler(sig, stop.set)
    await server.start()
    print(f"Relay listening on {server.url} (data: {server.storage.target.display})", flush=True)
    print(f"Public URL: {server.public_url()}", flush=True)
    if not server.options.public_url:
        print("  (no --public-url: channel URLs use the address each request came to)", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
        print("Relay stopped.", flush=True)
    return 0


# -- follow ----------------------------------------------------------------------------------------


def cmd_follow(args: argparse.Namespace) -> int:
    from walletpass_tui.cli.receiver_setup import relay_url
    from walletpass_tui.relay.link.follow import RelayFollower, cursor_path

    settings = settings_from_args(args)
    token = args.relay_token or (settings.relay_token.reveal() if settings.relay_token else None)
    if not token:
        raise CommandError(
            f"Give the subscriber token with {ENV_RELAY_TOKEN}=wpr_... (or --token); "
            "'walletpass-tui relay channel add' printed it."
        )
    url = args.subscribe_url
    if not url.startswith(("http://", "https://")):
        raise CommandError(f"{url!r} is not a subscribe URL: it starts with https:// or http://.")
    url = relay_url(url, settings, "relay follow")
    target = args.target or settings.receiver_url()
    cursor_file = cursor_path(settings.home, url)
    if args.from_start:
        cursor_file.unlink(missing_ok=True)
    follower = RelayFollower(
        url,
        token,
        target,
        cursor_file,
        on_handed=_HandedPrinter(),
        on_skipped=_print_skipped,
        on_state=_StatePrinter(),
        on_retrying=_print_retrying,
        on_rewound=_print_rewound,
        max_body=settings.max_body,
    )
    print(f"Following {url} -> {target} (after cursor {follower.subscriber.cursor})", flush=True)
    asyncio.run(_follow(follower))
    return 0


async def _follow(follower: Any) -> None:
    task = asyncio.ensure_future(follower.run())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            # no signal handlers here: Ctrl-C still stops it
            loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
        await task


class _StatePrinter:
    """One line when the connection comes or goes (not for every cursor step)."""

    def __init__(self) -> None:
        self.last: tuple[bool, str | None] | None = None

    def __call__(self, state: Any) -> None:
        if state.stopped:  # refused for good: why ends the command instead, in one line
            return
        if state.misbehaving:  # one line, then quiet while it retries the same refusal
            if self.last != (False, "misbehaving"):
                self.last = (False, "misbehaving")
                print(
                    f"relay: misbehaving ({printable(state.error or '', 200)}; {state.refusals} "
                    "times in a row); retrying with backoff, skipping nothing",
                    flush=True,
                )
            return
        key = (state.connected, None if state.connected else state.error)
        if key == self.last or (not state.connected and not state.error):
            return
        self.last = key
        if not state.connected:
            later = f"next try in {state.retry_in:.1f} s" if state.retry_in else "retrying"
            print(f"relay: disconnected ({printable(state.error, 200)}); {later}", flush=True)
        elif state.pending:
            n = state.pending
            print(
                f"relay: connected, catching up on {n:,} deliver{'y' if n == 1 else 'ies'} "
                f"after cursor {state.cursor}",
                flush=True,
            )
        else:
            print(f"relay: connected, resuming after cursor {state.cursor}", flush=True)


def _print_retrying(retrying: Any) -> None:
    """A delivery --to did not take, on each try: kept, and tried again."""
    d = retrying.delivery
    delay = retrying.delay_s
    later = f"{delay:.1f} s" if delay < 10 else f"{delay:.0f} s"
    print(
        f"{d.cursor:>8}  {printable(d.webhook_id or '-', 60)}  -> not taken "
        f"({printable(retrying.why, 200)}); try {retrying.tries + 1} in {later}",
        flush=True,
    )


def _print_rewound(cursor: int, head: int) -> None:
    from walletpass_tui.relay.link.state import rewound_line

    print(f"relay: {rewound_line(cursor, head).removeprefix('relay ')}", flush=True)


def _print_skipped(skipped: Any) -> None:
    why = printable(skipped.why, 200)
    print(
        f"{skipped.cursor:>8}  skipped: the relay sent an event that cannot be read ({why})",
        flush=True,
    )


class _HandedPrinter:
    """One line per delivery handed over, and once a hint when late deliveries fail as too old."""

    def __init__(self) -> None:
        self.hinted = False

    def __call__(self, handed: Any) -> None:
        d = handed.delivery
        webhook_id = printable(d.webhook_id or "-", 60)
        print(f"{d.cursor:>8}  {webhook_id}  -> {handed.status}", flush=True)
        late_s = time.time() - d.received_at_ms / 1000
        if handed.status == 401 and late_s > LATE_HINT_S and not self.hinted:
            self.hinted = True
            print(
                f"relay: that delivery reached the relay {late_s / 60:.0f} min ago; a receiver "
                "refuses timestamps older than its --tolerance (300 s): run it with a larger "
                "--tolerance to accept deliveries caught up after a sleep.",
                flush=True,
            )


# -- the database and channels --------------------------------------------------------------------


def _database(args: argparse.Namespace, settings: Any) -> str | None:
    """--database, else WALLETPASS_RELAY_DATABASE, else [relay] database, else None (SQLite in
    the data directory)."""
    return getattr(args, "relay_database", None) or settings.relay_database


def _run(args: argparse.Namespace, action: Any) -> Any:
    """Open the relay database the settings name, run ``action(storage)``, close it."""
    from walletpass_tui.relay.server.storage import open_storage
    from walletpass_tui.relay.server.storage.target import database_target

    settings = settings_from_args(args)
    target = database_target(_database(args, settings), settings.home)

    async def run() -> Any:
        storage = await open_storage(target, serving=False)
        try:
            return await action(storage)
        finally:
            await storage.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop running: the usual case, start one
        return asyncio.run(run())
    # Called from code that runs an event loop already (a test, an embedding): its own thread.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def cmd_migrate(args: argparse.Namespace) -> int:
    from walletpass_tui.relay.server.storage.target import POSTGRESQL

    async def describe(storage: Any) -> str:
        return storage.target.display if storage.target.kind == POSTGRESQL else ""

    shown = _run(args, describe)
    what = shown or "the SQLite file"
    print(f"The relay database is up to date ({what}).")
    return 0


async def _base(args: argparse.Namespace, db: Any) -> tuple[str, bool]:
    """The public URL for printed links, and whether it was only a guess."""
    from walletpass_tui.relay.server.channels import public_base
    from walletpass_tui.relay.server.serve import PUBLIC_URL_META

    flag = getattr(args, "relay_public_url", None)
    stored = await db.get_meta(PUBLIC_URL_META)
    given = flag or stored
    if not given:
        return DEFAULT_LOCAL_URL, True
    base = public_base(given)
    if flag and not stored:
        await db.set_meta(PUBLIC_URL_META, base)  # later commands print the same URLs
    return base, False


async def _print_issued(
    args: argparse.Namespace, db: Any, issued: Any, verb: str, secret: Any = None
) -> None:
    from walletpass_tui.relay.server.channels import ingress_url, subscribe_url

    base, guessed = await _base(args, db)
    channel = issued.channel
    urls = {
        "name": channel.name,
        "ingress_url": ingress_url(base, channel.slug),
        "subscribe_url": subscribe_url(base, channel.slug),
        "token": issued.token,
    }
    if args.json:
        print_json(urls)
        return
    print(f"Channel {channel.shown_name} {verb}.")
    print(f"  Register this ingress URL with the service: {urls['ingress_url']}")
    print(f"  Subscribe URL (listen --relay):             {urls['subscribe_url']}")
    print(f"  Subscriber token (shown once, keep it):     {issued.token}")
    if secret is not None:
        print(
            f"  The relay verifies signatures with {secret.masked} ({secret.source}): forged "
            "posts get 401."
        )
    elif channel.verifies_at_edge:
        print("  The relay verifies signatures: forged posts get 401.")
    if guessed:
        print(
            f"  (URLs use {base}: pass --public-url, or run 'relay serve --public-url' once)",
            file=sys.stderr,
        )


def cmd_channel_add(args: argparse.Namespace) -> int:
    # --secret, --secret -, --secret-file or $WALLETPASS_SECRET, as every command takes it.
    secret = one_secret(args)

    async def add(db: Any) -> None:
        issued = await db.add_channel(
            args.name,
            secret=secret.value if secret is not None else None,
            quota_bytes=args.quota_mb * 1024 * 1024,
        )
        await _print_issued(args, db, issued, "created", secret)

    _run(args, add)
    return 0


def cmd_channel_token(args: argparse.Namespace) -> int:
    async def token(db: Any) -> None:
        await _print_issued(args, db, await db.issue_token(args.name), "has a new token")

    _run(args, token)
    return 0


def cmd_channel_list(args: argparse.Namespace) -> int:
    from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
    from walletpass_tui.text import format_size

    async def read(db: Any) -> tuple[tuple[str, bool], list[Any]]:
        return await _base(args, db), await db.channels()

    (base, _), channels = _run(args, read)
    if args.json:
        print_json(
            [
                {
                    "name": c.name,
                    "ingress_url": ingress_url(base, c.slug),
                    "subscribe_url": subscribe_url(base, c.slug),
                    "tokens": c.tokens,
                    "deliveries": c.deliveries,
                    "rejected": c.rejected,
                    "used_bytes": c.used_bytes,
                    "quota_bytes": c.quota_bytes,
                    "over_quota": c.over_quota,
                    "verifies_at_edge": c.verifies_at_edge,
                    "secret_problem": c.secret_problem,
                }
                for c in channels
            ]
        )
        return 0
    if not channels:
        print("No channels yet: 'walletpass-tui relay channel add NAME' creates one.")
        return 0
    rows = [
        [
            c.shown_name,  # read from the database: escaped
            str(c.tokens),
            str(c.deliveries),
            str(c.rejected),
            f"{format_size(c.used_bytes)} / {format_size(c.quota_bytes)}",
            _state(c),
            "yes" if c.verifies_at_edge else "no",
            ingress_url(base, c.slug),
        ]
        for c in channels
    ]
    print_table(
        rows, ["NAME", "TOKENS", "STORED", "REJECTED", "USED", "STATE", "EDGE-VERIFY", "INGRESS"]
    )
    return 0


def _state(channel: Any) -> str:
    if channel.secret_problem:
        return "SECRET UNUSABLE (ingress answers 503)"
    return "OVER QUOTA (ingress answers 503)" if channel.over_quota else "ok"


def cmd_channel_revoke(args: argparse.Namespace) -> int:
    count = _run(args, lambda db: db.revoke(args.target))
    print(f"Revoked {count} token{'s' if count != 1 else ''}; subscribers using it are cut off.")
    return 0


def cmd_channel_remove(args: argparse.Namespace) -> int:
    channel = _run(args, lambda db: db.remove(args.name))
    print(
        f"Removed channel {channel.shown_name} and its {channel.deliveries} stored "
        f"deliver{'ies' if channel.deliveries != 1 else 'y'}; its ingress URL now answers 404."
    )
    return 0
