"""What ``listen`` prints as deliveries arrive: each attempt, the drift it showed, each forward.

The schema learner looks at a delivery after its commit (on a thread of its own, within about
50 ms plus one learning step of the 2xx), so what it found reaches the printer after the
delivery itself:

* as text, the delivery's line is printed at once, and one ``drift ...`` line follows for each
  finding when the learner reports it;
* as JSON (``--json``), the delivery's object waits until the learner has looked at it, at most
  ``HOLD_S``, and carries a ``"drift"`` array (empty when nothing drifted). The answer to the
  sender never waits: printing happens after it. An object the learner did not reach in time is
  printed without ``"drift"``; if it then finds drift in it, one more object follows:
  ``{"drift": [...], "webhook_id": ..., "id": ...}``. Objects keep their order: a forward's
  object waits behind the deliveries held before it.

Without a learner (``--no-schemas``) nothing is held and no ``"drift"`` is printed.

While a topic's first deliveries are learned (drift is looked for once it has 20), the text says
so after each batch: ``schema pass.activated: learning, 5 of 20``, and at the 20th that drift is
looked for from then on; what those first deliveries disagreed on follows as drift lines.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from walletpass_tui.cli.attempt_lines import attempt_text, drift_line
from walletpass_tui.text import printable
from walletpass_tui.webhooks.export import attempt_json

if TYPE_CHECKING:
    from walletpass_tui.schemas.model import GroupKey
    from walletpass_tui.schemas.records import DriftRecord
    from walletpass_tui.webhooks.models import Attempt

HOLD_S = 1.0  # how long a --json object waits for the learner to look at its delivery
EARLY_KEPT = 1000  # drift reported before its delivery's own line was printed, kept for it


@dataclass
class _Held:
    attempt: Attempt | None  # None: a line that only keeps its place (a forward's object)
    deadline: float
    text: str = ""
    drift: list[DriftRecord] = field(default_factory=list)


class ListenPrinter:
    """``runtime.subscribe(printer.deliveries, printer.forwards, drift=printer.drift,
    learned=printer.learned)``; ``close()`` prints whatever is still held (at the end)."""

    def __init__(self, out: TextIO, as_json: bool, *, learning: bool, hold_s: float = HOLD_S):
        self.out = out
        self.as_json = as_json
        self.hold_s = hold_s if (as_json and learning) else 0.0
        self._held: deque[_Held] = deque()
        self._held_ids: dict[int, _Held] = {}
        self._printed_upto = 0  # the highest row id whose line was printed
        self._learned_upto = 0  # the learner has looked at every row up to this one
        self._early: OrderedDict[int, list[DriftRecord]] = OrderedDict()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_for: _Held | None = None

    # -- what the runtime tells --------------------------------------------------------------

    def deliveries(self, batch: Sequence[Attempt]) -> None:
        if not self.hold_s:
            for a in batch:
                self.out.write(attempt_text(a, as_json=self.as_json) + "\n")
                self._printed_upto = max(self._printed_upto, a.id)
                for record in self._early.pop(a.id, ()):
                    self._write_drift(a.id, [record])
            self.out.flush()
            return
        deadline = asyncio.get_running_loop().time() + self.hold_s
        for a in batch:
            held = _Held(a, deadline, drift=self._early.pop(a.id, []))
            self._held.append(held)
            self._held_ids[a.id] = held
        self._release()

    def forwards(self, line: str) -> None:
        """A forward's line (already formatted): printed after every line held before it."""
        if not self._held:
            self.out.write(line + "\n")
            self.out.flush()
            return
        self._held.append(_Held(None, 0.0, line))

    def drift(self, attempt_id: int, records: Sequence[DriftRecord]) -> None:
        held = self._held_ids.get(attempt_id)
        if held is not None:
            held.drift.extend(records)
            return
        if attempt_id > self._printed_upto:  # told before its delivery's line came
            self._early.setdefault(attempt_id, []).extend(records)
            while len(self._early) > EARLY_KEPT:
                self._early.popitem(last=False)
            return
        self._write_drift(attempt_id, records)
        self.out.flush()

    def warm_up(self, group: GroupKey, samples: int) -> None:
        """A topic still learning what its payloads look like (text only)."""
        from walletpass_tui.schemas.drift import DRIFT_AFTER  # loaded by the learner already

        if self.as_json:
            return
        label = printable(group.label, 60)
        if samples < DRIFT_AFTER:
            line = f"schema {label}: learning, {samples} of {DRIFT_AFTER}"
        else:
            line = (
                f"schema {label}: learned from its first {DRIFT_AFTER} deliveries; drift is "
                "looked for from now on"
            )
        self.out.write(line + "\n")
        self.out.flush()

    def learned(self, upto: int) -> None:
        self._learned_upto = max(self._learned_upto, upto)
        self._release()

    def close(self) -> None:
        """Print everything still held (the learner stopped: without ``"drift"`` if it had not
        looked at them)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._held:
            head = self._held.popleft()
            self._write_held(head, looked=self._looked(head))
        self.out.flush()

    # -- printing ----------------------------------------------------------------------------

    def _write_drift(self, attempt_id: int, records: Sequence[DriftRecord]) -> None:
        if not records:
            return
        if self.as_json:
            first = records[0]
            line = json.dumps(
                {
                    "drift": [r.to_json() for r in records],
                    "webhook_id": first.webhook_id,
                    "id": attempt_id,
                }
            )
            self.out.write(line + "\n")
            return
        for record in records:
            self.out.write(drift_line(record) + "\n")

    def _looked(self, held: _Held) -> bool:
        """Whether the learner has looked at the held delivery (drift is told for all of a
        delivery's findings at once, before the progress that covers it)."""
        a = held.attempt
        return a is None or a.id <= self._learned_upto or bool(held.drift)

    def _write_held(self, held: _Held, *, looked: bool) -> None:
        a = held.attempt
        if a is None:
            self.out.write(held.text + "\n")
            return
        self._held_ids.pop(a.id, None)
        self._printed_upto = max(self._printed_upto, a.id)
        data: dict[str, Any] = attempt_json(a)
        if looked:
            data["drift"] = [r.to_json() for r in held.drift]
        self.out.write(json.dumps(data) + "\n")

    def _release(self) -> None:
        """Print the held lines, in order, that the learner has looked at or waited enough."""
        if not self._held:
            return
        now = asyncio.get_running_loop().time()
        wrote = False
        while self._held:
            head = self._held[0]
            looked = self._looked(head)
            if not looked and head.deadline > now:
                break
            self._held.popleft()
            self._write_held(head, looked=looked)
            wrote = True
        if wrote:
            self.out.flush()
        self._schedule()

    def _schedule(self) -> None:
        """One timer, for the deadline of the line at the head."""
        head = self._held[0] if self._held else None
        if head is self._timer_for and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_for = head
        if head is not None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(max(0.0, head.deadline - loop.time()), self._expire)

    def _expire(self) -> None:
        self._timer = self._timer_for = None
        self._release()
