"""``events replay``: send a stored message again and record the answer in its history."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from walletpass_tui.api.urls import TARGET_SCHEMES, UrlError, check_url
from walletpass_tui.cli.common import (
    CommandError,
    print_json,
    read_bounded_file,
    settings_from_args,
)
from walletpass_tui.cli.events_cmd.shared import (
    LAST,
    no_delivery_yet,
    pick_attempt,
    resolve_message,
    with_store,
)
from walletpass_tui.cli.secret_flags import given_secrets, one_secret, stdin_conflict
from walletpass_tui.cli.target_flags import target_options
from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.webhooks.forward import SecretLookup
    from walletpass_tui.webhooks.models import Attempt, ForwardResult
    from walletpass_tui.webhooks.store import Store
    from walletpass_tui.webhooks.store.reading import History

RESIGN = "resign"


@dataclass(frozen=True)
class Planned:
    attempt: Attempt
    target: str
    result: ForwardResult


def cmd_replay(args: argparse.Namespace) -> int:
    from walletpass_tui.webhooks.forward import replay
    from walletpass_tui.webhooks.target_options import insecure_warning

    settings = settings_from_args(args)
    body = None
    if args.body_file:
        body = read_bounded_file(args.body_file, settings.max_body, what="The body file")
    stdin_conflict(args, "body_file")
    # The CA bundle is read (and a missing one refused) before anything else; --insecure's
    # warning names the target, said once it is known.
    options = target_options(args, [args.to] if args.to else [])
    pick_secret = secret_picker(args, settings)

    async def work(store: Store) -> Planned:
        webhook_id = await message_to_replay(store, args.webhook_id)
        attempt = pick_attempt(await store.message_attempts(webhook_id), args.attempt, webhook_id)
        targets = await store.replay_targets(attempt)
        # This home's receiver is looked for only when nothing else says where to replay.
        receiver = None if args.to or targets else own_receiver(settings)
        target = args.to or default_target(attempt, targets, receiver)
        warning = None if args.to else insecure_warning(options.trust, [target])
        if warning:
            print(warning, file=sys.stderr, flush=True)
        result = await replay(
            store,
            attempt,
            target,
            mode=args.mode,
            secret=pick_secret(attempt) if args.mode == RESIGN or body is not None else None,
            body=body,
            options=options,
        )
        return Planned(attempt, target, result)

    planned = with_store(settings, work)
    attempt, result, target = planned.attempt, planned.result, planned.target
    mode = "edited, re-signed" if body is not None and body != attempt.body else args.mode
    shown_id = printable(attempt.webhook_id or "-", 80)
    if args.json:
        print_json(
            {
                "webhook_id": attempt.webhook_id,
                "attempt": attempt.attempt_no,
                "mode": mode,
                "target": target,
                "headers_added": options.masked_headers(),
                "status": result.status,
                "latency_ms": round(result.latency_ms, 1),
                "error": result.error,
                "response_body": result.body.decode("utf-8", errors="replace"),
            }
        )
    elif result.status is not None:
        print(
            f"Replayed {shown_id} #{attempt.attempt_no} ({mode}) to {printable(target)}: "
            f"{result.status} in {result.latency_ms:.0f} ms"
        )
        text = result.body.decode("utf-8", errors="replace").strip()
        if text:
            print("  " + printable(text, 300))
    else:
        print(
            f"Replay of {shown_id} to {printable(target)} failed: {printable(result.error or '')}",
            file=sys.stderr,
        )
    return 0 if result.ok else 1


async def message_to_replay(history: History, ref: str) -> str:
    """The webhook-id a replay sends again: ``last`` is the newest *verified* delivery a sender
    posted (a forgery posted after it is no message to re-sign, and the user is told it was left
    out); anything else as ``resolve_message`` reads it."""
    if ref.strip().lower() != LAST:
        return await resolve_message(history, ref)
    verified = await history.last_verified_message()
    newest = await history.last_received_message()
    if newest is None:
        raise no_delivery_yet()
    if verified == newest:
        return newest
    rejected = await history.message_attempts_without_bodies(newest)
    why = f"{printable(newest, 80)}, was rejected ({printable(rejected[-1].reason, 80)})"
    if verified is None:
        raise CommandError(
            f"Nothing in the history was verified, so there is no last delivery to replay: the "
            f"newest post, {why}; replay it by its webhook-id with a secret to sign it "
            "(WALLETPASS_SECRET, --secret-file or --secret -) or --mode original."
        )
    print(
        f"Replaying {printable(verified, 80)}, the newest verified delivery; a newer post, "
        f"{why}: give its webhook-id to replay that one.",
        file=sys.stderr,
        flush=True,
    )
    return verified


def own_receiver(settings: Settings) -> str | None:
    """The receiver running on this home, or None: where a replay goes when nothing else says."""
    from walletpass_tui.cli.home_receiver import receiver_url, running_url

    return receiver_url(settings) if running_url(settings, unreadable="give --to URL") else None


def default_target(attempt: Attempt, targets: list[str], receiver: str | None = None) -> str:
    """Where a replay goes without --to: the one target its message was forwarded to (or the
    last one its topic was), else this home's running receiver (a redelivery, as the service's
    retry would be); a usage error naming them when there are several, or none at all."""
    shown = printable(attempt.webhook_id or "-", 80)
    if not targets and receiver is not None:
        return receiver
    if len(targets) > 1:
        raise UsageError(
            f"{shown} was forwarded to {len(targets)} targets ("
            + ", ".join(printable(t, 120) for t in targets[:5])
            + "); give --to with the one to replay to."
        )
    if not targets:
        raise UsageError(
            f"Give --to URL: {shown} was not forwarded, no delivery of its topic was, and no "
            "receiver runs on this home ('listen --forward-to URL' forwards them)."
        )
    try:
        return check_url(targets[0], what="the forward target", schemes=TARGET_SCHEMES)
    except UrlError as exc:  # written by an older version under another rule
        raise UsageError(f"{exc} Give --to URL.") from None


def secret_picker(args: argparse.Namespace, settings: Settings) -> SecretLookup:
    """The secret a replay is re-signed with: one given as a flag; else the known secret that
    verified the delivery (the secrets in WALLETPASS_SECRET, the endpoints', this home's test
    secret), found by the signature the history keeps; else the endpoint's."""
    from walletpass_tui.webhooks import home_secret
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
    from walletpass_tui.webhooks.forward import secret_lookup

    if args.secret or args.secret_file:
        chosen = one_secret(args)
        return lambda attempt: chosen.value if chosen else None
    registry = EndpointRegistry(settings.endpoints_path)
    from_env = [given.value for given in given_secrets(args)]
    return secret_lookup(registry, from_env, home_secret.load(settings.home))
