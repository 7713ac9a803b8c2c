"""What the detail pane shows of one delivery, loaded from the store: its attempts, forwards
and body pages (prepared in a worker thread)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from walletpass_tui.ui.body_pages import BodyPage, body_page
from walletpass_tui.ui.widgets.body_text import Wrapped, wrap_lines
from walletpass_tui.webhooks.store import Attempt, ForwardRow, Store

__all__ = ["BodyView", "DeliveryData", "load_delivery", "load_pages"]


@dataclass(frozen=True)
class DeliveryData:
    attempt: Attempt
    attempts: tuple[Attempt, ...]  # every attempt of its message, oldest first (bodies empty
    # but the shown attempt's: sizes are in body_size)
    forwards: tuple[ForwardRow, ...]


async def load_delivery(store: Store, attempt_id: int) -> DeliveryData | None:
    """The attempt with its body, and every attempt of its message without theirs (the list
    shows when and how each was answered; a retried megabyte body is read once, not per try)."""
    attempt = await store.attempt(attempt_id)
    if attempt is None:
        return None
    if attempt.webhook_id:
        listed = await store.message_attempts_without_bodies(attempt.webhook_id)
        attempts = tuple(attempt if a.id == attempt.id else a for a in listed)
        forwards = tuple(await store.forwards_for_message(attempt.webhook_id))
    else:
        attempts, forwards = (attempt,), ()
    return DeliveryData(attempt, attempts or (attempt,), forwards)


@dataclass(frozen=True)
class BodyView:
    """The pages of the body on screen: pretty (or raw when not JSON) and raw."""

    body: BodyPage
    raw: BodyPage
    wrapped: Wrapped | None = None  # the body page's lines at the width it is shown


async def load_pages(
    body: bytes, body_index: int = 0, raw_index: int = 0, *, width: int = 0
) -> BodyView:
    """Both views' pages, prepared in a worker thread (parsing, escaping, highlighting, and
    wrapping the body page at ``width``, when known)."""

    def prepare() -> BodyView:
        page = body_page(body, body_index)
        raw = body_page(body, raw_index, raw=True)
        return BodyView(page, raw, wrap_lines(page.content, width))

    return await asyncio.to_thread(prepare)
