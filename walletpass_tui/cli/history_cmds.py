"""``events replay|export|prune|pending``: the history tools beside ``events list|show``."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

from walletpass_tui.cli.common import CommandError, print_json, printable, settings_from_args
from walletpass_tui.config import Settings
from walletpass_tui.webhooks.endpoints import EndpointRegistry
from walletpass_tui.webhooks.export import to_curl, to_jsonl
from walletpass_tui.webhooks.forward import ForwardError, replay
from walletpass_tui.webhooks.store import ORIGINAL, RESIGN, Attempt, Store, StoreError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)?\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800, None: 86400}


def parse_duration(text: str) -> float:
    """``90s``, ``15m``, ``12h``, ``30d``, ``2w``; a bare number is days."""
    match = _DURATION.match(text)
    if not match:
        raise CommandError(f"{text!r} is not a duration; use e.g. 45s, 15m, 12h, 30d or 2w.")
    unit = match.group(2).lower() if match.group(2) else None
    return float(match.group(1)) * _UNIT_S[unit]


def register(ev_sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    from walletpass_tui.cli.events_cmd import add_filter_flags

    rp = ev_sub.add_parser(
        "replay",
        parents=parents,
        help="send a stored message again to a URL",
        description="Send a stored message to URL and record the answer in its history. "
        "resign (default): same webhook-id, a fresh timestamp, signed with the endpoint's stored "
        "secret, as the service would send a retry. original: the stored bytes and headers "
        "exactly, old timestamp included (to test replay protection). An edited body "
        "(--body-file) is always re-signed.",
        epilog="examples:\n"
        "  walletpass-tui events replay msg_2KWP... --to http://localhost:3000/webhooks\n"
        "  walletpass-tui events replay msg_2KWP... --to http://localhost:3000/webhooks --mode original\n"
        "  walletpass-tui events replay msg_2KWP... --to http://localhost:3000/webhooks --body-file edited.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rp.add_argument("webhook_id", metavar="WEBHOOK_ID")
    rp.add_argument("--to", required=True, metavar="URL", help="where to send it")
    rp.add_argument("--mode", choices=(RESIGN, ORIGINAL), default=RESIGN)
    rp.add_argument("--body-file", metavar="FILE", help="send this body instead (re-signed)")
    rp.add_argument(
        "--secret",
        metavar="WHSEC",
        help="secret to re-sign with when the endpoint is not known locally",
    )
    rp.add_argument(
        "--attempt", type=int, metavar="N", help="replay attempt N (default: the last verified)"
    )
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(handler=cmd_replay)

    ex = ev_sub.add_parser(
        "export",
        parents=parents,
        help="attempts as JSON Lines or curl commands",
        description="Write attempts, oldest first, as JSON Lines (headers, and the body as text "
        "or body_base64 when not UTF-8) or as curl commands that reproduce each delivery exactly.",
        epilog="examples:\n"
        "  walletpass-tui events export --verdict verified > deliveries.jsonl\n"
        "  walletpass-tui events export --format curl --search pass_0042 --to http://localhost:3000/webhooks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ex.add_argument("--format", choices=("jsonl", "curl"), default="jsonl")
    ex.add_argument("--to", metavar="URL", help="curl target (default: this receiver's local URL)")
    ex.add_argument("--webhook-id", metavar="ID", help="only this message")
    ex.add_argument(
        "--limit", type=int, default=None, metavar="N", help="only the newest N attempts"
    )
    add_filter_flags(ex)
    ex.set_defaults(handler=cmd_export)

    pr = ev_sub.add_parser(
        "prune",
        parents=parents,
        help="delete old history",
        description="Delete attempts received before a time (and their forwards). Without "
        "--older-than, the retention setting (retention_days) is used.",
        epilog="example: walletpass-tui events prune --older-than 7d",
    )
    pr.add_argument("--older-than", metavar="DURATION", help="e.g. 12h, 7d, 2w")
    pr.set_defaults(handler=cmd_prune)

    pe = ev_sub.add_parser(
        "pending",
        parents=parents,
        help="forwards waiting for your app; give up on them",
        epilog="example: walletpass-tui events pending --give-up",
    )
    pe.add_argument("--give-up", action="store_true", help="stop retrying the pending forwards")
    pe.add_argument("--target", metavar="URL", help="only those to this target")
    pe.set_defaults(handler=cmd_pending)


def _run(settings: Settings, work: Any) -> Any:
    from walletpass_tui.cli.events_cmd import with_store

    return with_store(settings, work)


def _pick_attempt(attempts: list[Attempt], number: int | None, webhook_id: str) -> Attempt:
    if not attempts:
        raise CommandError(
            f"No message {webhook_id!r} in the history; 'walletpass-tui events list' shows them."
        )
    if number is not None:
        found = next((a for a in attempts if a.attempt_no == number), None)
        if found is None:
            raise CommandError(f"{webhook_id} has no attempt #{number} (it has {len(attempts)}).")
        return found
    verified = [a for a in attempts if a.verified and a.method == "POST"]
    return (verified or attempts)[-1]


def cmd_replay(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    body = None
    if args.body_file:
        try:
            body = Path(args.body_file).read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {args.body_file} ({exc.strerror}).") from None
    registry = EndpointRegistry(settings.endpoints_path)

    async def work(store: Store) -> tuple[Attempt, Any]:
        attempt = _pick_attempt(
            await store.message_attempts(args.webhook_id), args.attempt, args.webhook_id
        )
        secret = args.secret
        if secret is None and attempt.endpoint_id:
            endpoint = registry.get(attempt.endpoint_id)
            secret = endpoint.secret.reveal() if endpoint else None
        try:
            result = await replay(store, attempt, args.to, mode=args.mode, secret=secret, body=body)
        except ForwardError as exc:
            raise CommandError(str(exc)) from None
        return attempt, result

    attempt, result = _run(settings, work)
    mode = "edited, re-signed" if body is not None and body != attempt.body else args.mode
    if args.json:
        print_json(
            {
                "webhook_id": attempt.webhook_id,
                "attempt": attempt.attempt_no,
                "mode": mode,
                "target": args.to,
                "status": result.status,
                "latency_ms": round(result.latency_ms, 1),
                "error": result.error,
                "response_body": result.body.decode("utf-8", errors="replace"),
            }
        )
    elif result.status is not None:
        print(
            f"Replayed {attempt.webhook_id} #{attempt.attempt_no} ({mode}) to {args.to}: {result.status} in {result.latency_ms:.0f} ms"
        )
        text = result.body.decode("utf-8", errors="replace").strip()
        if text:
            print("  " + printable(text, 300))
    else:
        print(
            f"Replay of {attempt.webhook_id} to {args.to} failed: {result.error}", file=sys.stderr
        )
    return 0 if result.ok else 1


def cmd_export(args: argparse.Namespace) -> int:
    from walletpass_tui.cli.events_cmd import parse_since
    from walletpass_tui.webhooks.store import LogFilter

    settings = settings_from_args(args)
    target = args.to or settings.receiver_url()
    since = parse_since(args.since)
    flt = LogFilter(topic=args.topic, verdict=args.verdict, text=args.search, since_ms=since)

    async def work(store: Store) -> list[Attempt]:
        if args.webhook_id:
            attempts = await store.message_attempts(args.webhook_id)
        else:
            rows, before = [], None
            while True:
                page = await store.log_page(flt, limit=500, before_id=before)
                rows.extend(page)
                if len(page) < 500 or (args.limit and len(rows) >= args.limit):
                    break
                before = page[-1].id
            if args.limit:
                rows = rows[: args.limit]
            attempts = [
                a for a in [await store.attempt(r.id) for r in reversed(rows)] if a is not None
            ]
        return attempts

    attempts: list[Attempt] = _run(settings, work)
    out = sys.stdout
    for attempt in attempts:
        out.write(
            (to_jsonl(attempt) if args.format == "jsonl" else to_curl(attempt, target)) + "\n"
        )
    if not attempts:
        print("No attempts match.", file=sys.stderr)
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    if args.older_than:
        seconds = parse_duration(args.older_than)
    elif settings.retention_days > 0:
        seconds = settings.retention_days * 86400
    else:
        raise CommandError(
            "Give --older-than (e.g. 7d); retention_days is 0, which keeps everything."
        )
    cutoff = int((time.time() - seconds) * 1000)

    async def work(store: Store) -> int:
        return await store.prune_older_than(cutoff)

    try:
        removed = _run(settings, work)
    except StoreError as exc:
        raise CommandError(str(exc)) from None
    print(
        f"Removed {removed} attempt(s) older than {args.older_than or f'{settings.retention_days} days'}."
    )
    return 0


def cmd_pending(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)

    async def work(store: Store) -> tuple[int, list[tuple[str, int]]]:
        if args.give_up:
            return await store.give_up_pending(args.target), []
        by_target = await store.pending_forwards_by_target()
        if args.target is not None:
            by_target = [(t, n) for t, n in by_target if t == args.target]
        return sum(n for _, n in by_target), by_target

    count, by_target = _run(settings, work)
    if args.give_up:
        print(f"Gave up on {count} pending forward(s); they stay in the history as 'given up'.")
    elif count:
        print(f"{count} forward(s) pending:")
        for target, n in by_target:
            print(f"  {n:>6}  {printable(target, 200)}")
        print("They go out when 'walletpass-tui listen --forward-to ...' or the dashboard runs.")
    else:
        where = f" to {printable(args.target, 200)}" if args.target else ""
        print(f"No forwards pending{where}.")
    return 0
