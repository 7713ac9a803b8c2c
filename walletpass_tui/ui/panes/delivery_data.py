"""What the detail pane shows of one delivery, loaded from the store: its attempts, forwards
and body pages (prepared in a worker thread)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from walletpass_tui.ui.body_pages import BodyPage, body_page
from walletpass_tui.ui.widgets.body_text import Wrapped, wrap_lines
from walletpass_tui.webhooks.models import Attempt, ForwardRow
from walletpass_tui.webhooks.store import Store

if TYPE_CHECKING:
    from walletpass_tui.schemas.records import DriftRecord

__all__ = [
    "AHEAD_BYTES",
    "Ahead",
    "BodyView",
    "DeliveryData",
    "load_delivery",
    "load_drift",
    "load_pages",
]

AHEAD_BYTES = 64 * 1024  # a body this large arriving is prepared before the log selects it


@dataclass(frozen=True)
class DeliveryData:
    attempt: Attempt
    attempts: tuple[Attempt, ...]  # every attempt of its message, oldest first (bodies empty
    # but the shown attempt's: sizes are in body_size)
    forwards: tuple[ForwardRow, ...]
    drift: tuple[DriftRecord, ...] = ()  # the payload drift this delivery showed first


async def load_drift(store: Store, attempt_id: int) -> tuple[DriftRecord, ...]:
    """The drift findings the attempt showed first, read from the schema file in a thread (a
    file that cannot be read shows none)."""
    from walletpass_tui.schemas.errors import SchemaError
    from walletpass_tui.schemas.reader import SchemaReader

    reader = SchemaReader(store.path)
    try:
        return tuple(await asyncio.to_thread(reader.drift_for_attempt, attempt_id))
    except SchemaError:  # drift is not shown; the schema pane says why
        return ()


async def load_delivery(
    store: Store, attempt_id: int, *, arrived: Attempt | None = None
) -> DeliveryData | None:
    """The attempt with its body, and every attempt of its message without theirs (the list
    shows when and how each was answered; a retried megabyte body is read once, not per try).

    ``arrived`` is the attempt as ``LiveRows`` handed it over, body included: its row is then
    read without the body, which is taken from memory (the bytes just stored, not read back)."""
    if arrived is not None and arrived.id == attempt_id and arrived.webhook_id:
        listed = await store.message_attempts_without_bodies(arrived.webhook_id)
        row = next((a for a in listed if a.id == attempt_id), None)
        if row is not None and row.body_size == len(arrived.body):
            with_body = replace(row, body=arrived.body)
            attempts = tuple(with_body if a.id == attempt_id else a for a in listed)
            forwards = tuple(await store.forwards_for_message(arrived.webhook_id))
            return DeliveryData(with_body, attempts, forwards)
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


class Ahead:
    """The pages of a large body being prepared as it arrives, before the log selects its row:
    preparing them (a thread) overlaps with the log drawing the row, instead of following it."""

    def __init__(self) -> None:
        self.attempt: Attempt | None = None
        self._pages: asyncio.Task[BodyView] | None = None

    def start(self, attempt: Attempt, width: int) -> None:
        self.drop()
        self.attempt = attempt
        self._pages = asyncio.ensure_future(load_pages(attempt.body, width=width))

    def take(self, attempt_id: int) -> tuple[Attempt, asyncio.Task[BodyView]] | None:
        """What was prepared for ``attempt_id`` (then forgotten here), or None."""
        attempt, pages = self.attempt, self._pages
        if attempt is None or pages is None or attempt.id != attempt_id:
            return None
        self.attempt, self._pages = None, None
        return attempt, pages

    def drop(self) -> None:
        if self._pages is not None:
            self._pages.cancel()
        self.attempt, self._pages = None, None
