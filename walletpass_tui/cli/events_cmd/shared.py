"""What the ``events`` actions share: the store opened for one command, not-found."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from walletpass_tui.cli.common import CommandError
from walletpass_tui.cli.upgrade import upgrade_history
from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt
    from walletpass_tui.webhooks.store import Store
    from walletpass_tui.webhooks.store.reading import History

T = TypeVar("T")

VERDICTS = ("verified", "rejected")
LIST_LIMIT_MAX = 100_000


def with_store(settings: Settings, work: Callable[[Store], Awaitable[T]]) -> T:
    """Run ``work`` on the history database, opened for this command and closed after."""
    from walletpass_tui.webhooks.store import Store

    async def run() -> T:
        if not settings.database_path.exists():
            raise CommandError(
                f"No history yet in {settings.home}; run 'walletpass-tui listen' (or the dashboard) "
                "to receive webhooks."
            )
        async with await Store.open(settings.database_path) as store:
            return await work(store)

    upgrade_history(settings.database_path)
    return asyncio.run(run())


def with_history(settings: Settings, work: Callable[[History], Awaitable[T]]) -> T:
    """Run ``work`` on the history opened only to look: nothing is written, so it works on a full
    disk (see webhooks/store/read_only.py). A history an older version wrote is migrated first."""
    from walletpass_tui.webhooks.store import Store
    from walletpass_tui.webhooks.store.read_only import Outdated, open_history

    upgrade_history(settings.database_path)

    async def run() -> T:
        if not settings.database_path.exists():
            raise CommandError(
                f"No history yet in {settings.home}; run 'walletpass-tui listen' (or the dashboard) "
                "to receive webhooks."
            )
        history: History
        try:
            history = await open_history(settings.database_path)
        except Outdated:  # an old schema: read with the full store, which upgrades it
            history = await Store.open(settings.database_path)
        async with history:
            return await work(history)

    return asyncio.run(run())


LAST = (
    "last"  # the message a sender posted last (replay: the last verified), wherever an id is asked
)
CANDIDATES_SHOWN = 10


async def resolve_message(history: History, ref: str) -> str:
    """The webhook-id ``ref`` names: ``last`` (the newest a sender posted; the check's requests
    left out), a whole id, or the start of exactly one. An ambiguous start is a usage error
    listing the candidates; one that starts no id, a failure."""
    text = ref.strip()
    if text.lower() == LAST:
        found = await history.last_received_message()
        if found is None:
            raise no_delivery_yet()
        return found
    if not text:
        raise UsageError("Give a webhook-id, the start of one, or last.")
    ids = await history.messages_starting_with(text, CANDIDATES_SHOWN + 1)
    if not ids:
        raise no_such_message(text)
    if ids[0] == text or len(ids) == 1:
        return ids[0]
    shown = ids[:CANDIDATES_SHOWN]
    more = "\n  ... and more" if len(ids) > CANDIDATES_SHOWN else ""
    count = f"more than {CANDIDATES_SHOWN}" if more else str(len(ids))
    raise UsageError(
        f"{printable(text, 80)!r} starts {count} webhook-ids; give more of the one you mean:\n"
        + "\n".join("  " + printable(i, 80) for i in shown)
        + more
    )


def no_delivery_yet() -> CommandError:
    return CommandError(
        "No delivery in the history yet; run 'walletpass-tui listen' and send one "
        "('walletpass-tui trigger activated' in another shell)."
    )


def no_such_message(webhook_id: str) -> CommandError:
    return CommandError(
        f"No message {printable(webhook_id, 80)!r} in the history; "
        "'walletpass-tui events list' shows them."
    )


def pick_attempt(attempts: list[Attempt], number: int | None, webhook_id: str) -> Attempt:
    """Attempt ``number`` of a message, or by default its last verified POST (else its last)."""
    if not attempts:
        raise no_such_message(webhook_id)
    if number is not None:
        found = next((a for a in attempts if a.attempt_no == number), None)
        if found is None:
            raise CommandError(
                f"{printable(webhook_id, 80)} has no attempt #{number} (it has {len(attempts)})."
            )
        return found
    verified = [a for a in attempts if a.verified and a.method == "POST"]
    return (verified or attempts)[-1]
