"""``events``: the delivery history: list, show, diff, tail, stats, replay, export, prune,
pending.

This module only defines the arguments; each action's module (and the store, the HTTP client...)
is imported when that action runs, so ``events list`` loads neither Textual, aiohttp nor httpx.
"""

from __future__ import annotations

import argparse

from walletpass_tui.cli.common import (
    bounded_int,
    lazy_handler,
    target_url_arg,
    topic_arg,
)
from walletpass_tui.cli.events_cmd.shared import LIST_LIMIT_MAX, VERDICTS
from walletpass_tui.cli.secret_flags import add_secret_flags
from walletpass_tui.cli.target_flags import add_target_flags
from walletpass_tui.cli.time_args import when_arg

_HERE = "walletpass_tui.cli.events_cmd"
MESSAGE_HELP = "a webhook-id, the start of one (msg_2KWP), or last: the newest a sender posted"


def add_filter_flags(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--topic",
        metavar="TOPIC",
        type=topic_arg,
        help="only this topic: pass.activated or pass.deactivated (activated, deactivated)",
    )
    parser.add_argument("--verdict", choices=VERDICTS, help="only verified or only rejected")
    parser.add_argument(
        "--since",
        metavar="WHEN",
        type=when_arg,
        help=f"only {what} since WHEN: a duration back from now (90m, 12h, 7d) or an ISO 8601 time",
    )
    parser.add_argument(
        "--until",
        metavar="WHEN",
        type=when_arg,
        help=f"only {what} before WHEN (as --since)",
    )
    parser.add_argument("--search", metavar="TEXT", help="full-text search over bodies and ids")
    parser.add_argument(
        "--where",
        metavar="QUERY",
        help="a field query, as in the dashboard's filter: data.platform:google, "
        "data.balance>10, has:data.tier, (a OR b); one that starts with - goes after = "
        "(--where=-has:data.tier); see docs/history.md",
    )


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser(
        "events",
        parents=parents,
        help="the delivery history: list, show, diff, tail, stats, replay, export, prune",
        description="Every attempt the receiver got is in the history database of the data directory "
        "(WALLETPASS_HOME); attempts are grouped into messages by webhook-id.",
    )
    ev_sub = ev.add_subparsers(dest="events_command", metavar="ACTION", required=True)
    raw = argparse.RawDescriptionHelpFormatter

    lst = ev_sub.add_parser(
        "list",
        parents=parents,
        help="messages, newest first",
        epilog="examples:\n  walletpass-tui events list --verdict rejected\n"
        "  walletpass-tui events list --search pass_0042 --json\n"
        "  walletpass-tui events list --where 'data.passId:pass_00* -topic:deactivated'\n"
        "  walletpass-tui events list --drift",
        formatter_class=raw,
    )
    add_filter_flags(lst, "messages seen")
    lst.add_argument(
        "--drift",
        action="store_true",
        help="only messages whose delivery showed payload drift first (a field added, missing or "
        "of another type; see 'walletpass-tui schema drift'), with what drifted",
    )
    lst.add_argument(
        "--limit",
        type=bounded_int(1, LIST_LIMIT_MAX),
        default=50,
        metavar="N",
        help=f"at most N messages, 1 to {LIST_LIMIT_MAX} (default 50)",
    )
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(handler=lazy_handler(f"{_HERE}.list_show", "cmd_list"))

    show = ev_sub.add_parser(
        "show",
        parents=parents,
        help="every attempt of one message, with headers and body",
        description="Every attempt of one message: verdict, headers and body (a JSON body "
        "indented on a terminal), then its forwards and replays. MESSAGE is a webhook-id, the "
        "start of one, or last (the newest a sender posted).",
        epilog="examples:\n"
        "  walletpass-tui events show last\n"
        "  walletpass-tui events show msg_2KWPBg --json\n"
        "  walletpass-tui events show last --raw | jq .data",
        formatter_class=raw,
    )
    show.add_argument("webhook_id", metavar="MESSAGE", help=MESSAGE_HELP)
    shape = show.add_mutually_exclusive_group()
    shape.add_argument(
        "--json",
        action="store_true",
        help="print JSON, as stored (body as text when UTF-8, always base64)",
    )
    shape.add_argument(
        "--raw",
        action="store_true",
        help="print only the body, its bytes exactly as received (escaped on a terminal)",
    )
    show.add_argument(
        "--attempt",
        type=bounded_int(1, 1_000_000),
        metavar="N",
        help="only attempt N (with --raw, default: the last verified)",
    )
    show.set_defaults(handler=lazy_handler(f"{_HERE}.list_show", "cmd_show"))

    df = ev_sub.add_parser(
        "diff",
        parents=parents,
        help="what changed between two attempts: body paths and headers",
        description="Compare two stored attempts: the body's paths added, removed and changed "
        "(the learned schema's paths, values as written) and the headers that differ. A side is "
        "a message (a webhook-id, the start of one, or last) with @N for its attempt N (default: "
        "its last). A webhook-id stored as typed is that message even when it holds @ (x@1 is "
        "the message x@1 if there is one; its attempt 1 is x@1@1). With one side, its first "
        "attempt is compared with its last: a redelivery against its first attempt.",
        epilog="examples:\n"
        "  walletpass-tui events diff msg_2KWP... last\n"
        "  walletpass-tui events diff last@1 msg_2KWP...@1 --json",
        formatter_class=raw,
    )
    df.add_argument("a", metavar="A", help=MESSAGE_HELP + "; @N: its attempt N")
    df.add_argument(
        "b",
        metavar="B",
        nargs="?",
        help="the other side (default: A's first attempt against its last)",
    )
    df.add_argument("--json", action="store_true", help="print a JSON document")
    df.set_defaults(handler=lazy_handler(f"{_HERE}.diff", "cmd_diff"))

    tail = ev_sub.add_parser(
        "tail",
        parents=parents,
        help="print each new attempt as it is stored, like tail -f",
        description="Follow the history while another process receives (listen, the dashboard, "
        "relay follow): each attempt is printed a moment after it is stored, the line (or JSON "
        "object) listen prints. Reads only: the history is never written nor created; tail waits "
        "for it to appear and reopens it when it is replaced. Ctrl-C ends it (status 0).",
        epilog="examples:\n"
        "  walletpass-tui events tail\n"
        "  walletpass-tui events tail --verdict rejected\n"
        "  walletpass-tui events tail --where 'has:data.passId'\n"
        "  walletpass-tui events tail --topic activated --json | jq .pass_id",
        formatter_class=raw,
    )
    tail.add_argument(
        "--topic",
        metavar="TOPIC",
        type=topic_arg,
        help="only this topic: pass.activated or pass.deactivated (activated, deactivated)",
    )
    tail.add_argument("--verdict", choices=VERDICTS, help="only verified or only rejected")
    tail.add_argument(
        "--where",
        metavar="QUERY",
        help="only attempts that match this field query (as events list --where)",
    )
    tail.add_argument(
        "--json", action="store_true", help="one JSON object per attempt (as listen --json)"
    )
    tail.set_defaults(handler=lazy_handler(f"{_HERE}.tail", "cmd_tail"))

    st = ev_sub.add_parser(
        "stats",
        parents=parents,
        help="deliveries, redeliveries, forwards and failures per minute, hour or day",
        description="Count the history per time bucket: attempts by topic and verdict, "
        "redeliveries (attempt 2 or later), forwards to your app with its median (p50) and p95 "
        "answer time, and failures (forwards that got no 2xx, rejected attempts). A table with a "
        "bar per bucket on a terminal, or a JSON document (see docs/daily.md).",
        epilog="examples:\n"
        "  walletpass-tui events stats\n"
        "  walletpass-tui events stats --since 1h --by minute\n"
        "  walletpass-tui events stats --since 7d --by day --json",
        formatter_class=raw,
    )
    st.add_argument(
        "--since",
        metavar="WHEN",
        type=when_arg,
        default="24h",
        help="a duration back from now (90m, 12h, 7d) or an ISO 8601 time (default 24h)",
    )
    st.add_argument(
        "--by",
        choices=("minute", "hour", "day"),
        help="bucket size (default: minute up to 2 h, hour up to 3 days, else day)",
    )
    st.add_argument("--json", action="store_true", help="print a JSON document")
    st.set_defaults(handler=lazy_handler(f"{_HERE}.stats", "cmd_stats"))

    rp = ev_sub.add_parser(
        "replay",
        parents=parents,
        help="send a stored message again to a URL",
        description="Send a stored message to URL and record the answer in its history. Without "
        "--to it goes where it was forwarded (listen --forward-to, per topic), else where a "
        "delivery of its topic last went, else to the receiver running on this home (a "
        "redelivery: the message's next attempt). resign (default): same webhook-id, a fresh timestamp, "
        "signed with the secret that verified it (found again among the known secrets by the "
        "signature it came with), as the service would send a retry. original: the stored bytes "
        "and headers exactly, old timestamp included (to test replay protection). An edited body "
        "(--body-file, at most max_body bytes) is always re-signed.",
        epilog="examples:\n"
        "  walletpass-tui events replay last      # to where it was forwarded (else to listen), re-signed\n"
        "  walletpass-tui events replay msg_2KWP... --to http://localhost:3000/webhooks\n"
        "  walletpass-tui events replay msg_2KWP... --to http://localhost:3000/webhooks --mode original\n"
        "  walletpass-tui events replay msg_2KWP... --to http://localhost:3000/webhooks --body-file edited.json\n"
        '  walletpass-tui events replay msg_2KWP... --to http://localhost:3000/webhooks --header "Authorization: Bearer $APP_TOKEN"',
        formatter_class=raw,
    )
    rp.add_argument(
        "webhook_id",
        metavar="MESSAGE",
        help="a webhook-id, the start of one (msg_2KWP), or last: the newest verified delivery "
        "(a newer rejected post is named, not sent)",
    )
    rp.add_argument(
        "--to",
        metavar="URL",
        type=target_url_arg,
        help="where to send it (default: where it was forwarded, else where a delivery of its "
        "topic last was, else this home's running receiver)",
    )
    rp.add_argument("--mode", choices=("resign", "original"), default="resign")
    rp.add_argument("--body-file", metavar="FILE", help="send this body instead (re-signed)")
    add_secret_flags(
        rp,
        what="the secret to re-sign with (default: the one that verified it, found among "
        "WALLETPASS_SECRET's, the endpoints' and this home's test secret)",
        many=False,
    )
    rp.add_argument(
        "--attempt",
        type=bounded_int(1, 1_000_000),
        metavar="N",
        help="replay attempt N (default: the last verified)",
    )
    rp.add_argument("--json", action="store_true")
    add_target_flags(rp)
    rp.set_defaults(handler=lazy_handler(f"{_HERE}.replay", "cmd_replay"))

    ex = ev_sub.add_parser(
        "export",
        parents=parents,
        help="attempts as JSON Lines or curl commands",
        description="Write attempts, oldest first, as JSON Lines (one object per attempt, the shape "
        "of 'events show --json') or as curl commands that reproduce each delivery exactly.",
        epilog="examples:\n"
        "  walletpass-tui events export --verdict verified > deliveries.jsonl\n"
        "  walletpass-tui events export --where 'data.passId:pass_0042' > pass_0042.jsonl\n"
        "  walletpass-tui events export --format curl --search pass_0042 --to http://localhost:3000/webhooks",
        formatter_class=raw,
    )
    ex.add_argument("--format", choices=("jsonl", "curl"), default="jsonl")
    ex.add_argument(
        "--to",
        metavar="URL",
        type=target_url_arg,
        help="curl target (default: this receiver's local URL)",
    )
    ex.add_argument("--webhook-id", metavar="ID", help="only this message")
    ex.add_argument(
        "--limit",
        type=bounded_int(1, 10_000_000),
        default=None,
        metavar="N",
        help="only the newest N attempts",
    )
    add_filter_flags(ex, "attempts received")
    ex.set_defaults(handler=lazy_handler(f"{_HERE}.export", "cmd_export"))

    pr = ev_sub.add_parser(
        "prune",
        parents=parents,
        help="delete old history",
        description="Delete attempts received before a time (and their forwards). Without "
        "--older-than, the retention setting (retention_days) is used. A prune that would delete "
        "every attempt asks first; without a terminal it needs --yes. While a receiver (listen, "
        "the dashboard) runs on this home, it does the deleting itself, between its deliveries. "
        "Ctrl-C stops after the step under way and says how many went.",
        epilog="example: walletpass-tui events prune --older-than 7d",
    )
    pr.add_argument(
        "--older-than",
        metavar="WHEN",
        type=when_arg,
        help="delete what was received before WHEN: a duration back from now (12h, 7d, 2w; 0 = "
        "all) or an ISO 8601 time",
    )
    pr.add_argument("--yes", action="store_true", help="do not ask, even when deleting everything")
    pr.set_defaults(handler=lazy_handler(f"{_HERE}.maintenance", "cmd_prune"))

    pe = ev_sub.add_parser(
        "pending",
        parents=parents,
        help="forwards waiting for your app; give up on them",
        epilog="example: walletpass-tui events pending --give-up",
    )
    pe.add_argument("--give-up", action="store_true", help="stop retrying the pending forwards")
    pe.add_argument("--target", metavar="URL", help="only those to this target")
    pe.set_defaults(handler=lazy_handler(f"{_HERE}.maintenance", "cmd_pending"))
