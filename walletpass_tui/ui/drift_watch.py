"""Drift and learning progress from the delivery runtime, published to the panes.

The runtime tells ``drift(attempt_id, records)`` for each new delivery that drifted: its id is
added to the app's ``DriftMarks`` at once (the log's mark, the header's count) and published on
``LiveSignals.drift``. What the learner learned (``learned(upto)``), including while it catches up
with an older history, makes the marks and the count be read again from the schema file at most
every ``REREAD_S``, in a thread (one cheap query first: the marks only when the findings
changed), and ``LiveSignals.schemas`` published so an open Schema screen reads again. Started after the first frame.

A dashboard attached to a receiver in another process has no learner of its own: the receiver
learns into the schema file beside the history, and this side reads that file again while new
deliveries arrive (every ``REREAD_S``, for ``ATTACHED_LINGER_S`` after the last one, since the
receiver learns a moment after its commit).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.ui.messages import LiveSignals
from walletpass_tui.ui.view.schema_view import DriftMarks, read_marks

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from walletpass_tui.runtime.protocol import Runtime
    from walletpass_tui.schemas.records import DriftRecord
    from walletpass_tui.webhooks.models import Attempt

log = logging.getLogger(__name__)

REREAD_S = 1.0  # the schema file is read again at most this often while learning goes on
ATTACHED_LINGER_S = 3.0  # attached: how long after a delivery the schema file is still re-read


def learns(runtime: Runtime) -> bool:
    """Whether what this dashboard shows is learned from: its own runtime's learner, or the
    receiver's it is attached to (read from the schema file that one keeps)."""
    return runtime.learning != "off"


class DriftWatch:
    def __init__(self, runtime: Runtime, app: App[Any], live: LiveSignals) -> None:
        self.runtime = runtime
        self.app = app
        self.live = live
        self.marks = DriftMarks(enabled=learns(runtime))
        self.reader = SchemaReader(runtime.store.path)
        live.drift_marks = self.marks
        self._unsubscribe: Callable[[], None] | None = None
        self._timer: Timer | None = None
        self._arrived_at = float("-inf")
        self._reading = False
        self._again = False
        self._state: tuple[int, ...] | None = None  # the schema file's drift when last read

    def start(self) -> None:
        if not self.marks.enabled:
            self.live.drift.publish(None)
            return
        if self.runtime.learning == "elsewhere":
            self._unsubscribe = self.runtime.subscribe(deliveries=self._arrived)
            self._timer = self.app.set_interval(REREAD_S, self._linger)
        else:
            # The learner tells from a callback its thread scheduled on the loop, outside the
            # app's context: hop onto the app's message queue before touching a widget (a timer
            # started there would not find the app when it fires).
            self._unsubscribe = self.runtime.subscribe(
                drift=self._drift_heard, learned=self._learned_heard
            )
        self.reread()

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _arrived(self, attempts: Sequence[Attempt]) -> None:
        self._arrived_at = time.monotonic()
        self.reread()

    def _linger(self) -> None:
        if time.monotonic() - self._arrived_at < ATTACHED_LINGER_S:
            self.reread()

    def _drift_heard(self, attempt_id: int, records: Sequence[DriftRecord]) -> None:
        self.app.call_later(self._drift, attempt_id, records)

    def _learned_heard(self, upto: int) -> None:
        self.app.call_later(self._learned, upto)

    def _drift(self, attempt_id: int, records: Sequence[DriftRecord]) -> None:
        if self.marks.add(attempt_id, records):
            self.live.drift.publish(frozenset((attempt_id,)))

    def _learned(self, upto: int) -> None:
        self.reread()

    def reread(self) -> None:
        """The marks and the count from the schema file, then the Schema screen told; at most
        one read at a time and one every ``REREAD_S``."""
        if self._reading:
            self._again = True
            return
        self._reading = True
        self.app.run_worker(self._read(), group="drift-marks", exit_on_error=False)

    async def _read(self) -> None:
        try:
            try:
                state, found = await asyncio.to_thread(read_marks, self.reader, self._state)
            except SchemaError as exc:
                log.warning("The drift marks were not read: %s", exc)
            else:
                self._state = state
                if found is not None:  # the findings changed since the last read
                    before = self.marks.version
                    changed = self.marks.reset(*found)
                    if self.marks.version != before:
                        self.live.drift.publish(frozenset(changed) if changed else None)
            self.live.schemas.publish(None)
            await asyncio.sleep(REREAD_S)
        finally:
            self._reading = False
        if self._again:
            self._again = False
            self.reread()


def templates_learned(live: LiveSignals, records: Sequence[DriftRecord]) -> None:
    """The templates pane taught the templates it listed: the Schema screen reads again, and
    their drift (no delivery brought it) is counted in the header."""
    marks = live.drift_marks
    if records and marks is not None:
        marks.add_findings(len(records))
        live.drift.publish(None)
    live.schemas.publish(None)
