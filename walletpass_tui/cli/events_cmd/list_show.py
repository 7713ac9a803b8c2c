"""``events list`` and ``events show``: messages newest first, and every attempt of one message."""

from __future__ import annotations

import argparse
import base64
import functools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from walletpass_tui.api.topics import topic_label
from walletpass_tui.cli.attempt_lines import reason_beyond
from walletpass_tui.cli.common import print_json, print_table, settings_from_args
from walletpass_tui.cli.events_cmd.shared import (
    no_such_message,
    pick_attempt,
    resolve_message,
    with_history,
)
from walletpass_tui.cli.progress import on_terminal
from walletpass_tui.cli.time_args import check_window
from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.text import (
    body_text,
    format_gap,
    format_ms,
    format_size,
    parse_json_body,
    pretty_json,
    printable,
)
from walletpass_tui.webhooks.export import attempt_json
from walletpass_tui.webhooks.models import VERIFIED, MessageRow

if TYPE_CHECKING:
    from walletpass_tui.schemas.reader import SchemaReader
    from walletpass_tui.schemas.records import DriftRecord
    from walletpass_tui.webhooks.models import Attempt, ForwardRow
    from walletpass_tui.webhooks.store.reading import History

T = TypeVar("T")
DRIFT_PAGE = 200  # drifting messages read from the schema file at a time


def message_json(m: MessageRow) -> dict[str, Any]:
    return {
        "webhook_id": m.webhook_id,
        "topic": m.topic,
        "pass_id": m.pass_id,
        "verdict": m.verdict,
        "reason": m.reason,
        "attempts": m.attempts,
        "first_received_at": format_ms(m.first_received_at_ms),
        "last_received_at": format_ms(m.last_received_at_ms),
        "endpoint_id": m.endpoint_id,
        "last_status": m.last_status,
    }


def schema_drift(settings: Settings, read: Callable[[SchemaReader], T], empty: T) -> T:
    """``read(reader)`` on the schemas learned beside the history; ``empty`` (and a warning on
    stderr) when the schema file cannot be read: the deliveries are shown all the same."""
    from walletpass_tui.schemas.errors import SchemaError
    from walletpass_tui.schemas.reader import SchemaReader

    try:
        return read(SchemaReader(settings.database_path))
    except SchemaError as exc:  # said on stderr
        print(f"warning: drift is not shown: {exc}", file=sys.stderr)
        return empty


def message_of(webhook_id: str, attempts: Sequence[Attempt]) -> MessageRow:
    """A message's row as the history keeps it (see the writer), from its attempts."""
    first, last = attempts[0], attempts[-1]
    return MessageRow(
        webhook_id=webhook_id,
        topic=next((a.topic for a in attempts if a.topic), None),
        pass_id=next((a.pass_id for a in attempts if a.pass_id), None),
        verdict=VERIFIED if any(a.verified for a in attempts) else "rejected",
        reason=last.reason,
        attempts=len(attempts),
        first_received_at_ms=first.received_at_ms,
        last_received_at_ms=last.received_at_ms,
        endpoint_id=next((a.endpoint_id for a in reversed(attempts) if a.endpoint_id), None),
        last_status=last.status,
    )


def _messages_with_drift(reader: SchemaReader, offset: int) -> list[str]:
    return reader.messages_with_drift(limit=DRIFT_PAGE, offset=offset)


def _drift_for_messages(reader: SchemaReader, ids: list[str]) -> dict[str, list[DriftRecord]]:
    return reader.drift_for_messages(ids)


def drifting_messages(
    settings: Settings, args: argparse.Namespace, since: int | None, until: int | None = None
) -> list[tuple[MessageRow, list[DriftRecord]]]:
    """``events list --drift``: the messages whose deliveries showed drift first, the latest
    drift first, with the other filters applied."""
    found: list[tuple[MessageRow, list[DriftRecord]]] = []

    async def work(store: History) -> list[tuple[MessageRow, list[DriftRecord]]]:
        offset = 0
        while len(found) < args.limit:
            page = functools.partial(_messages_with_drift, offset=offset)
            ids: list[str] = schema_drift(settings, page, [])
            if not ids:
                break
            offset += len(ids)
            drift: dict[str, list[DriftRecord]] = schema_drift(
                settings, functools.partial(_drift_for_messages, ids=ids), {}
            )
            for webhook_id in ids:
                attempts = await store.message_attempts_without_bodies(webhook_id)
                if not attempts:
                    continue  # pruned since
                row = message_of(webhook_id, attempts)
                if (args.topic and row.topic != args.topic) or (
                    args.verdict and row.verdict != args.verdict
                ):
                    continue
                if since is not None and row.last_received_at_ms < since:
                    continue
                if until is not None and row.last_received_at_ms >= until:
                    continue
                found.append((row, drift.get(webhook_id, [])))
                if len(found) >= args.limit:
                    break
            if len(ids) < DRIFT_PAGE:
                break
        return found

    return with_history(settings, work)


def _drift_cell(records: Sequence[DriftRecord]) -> str:
    return "; ".join(f"{r.kind} {printable(r.path, 40)}" for r in records)


def cmd_list(args: argparse.Namespace) -> int:
    from walletpass_tui.cli.events_cmd.where import log_filter, message_condition

    settings = settings_from_args(args)
    check_window(args.since, args.until)
    since = args.since.ms if args.since else None
    until = args.until.ms if args.until else None
    if getattr(args, "drift", False):
        if args.where:
            raise UsageError("--where does not combine with --drift; use one of them.")
        return _list_drift(settings, args, since, until)
    flt = log_filter(args, settings, since_ms=since, until_ms=until)
    # A home that has received nothing yet has an empty history, not a missing one: a script
    # gets [] and exit 0.
    fresh = not settings.database_path.exists()
    rows: list[MessageRow] = (
        []
        if fresh
        else with_history(
            settings,
            lambda s: s.list_messages(
                limit=args.limit,
                topic=flt.topic,
                verdict=flt.verdict,
                since_ms=since,
                until_ms=until,
                text=flt.text,
                where=message_condition(flt),
            ),
        )
    )
    if args.json:
        print_json([message_json(m) for m in rows])
        return 0
    if not rows:
        print("No deliveries yet." if fresh else "No messages match.")
        return 0
    table = [
        [
            format_ms(m.last_received_at_ms),
            printable(m.webhook_id, 36),
            topic_label(m.topic),
            printable(m.pass_id or "-", 20),
            m.verdict,
            printable(reason_beyond(m.verdict, m.reason), 30) or "-",
            str(m.attempts),
            printable(m.endpoint_id or "-", 30),
        ]
        for m in rows
    ]
    print_table(
        table,
        ["LAST SEEN", "WEBHOOK-ID", "TOPIC", "PASS", "VERDICT", "REASON", "ATTEMPTS", "ENDPOINT"],
    )
    return 0


def _list_drift(
    settings: Settings, args: argparse.Namespace, since: int | None, until: int | None
) -> int:
    if args.search:
        raise UsageError(
            "--drift and --search cannot be combined; use --topic, --verdict or --since with "
            "--drift, or 'walletpass-tui schema drift'."
        )
    fresh = not settings.database_path.exists()
    rows = [] if fresh else drifting_messages(settings, args, since, until)
    if args.json:
        print_json([{**message_json(m), "drift": [r.to_json() for r in d]} for m, d in rows])
        return 0
    if not rows:
        print("No deliveries yet." if fresh else "No message showed drift.")
        return 0
    table = [
        [
            format_ms(m.last_received_at_ms),
            printable(m.webhook_id, 36),
            topic_label(m.topic),
            printable(m.pass_id or "-", 20),
            m.verdict,
            str(m.attempts),
            _drift_cell(d),
        ]
        for m, d in rows
    ]
    print_table(table, ["LAST SEEN", "WEBHOOK-ID", "TOPIC", "PASS", "VERDICT", "ATTEMPTS", "DRIFT"])
    return 0


def forward_json(f: ForwardRow) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "mode": f.mode,
        "attempt_id": f.attempt_id,
        "target": f.target,
        "state": f.state,
        "tries": f.tries,
        "status": f.status,
        "latency_ms": None if f.latency_ms is None else round(f.latency_ms, 1),
        "error": f.error,
        "note": f.note,
        "at": format_ms(f.finished_at_ms or f.created_at_ms),
        "response_headers": [[k, v] for k, v in f.response_headers],
        "response_body": f.response_body.decode("utf-8", errors="replace"),
    }


def forward_line(f: ForwardRow) -> str:
    outcome = str(f.status) if f.status is not None else (f.error or "no answer yet")
    took = f" in {f.latency_ms:.0f} ms" if f.latency_ms is not None else ""
    tries = f", {f.tries} tries" if f.tries > 1 else ""
    note = f" [{f.note}]" if f.note else ""
    line = (
        f"{format_ms(f.finished_at_ms or f.created_at_ms)}  {f.kind} ({f.mode}) to "
        f"{f.target}: {f.state}, {outcome}{took}{tries}{note}"
    )
    return printable(line)


def _verdict_line(a: Attempt) -> str:
    verdict = "verified" if a.verified else "REJECTED"
    reason = printable(a.reason)
    # "verified: verified" says it twice: the reason is shown only when it adds something.
    line = verdict if reason.lower() == verdict.lower() else f"{verdict}: {reason}"
    return line + (f" ({printable(a.detail)})" if a.detail else "")


def print_attempt(
    a: Attempt,
    previous_ms: int | None,
    drift: Sequence[DriftRecord] = (),
    *,
    pretty: bool = False,
) -> None:
    """One attempt as ``events show`` prints it; ``pretty``: a JSON body indented."""
    gap = "" if previous_ms is None else f"  (+{format_gap(a.received_at_ms - previous_ms)})"
    print(f"attempt #{a.attempt_no}  {format_ms(a.received_at_ms)}{gap}")
    print(f"  verdict:  {_verdict_line(a)}")
    print(f"  topic:    {topic_label(a.topic)}")
    if getattr(a, "body_differs", False):
        print("  note:     this body differs from an earlier attempt with the same webhook-id")
    print(f"  answered: {a.status}" + (f"  [{printable(a.note)}]" if a.note else ""))
    for record in drift:
        shown = "once" if record.count == 1 else f"by {record.count} deliveries so far"
        print(f"  drift:    {printable(record.describe())}  (shown {shown})")
    print(
        f"  endpoint: {printable(a.endpoint_id or '-')}   from: {printable(a.remote_addr or '-')}"
        + (f" (X-Forwarded-For: {printable(a.forwarded_for)})" if a.forwarded_for else "")
    )
    if a.relay_url:
        print(f"  via:      the relay {printable(a.relay_url)} (delivery {a.relay_cursor})")
    print("  headers:")
    for key, value in a.headers:
        print(f"    {printable(key)}: {printable(value)}")
    size = a.body_size if a.body_size is not None else len(a.body)
    note = f", first {format_size(len(a.body))} kept" if a.body_truncated else ""
    doc = parse_json_body(a.body) if pretty and not a.body_truncated else None
    shape = ", JSON indented; --raw for the bytes" if doc is not None else ""
    print(f"  body ({size} bytes{note}{shape}):")
    if doc is not None:
        text, _ = pretty_json(doc, limit=sys.maxsize)
        for line in text.split("\n"):
            print("    " + line)  # escaped by pretty_json
        print()
        return
    try:
        text = a.body.decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: shown as base64, as the line says
        print("    (not UTF-8; base64) " + base64.b64encode(a.body).decode("ascii"))
    else:
        for line in text.split("\n"):
            print("    " + printable(line))
    print()


def cmd_show(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)

    async def load(store: History) -> tuple[str, list[Attempt], list[ForwardRow]]:
        webhook_id = await resolve_message(store, args.webhook_id)
        return (
            webhook_id,
            await store.message_attempts(webhook_id),
            await store.forwards_for_message(webhook_id),
        )

    webhook_id, attempts, forwards = with_history(settings, load)
    if not attempts:
        raise no_such_message(webhook_id)
    if args.raw:
        return _write_raw(pick_attempt(attempts, args.attempt, webhook_id))
    if args.attempt is not None:
        attempts = [pick_attempt(attempts, args.attempt, webhook_id)]
    ids = [a.id for a in attempts]
    drift: dict[int, list[DriftRecord]] = schema_drift(
        settings, lambda r: r.drift_for_attempts(ids), {}
    )
    if args.json:
        print_json(
            {
                "webhook_id": webhook_id,
                "attempts": [
                    {**attempt_json(a), "drift": [r.to_json() for r in drift.get(a.id, [])]}
                    for a in attempts
                ],
                "forwards": [forward_json(f) for f in forwards],
            }
        )
        return 0
    previous: int | None = None
    pretty = on_terminal(sys.stdout)
    for a in attempts:
        print_attempt(a, previous, drift.get(a.id, []), pretty=pretty)
        previous = a.received_at_ms
    if forwards:
        print("forwards and replays:")
        for f in forwards:
            print("  " + forward_line(f))
    return 0


def _write_raw(attempt: Attempt) -> int:
    """``--raw``: the body's bytes exactly as received, for a pipe or a file. On a terminal they
    are written as text with every control character escaped: a sender's bytes never drive it."""
    if attempt.body_truncated:
        print(
            f"warning: only the first {format_size(len(attempt.body))} of this body were kept.",
            file=sys.stderr,
        )
    if on_terminal(sys.stdout):
        text, _ = body_text(attempt.body, limit=sys.maxsize)
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
        return 0
    sys.stdout.flush()
    sys.stdout.buffer.write(attempt.body)
    sys.stdout.buffer.flush()
    return 0
