"""``events diff A B``: what changed from one stored attempt to another: the body's paths added,
removed and changed (the learned schema's paths), and the headers that differ.

A side is a message (a webhook-id, the start of one, or ``last``) with ``@N`` for its attempt N
(default: its last attempt). A webhook-id stored as typed is that message, whatever it holds: a
sender may put ``@`` in its ids, and ``x@1`` is then the message ``x@1`` (its attempt 1 is
``x@1@1``), never attempt 1 of ``x``. With one side only, its first attempt is compared with its last (a
redelivery against its first attempt).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import CommandError, print_json, settings_from_args
from walletpass_tui.cli.events_cmd.shared import resolve_message, with_history
from walletpass_tui.errors import UsageError
from walletpass_tui.query.diff import Diff, diff, diff_lines
from walletpass_tui.text import parse_ascii_int, printable

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt
    from walletpass_tui.webhooks.store.reading import History


def split_ref(text: str) -> tuple[str, int | None]:
    """``msg_2KWP@2`` -> ("msg_2KWP", 2); the attempt number None when not given (text after
    the last @ that is not a number is part of the webhook-id)."""
    ref, sep, number = text.rpartition("@")
    value = parse_ascii_int(number) if sep and ref else None  # the digits 0-9 only
    if value is None:
        return text, None
    if not 1 <= value <= 1_000_000:
        raise UsageError(f"{printable(text, 80)!r}: attempts are numbered from 1.")
    return ref, value


async def side(history: History, text: str) -> tuple[str, int | None]:
    """The message a side names and its attempt number (None: not given). A webhook-id stored
    exactly as typed wins over reading a trailing ``@N`` as an attempt."""
    if "@" in text:
        whole = text.strip()
        if await history.messages_starting_with(whole, 1) == [whole]:
            return whole, None
    return split_ref(text)


async def _attempt(history: History, text: str) -> tuple[Attempt, list[Attempt]]:
    ref, number = await side(history, text)
    webhook_id = await resolve_message(history, ref)
    attempts = await history.message_attempts(webhook_id)
    if not attempts:
        raise CommandError(f"No attempt of {printable(webhook_id, 80)} is stored (pruned?).")
    if number is None:
        return attempts[-1], attempts
    found = next((a for a in attempts if a.attempt_no == number), None)
    if found is None:
        raise CommandError(
            f"{printable(webhook_id, 80)} has no attempt #{number} (it has {len(attempts)})."
        )
    return found, attempts


def cmd_diff(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)

    async def load(history: History) -> Diff:
        a, attempts = await _attempt(history, args.a)
        if args.b is not None:
            b, _ = await _attempt(history, args.b)
            return diff(a, b)
        if len(attempts) < 2:
            raise UsageError(
                f"{printable(a.webhook_id or '', 80)} has one attempt; name another to compare "
                "it with: walletpass-tui events diff A B."
            )
        return diff(attempts[0], attempts[-1])

    found = with_history(settings, load)
    if args.json:
        print_json(found.to_json())
    else:
        print("\n".join(line for _, line in diff_lines(found)))
    return 0
