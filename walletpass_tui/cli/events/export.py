"""``events export``: attempts, oldest first, as JSON Lines or curl commands."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.cli.events.shared import parse_since, with_history
from walletpass_tui.webhooks.export import to_curl, to_jsonl

if TYPE_CHECKING:
    from walletpass_tui.webhooks.store import Attempt, History

PAGE = 500


def cmd_export(args: argparse.Namespace) -> int:
    from walletpass_tui.webhooks.store import LogFilter

    settings = settings_from_args(args)
    target = args.to or settings.receiver_url()
    since = parse_since(args.since)
    flt = LogFilter(topic=args.topic, verdict=args.verdict, text=args.search, since_ms=since)

    async def work(store: History) -> list[Attempt]:
        if args.webhook_id:
            return await store.message_attempts(args.webhook_id)
        rows, before = [], None
        while True:
            page = await store.log_page(flt, limit=PAGE, before_id=before)
            rows.extend(page)
            if len(page) < PAGE or (args.limit and len(rows) >= args.limit):
                break
            before = page[-1].id
        if args.limit:
            rows = rows[: args.limit]
        found = [await store.attempt(r.id) for r in reversed(rows)]
        return [a for a in found if a is not None]

    attempts: list[Attempt] = with_history(settings, work)
    out = sys.stdout
    for attempt in attempts:
        line = to_jsonl(attempt) if args.format == "jsonl" else to_curl(attempt, target)
        out.write(line + "\n")
    if not attempts:
        print("No attempts match.", file=sys.stderr)
    return 0
