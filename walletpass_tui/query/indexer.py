"""``FieldIndexer``: keeps the field index up to date on a thread of its own, off the commit path.

After a commit (``wake()``, a listener of the store) it waits COALESCE_S for more commits, then
indexes every new row in chunks (``index.Fields.step``). Reading a body is Python work, which
shares the interpreter with the receiver's event loop, so while deliveries keep arriving during
its steps it takes at most BUSY_SHARE of the time (it falls behind rather than slow the receiver;
queries look at the rows it has not reached one by one), and a backlog (the first start on a long
history) at most BACKLOG_SHARE. Without a wake-up it looks for new rows every POLL_S.

A failed step is logged and tried again after RETRY_S; a damaged index file is made anew. Each step
first follows the files at their paths (``Fields.step``): the index deleted or replaced is opened
again (made anew), and a history the store started over is indexed from its first row. Nothing
stored is ever at stake: the index holds nothing the history does not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from walletpass_tui.logs import suppressed
from walletpass_tui.query.index import CHUNK, Fields

if TYPE_CHECKING:
    from walletpass_tui.webhooks.store import Store

log = logging.getLogger(__name__)

COALESCE_S = 0.05
POLL_S = 0.5
RETRY_S = 0.5
BACKLOG_SHARE = 0.5
BUSY_SHARE = 0.25


class FieldIndexer:
    """Index the history at ``history_path``: ``start()``, ``follow(store)``, ``stop()``."""

    def __init__(self, history_path: Path, *, busy_timeout_ms: int = 5000) -> None:
        self.history_path = Path(history_path)
        self._fields = Fields(self.history_path, busy_timeout_ms)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._idle = threading.Event()
        self._commits = 0
        self._thread: threading.Thread | None = None
        self.failures = 0
        self.upto = 0  # the last row indexed (read by tests and the dashboard)

    def start(self) -> FieldIndexer:
        if self._thread is not None:
            raise RuntimeError("This FieldIndexer was already started.")
        self._thread = threading.Thread(target=self._run, name="field-indexer", daemon=True)
        self._thread.start()
        self.wake()
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        """Finish the step under way and close the index."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def wake(self, *_: object) -> None:
        """New rows were committed: index them soon (a listener of the store)."""
        self._commits += 1
        self._idle.clear()
        self._wake.set()

    def follow(self, store: Store) -> Callable[[], None]:
        """Wake after each of ``store``'s commits; returns a function that stops that."""
        return store.subscribe(self.wake)

    def settled(self, timeout: float | None = None) -> bool:
        """Block until every row committed before this call is indexed (False: timed out)."""
        self.wake()
        return self._idle.wait(timeout)

    # -- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._open()
            while not self._stopping.is_set():
                woken = self._wake.wait(POLL_S)
                if self._stopping.is_set():
                    break
                if woken:
                    time.sleep(COALESCE_S)  # gather the commits that follow
                self._wake.clear()
                self._follow()
        finally:
            self._fields.close()

    def _open(self) -> None:
        while not self._stopping.is_set():
            try:
                self._fields.open()
                return
            except Exception as exc:  # _failed logs it
                self._failed(exc)
                self._stopping.wait(RETRY_S)

    def _follow(self) -> None:
        while not self._stopping.is_set():
            started = time.perf_counter()
            commits = self._commits
            try:
                step = self._fields.step(CHUNK)
            except Exception as exc:  # _failed logs it; tried again
                self._failed(exc)
                self._stopping.wait(RETRY_S)
                self._wake.set()
                return
            self.upto = step.upto
            busy = self._commits != commits  # deliveries arrived while it indexed
            if step.rows == 0:
                if not self._wake.is_set():
                    self._idle.set()
                return
            self._pause(started, BUSY_SHARE if busy else BACKLOG_SHARE)

    def _pause(self, started: float, share: float) -> None:
        spent = time.perf_counter() - started
        pause = spent * (1 - share) / share
        if pause > 0:
            self._stopping.wait(pause)

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        log.warning(
            "Indexing the fields of %s failed (%s: %s); it is tried again, and deliveries are "
            "not affected.",
            self.history_path,
            type(exc).__name__,
            exc,
        )
        with suppressed(log, "opening the field index again"):
            self._fields.close()
            self._fields.open()
