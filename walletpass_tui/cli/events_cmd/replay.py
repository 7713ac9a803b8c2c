"""``events replay``: send a stored message again and record the answer in its history."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from walletpass_tui.cli.common import (
    print_json,
    read_bounded_file,
    settings_from_args,
)
from walletpass_tui.cli.events_cmd.shared import pick_attempt, resolve_message, with_store
from walletpass_tui.cli.secret_flags import one_secret, stdin_conflict
from walletpass_tui.cli.target_flags import target_options
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt
    from walletpass_tui.webhooks.store import Store


def cmd_replay(args: argparse.Namespace) -> int:
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
    from walletpass_tui.webhooks.forward import replay

    settings = settings_from_args(args)
    options = target_options(args, [args.to])  # the CA bundle read, --insecure's warning
    body = None
    if args.body_file:
        body = read_bounded_file(args.body_file, settings.max_body, what="The body file")
    stdin_conflict(args, "body_file")
    given = one_secret(args)
    registry = EndpointRegistry(settings.endpoints_path)

    async def work(store: Store) -> tuple[Attempt, Any]:
        webhook_id = await resolve_message(store, args.webhook_id)
        attempt = pick_attempt(await store.message_attempts(webhook_id), args.attempt, webhook_id)
        secret = given.value if given else None
        if secret is None and attempt.endpoint_id:
            endpoint = registry.get(attempt.endpoint_id)
            secret = endpoint.secret.reveal() if endpoint else None
        result = await replay(
            store, attempt, args.to, mode=args.mode, secret=secret, body=body, options=options
        )
        return attempt, result

    attempt, result = with_store(settings, work)
    mode = "edited, re-signed" if body is not None and body != attempt.body else args.mode
    shown_id = printable(attempt.webhook_id or "-", 80)
    if args.json:
        print_json(
            {
                "webhook_id": attempt.webhook_id,
                "attempt": attempt.attempt_no,
                "mode": mode,
                "target": args.to,
                "headers_added": options.masked_headers(),
                "status": result.status,
                "latency_ms": round(result.latency_ms, 1),
                "error": result.error,
                "response_body": result.body.decode("utf-8", errors="replace"),
            }
        )
    elif result.status is not None:
        print(
            f"Replayed {shown_id} #{attempt.attempt_no} ({mode}) to {printable(args.to)}: "
            f"{result.status} in {result.latency_ms:.0f} ms"
        )
        text = result.body.decode("utf-8", errors="replace").strip()
        if text:
            print("  " + printable(text, 300))
    else:
        print(
            f"Replay of {shown_id} to {printable(args.to)} failed: {printable(result.error or '')}",
            file=sys.stderr,
        )
    return 0 if result.ok else 1
