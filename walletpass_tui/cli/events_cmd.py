"""``events``: the delivery history: list, show."""

from __future__ import annotations

import argparse
import asyncio
import base64
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from walletpass_tui.api.models import TOPICS
from walletpass_tui.cli import history_cmds
from walletpass_tui.cli.common import (
    CommandError,
    print_json,
    print_table,
    printable,
    settings_from_args,
)
from walletpass_tui.cli.listen_cmd import attempt_json
from walletpass_tui.config import Settings
from walletpass_tui.formatting import format_gap, format_ms
from walletpass_tui.webhooks.store import (
    REJECTED,
    VERIFIED,
    Attempt,
    ForwardRow,
    MessageRow,
    Store,
)

T = TypeVar("T")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser(
        "events",
        parents=parents,
        help="the delivery history: list, show, replay, export, prune",
        description="Every attempt the receiver got is in the history database of the data directory "
        "(WALLETPASS_HOME); attempts are grouped into messages by webhook-id.",
    )
    ev_sub = ev.add_subparsers(dest="events_command", metavar="ACTION", required=True)

    lst = ev_sub.add_parser(
        "list",
        parents=parents,
        help="messages, newest first",
        epilog="examples:\n  walletpass-tui events list --verdict rejected\n"
        "  walletpass-tui events list --search pass_0042 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_filter_flags(lst)
    lst.add_argument(
        "--limit", type=int, default=50, metavar="N", help="at most N messages (default 50)"
    )
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(handler=cmd_list)

    show = ev_sub.add_parser(
        "show",
        parents=parents,
        help="every attempt of one message, with headers and raw body",
        epilog="example: walletpass-tui events show msg_2KWPBgLlAfxdpx2AI54pPJ85f4W --json",
    )
    show.add_argument("webhook_id", metavar="WEBHOOK_ID")
    show.add_argument(
        "--json", action="store_true", help="print JSON (body as text when UTF-8, always base64)"
    )
    show.set_defaults(handler=cmd_show)

    history_cmds.register(ev_sub, parents)


def add_filter_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", metavar="TOPIC", help=f"only this topic ({', '.join(TOPICS)})")
    parser.add_argument(
        "--verdict", choices=(VERIFIED, REJECTED), help="only verified or only rejected"
    )
    parser.add_argument(
        "--since", metavar="ISO", help="only messages seen since this time (ISO 8601)"
    )
    parser.add_argument("--search", metavar="TEXT", help="full-text search over bodies and ids")


def parse_since(text: str | None) -> int | None:
    if not text:
        return None
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(
            f"--since {text!r} is not an ISO 8601 time, e.g. 2026-11-23T14:00:00Z."
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.astimezone()  # a local time, as people type it
    return int(stamp.timestamp() * 1000)


def with_store(settings: Settings, work: Callable[[Store], Awaitable[T]]) -> T:
    async def run() -> T:
        if not settings.database_path.exists():
            raise CommandError(
                f"No history yet in {settings.home}; run 'walletpass-tui listen' (or the dashboard) "
                "to receive webhooks."
            )
        async with await Store.open(settings.database_path) as store:
            return await work(store)

    return asyncio.run(run())


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
    if args.limit < 1:
        raise CommandError("--limit takes a number of 1 or more.")
    since = parse_since(args.since)
    rows: list[MessageRow] = with_store(
        settings,
        lambda s: s.list_messages(
            limit=args.limit,
            topic=args.topic,
            verdict=args.verdict,
            since_ms=since,
            text=args.search,
        ),
    )
    if args.json:
        print_json([message_json(m) for m in rows])
        return 0
    if not rows:
        print("No messages match.")
        return 0
    table = [
        [
            format_ms(m.last_received_at_ms),
            printable(m.webhook_id, 36),
            printable(m.topic or "-", 20),
            printable(m.pass_id or "-", 20),
            m.verdict,
            printable(m.reason, 30),
            str(m.attempts),
            m.endpoint_id or "-",
        ]
        for m in rows
    ]
    print_table(
        table,
        ["LAST SEEN", "WEBHOOK-ID", "TOPIC", "PASS", "VERDICT", "REASON", "ATTEMPTS", "ENDPOINT"],
    )
    return 0


def attempt_detail_json(a: Attempt) -> dict[str, Any]:
    data = attempt_json(a)
    data["method"] = a.method
    data["path"] = a.path
    data["headers"] = [[k, v] for k, v in a.headers]
    try:
        data["body"] = a.body.decode("utf-8")
    except UnicodeDecodeError:
        data["body"] = None
    data["body_base64"] = base64.b64encode(a.body).decode("ascii")
    data["body_truncated"] = a.body_truncated
    return data


def cmd_show(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)

    async def load(store: Store) -> tuple[list[Attempt], list[ForwardRow]]:
        return (
            await store.message_attempts(args.webhook_id),
            await store.forwards_for_message(args.webhook_id),
        )

    attempts, forwards = with_store(settings, load)
    if not attempts:
        raise CommandError(
            f"No message {args.webhook_id!r} in the history; 'walletpass-tui events list' shows them."
        )
    if args.json:
        print_json(
            {
                "webhook_id": args.webhook_id,
                "attempts": [attempt_detail_json(a) for a in attempts],
                "forwards": [forward_json(f) for f in forwards],
            }
        )
        return 0
    previous: int | None = None
    for a in attempts:
        gap = "" if previous is None else f"  (+{format_gap(a.received_at_ms - previous)})"
        previous = a.received_at_ms
        verdict = "verified" if a.verified else "REJECTED"
        print(f"attempt #{a.attempt_no}  {format_ms(a.received_at_ms)}{gap}")
        print(
            f"  verdict:  {verdict}: {printable(a.reason)}"
            + (f" ({printable(a.detail)})" if a.detail else "")
        )
        print(f"  answered: {a.status}" + (f"  [{printable(a.note)}]" if a.note else ""))
        print(
            f"  endpoint: {a.endpoint_id or '-'}   from: {a.remote_addr or '-'}"
            + (f" (X-Forwarded-For: {printable(a.forwarded_for)})" if a.forwarded_for else "")
        )
        print("  headers:")
        for key, value in a.headers:
            print(f"    {printable(key)}: {printable(value)}")
        size = a.body_size if a.body_size is not None else len(a.body)
        note = f", first {len(a.body)} kept" if a.body_truncated else ""
        print(f"  body ({size} bytes{note}):")
        try:
            text = a.body.decode("utf-8")
        except UnicodeDecodeError:
            print("    (not UTF-8; base64) " + base64.b64encode(a.body).decode("ascii"))
        else:
            for line in text.splitlines() or [""]:
                print("    " + printable(line))
        print()
    if forwards:
        print("forwards and replays:")
        for f in forwards:
            print("  " + forward_line(f))
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
