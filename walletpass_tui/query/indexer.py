"""``FieldIndexer``: keeps the field index up to date off the commit path, its connection on a
``SqliteThread`` of its own (``sqlite_thread.py``), paced from the event loop.

After a commit (``wake()``, a listener of the store) it waits COALESCE_S for more commits, then
indexes every new row in chunks (``index.Fields.step``, on the index's thread). Reading a body is
Python work, which shares the interpreter with the receiver's event loop, so deliveries come first
(``webhooks/store/pacing.py``): while they keep arriving it takes at most BUSY_SHARE of the time;
while the receiver is saturated, YIELD_SHARE (it falls behind rather than slow the receiver;
queries look at the rows it has not reached one by one), and it catches up as soon as the rush is
over; a backlog with nothing arriving (the first start on a long history) takes at most
BACKLOG_SHARE. Without a wake-up it looks for new rows every POLL_S.

A failed step is logged and tried again after RETRY_S; a damaged index file is made anew. Each step
first follows the files at their paths (``Fields.step``): the index deleted or replaced is opened
again (made anew), and a history the store started over is indexed from its first row. Nothing
stored is ever at stake: the index holds nothing the history does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from walletpass_tui.logs import suppressed
from walletpass_tui.query.index import CHUNK, Fields, Step
from walletpass_tui.sqlite_thread import SqliteThread
from walletpass_tui.webhooks.store.pacing import Pace

if TYPE_CHECKING:
    from walletpass_tui.webhooks.store import Store

log = logging.getLogger(__name__)

COALESCE_S = 0.05
POLL_S = 0.5
RETRY_S = 0.5
BACKLOG_SHARE = 0.5
BUSY_SHARE = 0.25  # of the time while commits keep arriving
YIELD_SHARE = 0.05  # ... while the receiver is saturated


class FieldIndexer:
    """Index the history at ``history_path``: ``start()`` and ``follow(store)`` on the event loop,
    then ``await stop()``."""

    def __init__(self, history_path: Path, *, busy_timeout_ms: int = 5000) -> None:
        self.history_path = Path(history_path)
        self._fields = Fields(self.history_path, busy_timeout_ms)
        self._thread: SqliteThread | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self.pace = Pace(
            max_share=BUSY_SHARE,
            yield_share=YIELD_SHARE,
            backlog_share=BACKLOG_SHARE,
        )
        self.failures = 0
        self.upto = 0  # the last row indexed (read by tests and the dashboard)

    def start(self) -> FieldIndexer:
        if self._thread is not None:
            raise RuntimeError("This FieldIndexer was already started.")
        self._thread = SqliteThread("field-indexer")
        self._task = asyncio.create_task(self._run(), name="field-indexer")
        self.wake()
        return self

    async def stop(self) -> None:
        """Finish the step under way and close the index."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await task
        thread = self._thread
        if thread is not None and not thread.closed:
            with suppressed(log, "closing the field index"):
                await thread.run(self._fields.close)  # after the step under way
            thread.close()

    def wake(self, batch: object = None) -> None:
        """New rows were committed: index them soon (a listener of the store; ``batch``: the rows
        of that commit)."""
        if batch is not None:
            self.pace.arrived(batch)
        self._idle.clear()
        self._wake.set()

    def follow(self, store: Store) -> Callable[[], None]:
        """Wake after each of ``store``'s commits; returns a function that stops that."""
        return store.subscribe(self.wake)

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until every row committed before this call is indexed (False: timed out)."""
        self.wake()
        self.pace.hurry()
        try:
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        except TimeoutError:  # the answer says so
            return False
        return True

    # -- the pacing, on the event loop; the index's work, on its thread -----------------------

    async def _run(self) -> None:
        assert self._thread is not None
        thread = self._thread
        await self._open(thread)
        while True:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow the cancel stop()
            # sends when a wake-up comes at the same moment, and stop() would wait forever.
            with contextlib.suppress(TimeoutError):  # no wake-up: look for new rows anyway
                async with asyncio.timeout(POLL_S):
                    await self._wake.wait()
            if self._wake.is_set():
                await asyncio.sleep(COALESCE_S)  # gather the commits that follow
            self._wake.clear()
            await self._follow(thread)

    async def _open(self, thread: SqliteThread) -> None:
        while True:
            try:
                await thread.run(self._fields.open)
                return
            except Exception as exc:  # _failed logs it
                await self._failed(thread, exc)
                await asyncio.sleep(RETRY_S)

    async def _follow(self, thread: SqliteThread) -> None:
        while True:
            began = time.monotonic()
            try:
                step, spent = await thread.run(self._timed_step, self.pace.limit(CHUNK))
            except Exception as exc:  # _failed logs it; tried again
                await self._failed(thread, exc)
                await asyncio.sleep(RETRY_S)
                self._wake.set()
                return
            self.upto = step.upto
            self.pace.measure(step.rows, spent)
            if step.rows == 0:
                if not self._wake.is_set():
                    self._idle.set()
                return
            await self.pace.pause(spent, began)

    def _timed_step(self, limit: int) -> tuple[Step, float]:
        """One chunk, on the index's thread, and how long it took there (Python work: the event
        loop waits for the interpreter's lock meanwhile, see pacing.py)."""
        started = time.perf_counter()
        step = self._fields.step(limit)
        return step, time.perf_counter() - started

    async def _failed(self, thread: SqliteThread, exc: BaseException) -> None:
        self.failures += 1
        log.warning(
            "Indexing the fields of %s failed (%s: %s); it is tried again, and deliveries are "
            "not affected.",
            self.history_path,
            type(exc).__name__,
            exc,
        )
        with suppressed(log, "opening the field index again"):
            await thread.run(self._reopen)

    def _reopen(self) -> None:
        self._fields.close()
        self._fields.open()
