"""``relay channel add, token, list, revoke, remove``: a relay's channels, in its database."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from walletpass_tui.cli.common import print_json, print_table
from walletpass_tui.cli.relay_cmd.database import run_on_storage
from walletpass_tui.cli.secret_flags import one_secret

DEFAULT_LOCAL_URL = "http://127.0.0.1:8080"  # the printed links' base when no public URL is known


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

    run_on_storage(args, add)
    return 0


def cmd_channel_token(args: argparse.Namespace) -> int:
    async def token(db: Any) -> None:
        await _print_issued(args, db, await db.issue_token(args.name), "has a new token")

    run_on_storage(args, token)
    return 0


def cmd_channel_list(args: argparse.Namespace) -> int:
    from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
    from walletpass_tui.text import format_size

    async def read(db: Any) -> tuple[tuple[str, bool], list[Any]]:
        return await _base(args, db), await db.channels()

    (base, _), channels = run_on_storage(args, read)
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
    count = run_on_storage(args, lambda db: db.revoke(args.target))
    print(f"Revoked {count} token{'s' if count != 1 else ''}; subscribers using it are cut off.")
    return 0


def cmd_channel_remove(args: argparse.Namespace) -> int:
    channel = run_on_storage(args, lambda db: db.remove(args.name))
    print(
        f"Removed channel {channel.shown_name} and its {channel.deliveries} stored "
        f"deliver{'ies' if channel.deliveries != 1 else 'y'}; its ingress URL now answers 404."
    )
    return 0
