"""The history as read: every query of the dashboard and the commands, through ``Reader``.

``History`` is all a command that only looks needs (``events list``, ``show``, ``export``), and
``read_only.open_history`` opens one that writes nothing at all. ``Store`` is a ``History`` that
also writes.
"""

from __future__ import annotations

from pathlib import Path

from walletpass_tui.webhooks.models import (
    FORWARD,
    Attempt,
    ForwardRow,
    LogFilter,
    LogRow,
    MessageRow,
    RowCondition,
    Stats,
)
from walletpass_tui.webhooks.store.activity import Activity
from walletpass_tui.webhooks.store.queries import Reader


class History:
    """Reads through one ``Reader``; close with ``await history.close()``."""

    def __init__(self, path: Path, reader: Reader) -> None:
        self.path = path
        self._reader = reader

    async def close(self) -> None:
        await self._reader.close()

    async def __aenter__(self) -> History:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- forwards ----------------------------------------------------------------------------

    async def next_pending_forward(self, target: str) -> ForwardRow | None:
        """The oldest pending forward to ``target``: forwards go out in arrival order."""
        return await self._reader.next_pending_forward(target)

    async def pending_forward_targets(self) -> list[str]:
        return [target for target, _ in await self.pending_forwards_by_target()]

    async def pending_forwards_by_target(self) -> list[tuple[str, int]]:
        """(target, forwards waiting for it), for every target with any."""
        return await self._reader.pending_forwards_by_target()

    async def pending_forward_count(self, target: str | None = None) -> int:
        return await self._reader.pending_forward_count(target)

    async def forwards_for_message(self, webhook_id: str) -> list[ForwardRow]:
        return await self._reader.forwards_for_message(webhook_id)

    async def replay_targets(self, attempt: Attempt) -> list[str]:
        """Where a replay of ``attempt`` goes by default: the targets its message was forwarded
        to (per topic, as ``--forward-to TOPIC=URL`` routed it), else the last target a
        delivery of its topic was forwarded or replayed to; [] when there is none."""
        forwarded = [
            f.target
            for f in await self._reader.forwards_for_message(attempt.webhook_id or "")
            if f.kind == FORWARD
        ]
        if forwarded:
            return list(dict.fromkeys(forwarded))
        last = await self._reader.last_target_of_topic(attempt.topic)
        return [last] if last else []

    # -- the log and the messages -------------------------------------------------------------

    async def log_page(
        self,
        flt: LogFilter | None = None,
        *,
        limit: int = 200,
        before_id: int | None = None,
        after_id: int | None = None,
        oldest_first: bool = False,
    ) -> list[LogRow]:
        """Log rows newest first, optionally only older than ``before_id`` / newer than ``after_id``.

        ``oldest_first`` orders them oldest first instead, so ``after_id`` with ``limit`` gives the
        rows just after it (a view paging back towards the newest) rather than the newest ones.
        """
        return await self._reader.log_page(
            flt, limit=limit, before_id=before_id, after_id=after_id, oldest_first=oldest_first
        )

    async def count(self, flt: LogFilter | None = None) -> int:
        return await self._reader.count(flt)

    async def attempt(self, attempt_id: int) -> Attempt | None:
        return await self._reader.attempt(attempt_id)

    async def message_attempts(self, webhook_id: str) -> list[Attempt]:
        """Every attempt of one message, oldest first."""
        return await self._reader.message_attempts(webhook_id)

    async def last_received_message(self) -> str | None:
        """The webhook-id of the newest attempt a sender posted (not the check's), or None."""
        return await self._reader.last_received_message()

    async def last_verified_message(self) -> str | None:
        """The webhook-id of the newest verified attempt a sender posted (not the check's), or
        None: what ``events replay last`` sends again."""
        return await self._reader.last_verified_message()

    async def messages_starting_with(self, prefix: str, limit: int = 11) -> list[str]:
        """Up to ``limit`` webhook-ids starting with ``prefix``, a whole id equal to it first."""
        return await self._reader.messages_starting_with(prefix, limit)

    async def message_attempts_without_bodies(self, webhook_id: str) -> list[Attempt]:
        """Every attempt of one message, oldest first, with empty bodies (sizes kept)."""
        return await self._reader.message_attempts_without_bodies(webhook_id)

    async def list_messages(
        self,
        *,
        limit: int = 50,
        topic: str | None = None,
        verdict: str | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        text: str | None = None,
        where: RowCondition | None = None,
    ) -> list[MessageRow]:
        """Messages, newest first; with ``where``, those with an attempt that matches it."""
        return await self._reader.list_messages(
            limit=limit,
            topic=topic,
            verdict=verdict,
            since_ms=since_ms,
            until_ms=until_ms,
            text=text,
            where=where,
        )

    async def stats(self) -> Stats:
        """Every delivery stored (requests "Check my app" sent are not deliveries)."""
        return await self._reader.stats()

    async def last_relay_cursor(self, relay_url: str) -> int:
        """The newest cursor stored from the relay at ``relay_url`` (0: none yet): a relay link
        resumes after it."""
        return await self._reader.last_relay_cursor(relay_url)

    async def has_relay_cursor(self, relay_url: str, cursor: int) -> bool:
        """Whether the delivery at ``cursor`` of the relay at ``relay_url`` is stored (the unique
        index on the pair makes this one lookup)."""
        return await self._reader.has_relay_cursor(relay_url, cursor)

    async def relay_received_at(self, relay_url: str) -> int | None:
        """When the relay at ``relay_url`` received the newest verified delivery stored from it
        (None: none yet): a relay link refuses received times going back far before it."""
        return await self._reader.relay_received_at(relay_url)

    async def last_id(self) -> int:
        return await self._reader.last_id()

    async def activity(
        self, since_ms: int, bucket_ms: int, *, attempts: bool = True, forwards: bool = True
    ) -> Activity:
        """The one activity query (activity.py): what the header, the Stats screen and ``events
        stats`` count, by bucket from the minute holding ``since_ms`` on."""
        return await self._reader.activity(
            since_ms, bucket_ms, attempts=attempts, forwards=forwards
        )
