"""``events list`` and ``events show``: messages newest first, and every attempt of one message."""

from __future__ import annotations

import argparse
import base64
from typing import TYPE_CHECKING, Any

from walletpass_tui.api.topics import topic_label
from walletpass_tui.cli.common import print_json, print_table, settings_from_args
from walletpass_tui.cli.events_cmd.shared import no_such_message, parse_since, with_history
from walletpass_tui.text import format_gap, format_ms, format_size, printable
from walletpass_tui.webhooks.export import attempt_json

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt, ForwardRow, MessageRow
    from walletpass_tui.webhooks.store.reading import History


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


def cmd_list(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    since = parse_since(args.since)
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
                topic=args.topic,
                verdict=args.verdict,
                since_ms=since,
                text=args.search,
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
            printable(m.reason, 30),
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


def print_attempt(a: Attempt, previous_ms: int | None) -> None:
    gap = "" if previous_ms is None else f"  (+{format_gap(a.received_at_ms - previous_ms)})"
    print(f"attempt #{a.attempt_no}  {format_ms(a.received_at_ms)}{gap}")
    print(f"  verdict:  {_verdict_line(a)}")
    print(f"  topic:    {topic_label(a.topic)}")
    if getattr(a, "body_differs", False):
        print("  note:     this body differs from an earlier attempt with the same webhook-id")
    print(f"  answered: {a.status}" + (f"  [{printable(a.note)}]" if a.note else ""))
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
    print(f"  body ({size} bytes{note}):")
    try:
        text = a.body.decode("utf-8")
    except UnicodeDecodeError:
        print("    (not UTF-8; base64) " + base64.b64encode(a.body).decode("ascii"))
    else:
        for line in text.split("\n"):
            print("    " + printable(line))
    print()


def cmd_show(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)

    async def load(store: History) -> tuple[list[Attempt], list[ForwardRow]]:
        return (
            await store.message_attempts(args.webhook_id),
            await store.forwards_for_message(args.webhook_id),
        )

    attempts, forwards = with_history(settings, load)
    if not attempts:
        raise no_such_message(args.webhook_id)
    if args.json:
        print_json(
            {
                "webhook_id": args.webhook_id,
                "attempts": [attempt_json(a) for a in attempts],
                "forwards": [forward_json(f) for f in forwards],
            }
        )
        return 0
    previous: int | None = None
    for a in attempts:
        print_attempt(a, previous)
        previous = a.received_at_ms
    if forwards:
        print("forwards and replays:")
        for f in forwards:
            print("  " + forward_line(f))
    return 0
