"""Deliberate failures, to watch a sender's retry schedule: a value the runtime replaces through
its methods (``pause_acks``, ``fail_first``...), read by the receiver for each delivery."""

from __future__ import annotations

from dataclasses import dataclass, replace

from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.statuses import FINAL_STATUSES

RESPOND_RANGE = f"from {FINAL_STATUSES.start} to {FINAL_STATUSES.stop - 1}"
PAUSED_NOTE = "injected: acknowledgements paused"
# What a paused receiver answers: a pause is made with p in a dashboard, and ends with p again or
# when that dashboard closes (``trigger`` reads it to say so).
PAUSED_ANSWER = (
    "Refused: acknowledgements paused by a dashboard; press p in it to resume them, or close it\n"
)


@dataclass(frozen=True)
class Injection:
    """Deliberate failures, to watch a sender's retry schedule (a value: the runtime replaces it)."""

    fail_first: int = 0  # answer 500 to the first N attempts of each message
    respond_status: int | None = None  # answer every verified delivery with this status
    delay_s: float = 0.0  # wait this long before answering
    paused: bool = False  # answer 503 to verified deliveries until unpaused

    def __post_init__(self) -> None:
        status = self.respond_status
        if status is not None and (type(status) is not int or status not in FINAL_STATUSES):
            raise ValueError(
                f"respond takes a final HTTP status {RESPOND_RANGE} (1xx are interim answers only)"
            )

    def decide(self, attempt: Attempt) -> Attempt:
        if not attempt.verified:
            return attempt
        if self.paused:
            return replace(attempt, status=503, note=PAUSED_NOTE)
        if self.fail_first and attempt.attempt_no <= self.fail_first:
            return replace(
                attempt,
                status=500,
                note=f"injected: fail first {self.fail_first} (attempt {attempt.attempt_no})",
            )
        if self.respond_status is not None:
            return replace(
                attempt, status=self.respond_status, note=f"injected: respond {self.respond_status}"
            )
        return attempt

    @property
    def active(self) -> bool:
        return bool(
            self.paused or self.fail_first or self.respond_status is not None or self.delay_s
        )

    def describe(self) -> str:
        """A sentence saying what is injected, e.g. for ``listen``'s banner ("" when nothing)."""
        parts = []
        if self.paused:
            parts.append("verified deliveries are answered 503 (acknowledgements paused)")
        if self.fail_first:
            n = self.fail_first
            parts.append(f"the first {n} attempt{'s' if n != 1 else ''} of each message get 500")
        if self.respond_status is not None:
            parts.append(f"verified deliveries are answered {self.respond_status}")
        if self.delay_s:
            parts.append(f"every answer waits {self.delay_s:g} s")
        if not parts:
            return ""
        text = "; ".join(parts)
        return text[0].upper() + text[1:] + "."
