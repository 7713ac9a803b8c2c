"""``events export``: attempts, oldest first, as JSON Lines or curl commands.

Each attempt is read and written in turn (bodies are never all held at once); on a terminal,
stderr shows how far it got while stdout goes to a file or a pipe.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.cli.events_cmd.shared import with_history
from walletpass_tui.cli.progress import Progress, on_terminal
from walletpass_tui.cli.time_args import check_window
from walletpass_tui.webhooks.export import to_curl, to_jsonl

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt
    from walletpass_tui.webhooks.store.reading import History

PAGE = 500


def cmd_export(args: argparse.Namespace) -> int:
    from walletpass_tui.cli.events_cmd.where import log_filter

    settings = settings_from_args(args)
    target = args.to or settings.receiver_url()
    check_window(args.since, args.until)
    flt = log_filter(
        args,
        settings,
        since_ms=args.since.ms if args.since else None,
        until_ms=args.until.ms if args.until else None,
    )
    out = sys.stdout
    # The lines themselves show the progress when they go to the terminal.
    progress = Progress("exported", enabled=on_terminal(sys.stderr) and not on_terminal(out))

    def write(attempt: Attempt) -> None:
        line = to_jsonl(attempt) if args.format == "jsonl" else to_curl(attempt, target)
        out.write(line + "\n")

    async def ids(store: History) -> list[int]:
        """The ids to export, oldest first (log rows carry no body)."""
        found: list[int] = []
        before = None
        while True:
            page = await store.log_page(flt, limit=PAGE, before_id=before)
            found.extend(r.id for r in page)
            if len(page) < PAGE or (args.limit and len(found) >= args.limit):
                break
            before = page[-1].id
        if args.limit:
            found = found[: args.limit]
        found.reverse()
        return found

    async def work(store: History) -> int:
        if args.webhook_id:
            attempts = await store.message_attempts(args.webhook_id)
            for attempt in attempts:
                write(attempt)
            return len(attempts)
        wanted = await ids(store)
        progress.total = len(wanted)
        written = 0
        with progress:
            for n, attempt_id in enumerate(wanted, 1):
                found = await store.attempt(attempt_id)
                if found is not None:  # pruned meanwhile
                    write(found)
                    written += 1
                progress.update(n)
        return written

    if not with_history(settings, work):
        print("No attempts match.", file=sys.stderr)
    return 0
