"""How each answer is judged: pass, fail or warn, with a sentence saying what happened."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from walletpass_tui.check.cases import Case, Expect

SERVICE_DEADLINE_S = 15.0  # spec section 6, rule 2
WARN_AFTER_S = 5.0  # answered, but a third of the way to the service giving up


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"


@dataclass(frozen=True)
class Answer:
    """What the receiver did: its status (None: no answer) and how long the exchange took."""

    status: int | None
    latency_ms: float
    error: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def describe(self) -> str:
        """``200 in 12 ms``, ``401 in 3 ms``, ``no answer within 15 s``."""
        if self.status is None:
            return self.error or "no answer"
        return f"{self.status} in {_took(self.latency_ms)}"


def _took(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


@dataclass(frozen=True)
class Judgement:
    outcome: Outcome
    reason: str  # one sentence: what this receiver did, and what it means


def judge(case: Case, answer: Answer, *, warn_after_s: float = WARN_AFTER_S) -> Judgement:
    """The verdict on one answer. A case a wrong answer only warns about never fails."""
    bad = Outcome.FAIL if case.must_pass else Outcome.WARN
    if case.expect is Expect.ACCEPT:
        if answer.status is None:
            return Judgement(Outcome.FAIL, f"No answer ({answer.describe()}): {case.why}")
        if not answer.accepted:
            return Judgement(Outcome.FAIL, f"Answered {answer.status}: {case.why}")
        if answer.latency_ms > warn_after_s * 1000:
            return Judgement(
                Outcome.WARN,
                f"Accepted, but took {_took(answer.latency_ms)}: the service gives up at "
                f"{SERVICE_DEADLINE_S:g} s; answer first, work later.",
            )
        return Judgement(Outcome.PASS, f"Accepted ({answer.describe()}).")
    if answer.accepted:
        return Judgement(bad, f"Accepted with {answer.status}: {case.why}")
    if answer.status is None:
        return Judgement(bad, f"Not refused ({answer.describe()}): {case.why}")
    return Judgement(Outcome.PASS, f"Refused ({answer.describe()}).")
