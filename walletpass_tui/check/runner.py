"""Run the battery against one URL, one case at a time, and record each request and answer in the
history like a replay (an attempt holding exactly what was sent, and the target's answer under
"Forwards & replays"), so a failing case can be opened in the dashboard.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
from multidict import CIMultiDict

from walletpass_tui.api.urls import target_url_problem
from walletpass_tui.check.cases import Case, CaseRequest, build_cases
from walletpass_tui.check.judge import (
    SERVICE_DEADLINE_S,
    WARN_AFTER_S,
    Answer,
    Judgement,
    Outcome,
    judge,
)
from walletpass_tui.check.send import new_client, post, sent_headers
from walletpass_tui.config.secrets import mask_secret
from walletpass_tui.errors import UsageError
from walletpass_tui.webhooks.attempts import attempt_of
from walletpass_tui.webhooks.intake import IntakeRequest
from walletpass_tui.webhooks.models import (
    CHECK_HEADER,
    CHECK_MODE,
    REJECTED,
    REPLAY,
    VERIFIED,
    Attempt,
    ForwardResult,
    evolve,
)
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.target_options import TargetOptions
from walletpass_tui.webhooks.verify import SigningKey, parse_secret, verify

RECORD_MODE = CHECK_MODE  # the mode of the recorded replay rows


class CheckError(UsageError, ValueError):
    """The check cannot run as asked (a bad URL, secret or topic); the message says what to do."""


def target_problem(url: str) -> str | None:
    """Why ``url`` cannot be checked, or None: the project's one rule for target URLs (http or
    https, a plain host, no credentials or fragment)."""
    return target_url_problem(url)


@dataclass(frozen=True)
class CheckOptions:
    target: str
    secret: str = field(repr=False)
    topics: tuple[str, ...]
    timeout_s: float = SERVICE_DEADLINE_S
    warn_after_s: float = WARN_AFTER_S
    endpoint_id: str | None = None  # the endpoint the secret came from, recorded with each case
    strict: bool = False  # a warning fails the check too (for CI)
    # Headers added to every case (--header) and the certificates to trust (--ca-bundle...).
    target_options: TargetOptions = field(default_factory=TargetOptions)
    # The target is this home's own receiver: every case carries this in CHECK_HEADER, so the
    # receiver keeps its copies as the check's, not as deliveries (home_secret.check_token).
    check_token: str | None = field(default=None, repr=False)

    @property
    def masked_secret(self) -> str:
        return mask_secret(self.secret)

    @property
    def added_headers(self) -> tuple[tuple[str, str], ...]:
        """What goes after each case's own headers: ``--header``'s, then the check token."""
        token = ((CHECK_HEADER, self.check_token),) if self.check_token else ()
        return (*self.target_options.headers, *token)


@dataclass(frozen=True)
class CaseResult:
    case: Case
    request: CaseRequest
    answer: ForwardResult
    judgement: Judgement
    attempt_id: int | None = None  # the recorded attempt (None when not recorded)

    @property
    def outcome(self) -> Outcome:
        return self.judgement.outcome


@dataclass(frozen=True)
class CheckReport:
    options: CheckOptions
    results: tuple[CaseResult, ...]
    not_sent: int = 0  # cases left unsent: the target could not be connected to

    @property
    def stopped(self) -> CaseResult | None:
        """The case at which the check stopped, no connection being possible (None: all ran)."""
        return self.results[-1] if self.not_sent else None

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome is outcome)

    @property
    def passed(self) -> bool:
        """Every must-pass case passed (warnings allowed)."""
        return all(r.outcome is not Outcome.FAIL for r in self.results)

    @property
    def unreachable(self) -> bool:
        """Nothing answered at all (the app is not running, or the URL is wrong)."""
        return bool(self.results) and all(r.answer.status is None for r in self.results)

    @property
    def never_connected(self) -> bool:
        """The first case could not even connect, so the check stopped there: nothing to judge."""
        return len(self.results) == 1 and self.stopped is not None

    @property
    def failed_on_warnings(self) -> bool:
        """Every must-pass case passed, but the check is strict and some case warned."""
        return self.passed and self.options.strict and self.count(Outcome.WARN) > 0

    @property
    def exit_code(self) -> int:
        """0 when every must-pass case passed (and, when strict, nothing warned), else 1."""
        return 0 if self.passed and not self.failed_on_warnings else 1


def validate(options: CheckOptions) -> None:
    """Raise CheckError when the options cannot be run."""
    problem = target_problem(options.target)
    if problem:
        raise CheckError(f"{options.target!r}: {problem}")
    try:
        parse_secret(options.secret)
    except ValueError as exc:
        raise CheckError(str(exc)) from None
    if not options.topics:
        raise CheckError("Name at least one topic to check.")
    if not options.timeout_s > 0:
        raise CheckError("The timeout must be more than 0 seconds.")


def _attempt(
    options: CheckOptions,
    case: Case,
    request: CaseRequest,
    answer: ForwardResult,
    outcome: Outcome,
    sent_at: datetime,
) -> Attempt:
    """The request as the history stores it: what our own verifier says of it, and a note."""
    found = verify(
        dict(request.headers),
        request.body,
        [SigningKey.from_secret(options.secret, options.endpoint_id)],
        now=sent_at,
    )
    parts = urlsplit(options.target.strip())
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # Added headers are recorded masked: their values may be the app's secrets.
    headers = sent_headers(request, options.added_headers, masked=True)
    sent = IntakeRequest("POST", target, target, CIMultiDict(headers), None, sent_at, direct=False)
    got = str(answer.status) if answer.status is not None else "no answer"
    recorded = attempt_of(
        sent,
        found.reason,
        found.detail,
        verdict=VERIFIED if found.ok else REJECTED,
        body=request.body,
        body_size=len(request.body),
        endpoint_id=options.endpoint_id,
        forwarded_for=None,  # sent from here: no proxy on the way
    )
    # What the app answered, and the case's own id and topic (a case may send neither right).
    return evolve(
        recorded,
        status=answer.status or 0,
        processing_ms=answer.latency_ms,
        webhook_id=case.webhook_id,
        topic=case.topic,
        note=f"check {outcome.value}: {case.title} → {got}",
    )


async def run_case(
    case: Case,
    options: CheckOptions,
    client: httpx.AsyncClient,
    store: Store | None,
    clock: Callable[[], datetime],
) -> CaseResult:
    sent_at = clock()
    request = case.make(sent_at)
    answer = await post(
        client, options.target.strip(), request, options.timeout_s, options.added_headers
    )
    verdict = judge(
        case,
        Answer(answer.status, answer.latency_ms, answer.error),
        warn_after_s=options.warn_after_s,
    )
    attempt_id = None
    if store is not None:
        stored = await store.record(
            _attempt(options, case, request, answer, verdict.outcome, sent_at)
        )
        attempt_id = stored.id
        await store.add_forward_result(
            stored,
            kind=REPLAY,
            mode=RECORD_MODE,
            target=options.target.strip(),
            result=replace(answer, note=f"check {verdict.outcome.value}: {verdict.reason}"),
        )
    return CaseResult(case, request, answer, verdict, attempt_id)


async def run_check(
    options: CheckOptions,
    *,
    store: Store | None = None,
    client: httpx.AsyncClient | None = None,
    cases: Sequence[Case] | None = None,
    on_start: Callable[[Case], None] | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    rng: random.Random | None = None,
    clock: Callable[[], datetime] | None = None,
) -> CheckReport:
    """Send every case to ``options.target``, one at a time; record each in ``store`` when given.
    A case that cannot connect at all (refused, no such host, no route, a failed TLS handshake)
    stops the check there: every case after it would fail alike (``CheckReport.not_sent``).

    ``on_start``/``on_result`` are called on the event loop as each case starts and ends (the
    dashboard fills its table from them).
    """
    validate(options)
    cases = (
        list(cases) if cases is not None else build_cases(options.secret, options.topics, rng=rng)
    )
    own = client is None
    client = client or new_client(options.target_options.trust)
    results: list[CaseResult] = []
    try:
        for case in cases:
            if on_start is not None:
                on_start(case)
            result = await run_case(case, options, client, store, clock or _now)
            results.append(result)
            if on_result is not None:
                on_result(result)
            if result.answer.no_connection:
                break
    finally:
        if own:
            await client.aclose()
    return CheckReport(options, tuple(results), not_sent=len(cases) - len(results))


def _now() -> datetime:
    return datetime.fromtimestamp(time.time(), UTC)
