"""The check's results for people (a plain table) and for CI (a JSON document)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from walletpass_tui.check.cases import Case
from walletpass_tui.check.judge import Answer, Outcome
from walletpass_tui.check.runner import CaseResult, CheckOptions, CheckReport
from walletpass_tui.text import printable

ANSWER_PREVIEW = 500  # characters of the target's answer body in the JSON document
HEADERS = ("CASE", "EXPECTED", "GOT", "VERDICT", "WHY IT MATTERS")


def got(result: CaseResult) -> str:
    """What the receiver did, short: ``200 in 4 ms``, ``no answer`` (the reason says why)."""
    a = result.answer
    if a.status is None:
        return "no answer"
    return Answer(a.status, a.latency_ms).describe()


def row(result: CaseResult) -> list[str]:
    case = result.case
    return [case.title, case.expected, got(result), result.outcome.value, case.why]


class Table:
    """The plain-text table, printed a row at a time as cases finish (widths known up front)."""

    GOT_WIDTH = 14

    def __init__(self, cases: Sequence[Case]) -> None:
        self.widths = [
            max([len(HEADERS[0]), *(len(c.title) for c in cases)]),
            max([len(HEADERS[1]), *(len(c.expected) for c in cases)]),
            self.GOT_WIDTH,
            len(HEADERS[3]),
        ]

    def line(self, cells: Sequence[str]) -> str:
        fixed = "  ".join(c.ljust(self.widths[i]) for i, c in enumerate(cells[:-1]))
        return f"{fixed}  {cells[-1]}".rstrip()

    def header(self) -> str:
        return self.line(HEADERS)

    def row(self, result: CaseResult) -> str:
        return self.line(row(result))


def heading(options: CheckOptions, cases: int) -> str:
    line = (
        f"Checking {printable(options.target, 200)} with {options.masked_secret}: {cases} cases, "
        f"one at a time, timeout {options.timeout_s:g} s."
    )
    notes = options.target_options.notes()  # added headers masked
    return line + "".join(f"\n  {note[0].upper()}{note[1:]}." for note in notes)


def summary(report: CheckReport) -> list[str]:
    """The closing lines: counts, the verdict, and how to see a failing case."""
    passed, failed, warned = (report.count(o) for o in Outcome)
    counts = f"{passed} passed, {failed} failed, {warned} warning{'s' if warned != 1 else ''}"
    target = printable(report.options.target, 200)
    if report.never_connected:
        why = printable(report.results[0].answer.error or "no answer", 300)
        return [
            f"Nothing answered at {target} ({why}). Start your app, or check the URL, and run "
            "the check again."
        ]
    if report.unreachable:
        first = report.results[0].answer.error or "no answer"
        return [
            f"{counts}: nothing answered at {target} ({first}). "
            "Start your app, or check the URL, and run the check again."
        ]
    if report.failed_on_warnings:
        verdict = ": every must-pass case passed, but --strict fails on warnings."
    elif report.passed:
        verdict = ": every must-pass case passed."
    else:
        verdict = ": your receiver needs fixing before it meets the service."
    lines = [counts + verdict]
    for r in report.results:
        if r.outcome is not Outcome.PASS:
            lines.append(f"  {r.outcome.value} {r.case.id}: {printable(r.judgement.reason, 300)}")
    stopped = report.stopped
    if stopped is not None:
        lines.append(
            f"Stopped at {stopped.case.id}: {printable(stopped.answer.error or 'no answer', 300)}; "
            f"the {report.not_sent} case{'s' if report.not_sent != 1 else ''} after it "
            f"{'were' if report.not_sent != 1 else 'was'} not sent."
        )
    first_bad = next((r for r in report.results if r.outcome is Outcome.FAIL), None)
    if first_bad is not None and first_bad.attempt_id is not None:
        lines.append(
            f"See exactly what was sent: walletpass-tui events show {first_bad.case.webhook_id}"
        )
    return lines


def _answer_json(result: CaseResult) -> dict[str, Any]:
    a = result.answer
    try:
        body: str | None = a.body.decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: the report shows its size instead
        body = None
    return {
        "status": a.status,
        "latency_ms": round(a.latency_ms, 1),
        "error": a.error,
        "body": body[:ANSWER_PREVIEW] if body is not None else None,
        "body_base64": None if body is not None else base64.b64encode(a.body).decode("ascii"),
    }


def case_json(result: CaseResult) -> dict[str, Any]:
    case = result.case
    return {
        "id": case.id,
        "title": case.title,
        "topic": case.topic,
        "expected": case.expect.value,
        "must_pass": case.must_pass,
        "verdict": result.outcome.value,
        "reason": result.judgement.reason,
        "why": case.why,
        "webhook_id": case.webhook_id,
        "attempt_id": result.attempt_id,
        "request_bytes": len(result.request.body),
        "answer": _answer_json(result),
    }


def json_report(report: CheckReport) -> dict[str, Any]:
    o = report.options
    return {
        "target": o.target,
        "secret": o.masked_secret,
        "endpoint_id": o.endpoint_id,
        "topics": list(o.topics),
        "timeout_s": o.timeout_s,
        "headers_added": o.target_options.masked_headers(),
        "passed": report.passed,
        "strict": o.strict,
        "exit_code": report.exit_code,
        "counts": {outcome.value: report.count(outcome) for outcome in Outcome},
        "not_sent": report.not_sent,
        "cases": [case_json(r) for r in report.results],
    }
