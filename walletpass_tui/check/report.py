"""The check's results for people (a plain table) and for CI (a JSON document)."""

from __future__ import annotations

import base64
from typing import Any

from walletpass_tui.check.judge import Answer, Outcome
from walletpass_tui.check.runner import CaseResult, CheckOptions, CheckReport
from walletpass_tui.text import printable

ANSWER_PREVIEW = 500  # characters of the target's answer body in the JSON document
HEADERS = ("CASE", "EXPECTED", "GOT", "VERDICT", "WHY IT MATTERS")


def got(result: CaseResult) -> str:
    """What the receiver did: ``200 in 4 ms``, or why there was no answer (our own words)."""
    a = result.answer
    return printable(Answer(a.status, a.latency_ms, a.error).describe(), 60)


def row(result: CaseResult) -> list[str]:
    case = result.case
    return [case.title, case.expected, got(result), result.outcome.value, case.why]


def heading(options: CheckOptions, cases: int) -> str:
    return (
        f"Checking {printable(options.target, 200)} with {options.masked_secret}: {cases} cases, "
        f"one at a time, timeout {options.timeout_s:g} s."
    )


def summary(report: CheckReport) -> list[str]:
    """The closing lines: counts, the verdict, and how to see a failing case."""
    passed, failed, warned = (report.count(o) for o in Outcome)
    counts = f"{passed} passed, {failed} failed, {warned} warning{'s' if warned != 1 else ''}"
    if report.unreachable:
        first = report.results[0].answer.error or "no answer"
        return [
            f"{counts}: nothing answered at {printable(report.options.target, 200)} ({first}). "
            "Start your app, or check the URL, and run the check again."
        ]
    lines = [
        counts
        + (
            ": every must-pass case passed."
            if report.passed
            else ": your receiver needs fixing before it meets the service."
        )
    ]
    for r in report.results:
        if r.outcome is not Outcome.PASS:
            lines.append(f"  {r.outcome.value} {r.case.id}: {printable(r.judgement.reason, 300)}")
    first_bad = next((r for r in report.results if r.outcome is Outcome.FAIL), None)
    if first_bad is not None and first_bad.attempt_id is not None:
        lines.append(
            f"See exactly what was sent: walletpass-tui events show {first_bad.case.webhook_id}"
        )
    return lines


def table_lines(results: list[CaseResult]) -> list[str]:
    rows = [row(r) for r in results]
    widths = [len(h) for h in HEADERS]
    for cells in rows:
        for i, cell in enumerate(cells[:-1]):
            widths[i] = max(widths[i], len(cell))
    out = []
    for cells in [list(HEADERS), *rows]:
        line = "  ".join(c.ljust(widths[i]) for i, c in enumerate(cells[:-1]))
        out.append(f"{line}  {cells[-1]}".rstrip())
    return out


def text_report(report: CheckReport) -> str:
    lines = [heading(report.options, len(report.results)), ""]
    lines += table_lines(list(report.results))
    lines += ["", *summary(report)]
    return "\n".join(lines) + "\n"


def _answer_json(result: CaseResult) -> dict[str, Any]:
    a = result.answer
    try:
        body: str | None = a.body.decode("utf-8")
    except UnicodeDecodeError:
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
        "passed": report.passed,
        "exit_code": report.exit_code,
        "counts": {outcome.value: report.count(outcome) for outcome in Outcome},
        "cases": [case_json(r) for r in report.results],
    }
