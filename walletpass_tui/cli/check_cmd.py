"""``check``: send the battery of signed requests to the user's own receiver and judge its answers.

Exit status: 0 when every must-pass case passed (warnings allowed, unless --strict), 1 otherwise, 2
for usage errors (a malformed URL, secret or topic, an unknown endpoint) before anything is sent.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import (
    bounded_float,
    print_json,
    settings_from_args,
    target_url_arg,
    topic_arg,
)
from walletpass_tui.cli.home_receiver import signing_secret
from walletpass_tui.cli.secret_flags import add_secret_flags
from walletpass_tui.cli.target_flags import add_target_flags, target_options
from walletpass_tui.cli.upgrade import upgrade_history
from walletpass_tui.errors import UsageError

if TYPE_CHECKING:
    from walletpass_tui.check.runner import CaseResult, CheckOptions, CheckReport
    from walletpass_tui.config import Settings

DEFAULT_TIMEOUT_S = 15.0
DESCRIPTION = """\
Send a battery of signed requests to URL, one at a time: valid deliveries of each topic, a retry,
forgeries, stale and future timestamps, several signatures, unusual bodies and a slow network.
Prints what a correct receiver does, what yours did, and a verdict for each; every request and
answer is kept in the history ('events show'). Nothing is sent anywhere but URL: proxy settings
are ignored and redirects are not followed."""
EXAMPLES = """\
examples:
  WALLETPASS_SECRET="$WEBHOOK_SECRET" walletpass-tui check http://localhost:3000/webhooks
  walletpass-tui check http://localhost:3000/webhooks --endpoint ep_3f2a9c --json > check.json
  walletpass-tui check https://staging.example.com/hooks --secret-file staging-secret --topic activated
  WALLETPASS_SECRET="$WEBHOOK_SECRET" walletpass-tui check http://localhost:3000/webhooks --strict  # in CI
"""


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check",
        parents=parents,
        help="test your own webhook receiver as the service and an attacker would",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL", type=target_url_arg, help="your receiver (http or https)")
    source = p.add_argument_group("the signing secret (one of)")
    add_secret_flags(source, what="the secret your receiver verifies with (whsec_...)", many=False)
    source.add_argument(
        "--endpoint",
        metavar="EP_ID",
        help="take the secret (and topics) of an endpoint known locally (endpoints list)",
    )
    p.add_argument(
        "--topic",
        action="append",
        type=topic_arg,
        metavar="TOPIC",
        help="a topic to send valid deliveries of (repeatable; default: the endpoint's, or all)",
    )
    p.add_argument(
        "--timeout",
        type=bounded_float(0, 60),
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="how long to wait for each answer (default 15, the service's deadline)",
    )
    p.add_argument("--json", action="store_true", help="print the results as a JSON document")
    p.add_argument(
        "--strict",
        action="store_true",
        help="a warning fails the check too (exit 1): for CI that wants every case to pass",
    )
    p.add_argument(
        "--no-history",
        action="store_true",
        help="do not record the requests and answers in the history",
    )
    add_target_flags(p)
    p.set_defaults(handler=cmd_check)


def _options(args: argparse.Namespace, settings: Settings) -> CheckOptions:
    from walletpass_tui.api.topics import TOPICS
    from walletpass_tui.check.runner import CheckOptions
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

    flagged = bool(args.secret or args.secret_file)
    if flagged and args.endpoint:
        raise UsageError(
            "Give the secret your receiver verifies with or --endpoint ep_..., not both."
        )
    topics = list(dict.fromkeys(args.topic or ()))
    endpoint_id = None
    if args.endpoint:
        endpoint = EndpointRegistry(settings.endpoints_path).get(args.endpoint.strip())
        if endpoint is None:
            raise UsageError(
                f"No endpoint {args.endpoint.strip()!r} is known locally ('walletpass-tui "
                "endpoints list' shows them); import it with 'walletpass-tui endpoints import' "
                "or pass --secret."
            )
        secret = endpoint.secret.reveal()
        endpoint_id = endpoint.id
        topics = topics or [t for t in endpoint.topics if t in TOPICS]
    else:
        found = signing_secret(args, settings, args.url)  # this home's receiver: its test secret
        if found is None:
            raise UsageError(
                "Give the secret your receiver verifies with: set WALLETPASS_SECRET, give "
                "--secret-file PATH or --secret -, or name a local endpoint with --endpoint ep_..."
            )
        secret = found.value
    return CheckOptions(
        target_options=target_options(args, [args.url]),
        target=args.url,
        secret=secret,
        topics=tuple(topics or TOPICS),
        timeout_s=args.timeout,
        endpoint_id=endpoint_id,
        strict=args.strict,
        check_token=own_receiver_token(settings, args.url),
    )


def own_receiver_token(settings: Settings, url: str) -> str | None:
    """The check token when ``url`` is this home's receiver (its requests kept there as the
    check's, not as deliveries); None elsewhere: no other app is sent it."""
    from walletpass_tui.runtime.own_receiver import check_token_for

    return check_token_for(settings, url)


async def _run(
    options: CheckOptions, settings: Settings, *, record: bool, live: bool
) -> CheckReport:
    from walletpass_tui.check.cases import build_cases
    from walletpass_tui.check.report import Table, heading
    from walletpass_tui.check.runner import run_check
    from walletpass_tui.webhooks.store import Store

    cases = build_cases(options.secret, options.topics)
    table = Table(cases)
    if live:
        print(heading(options, len(cases)), flush=True)
    shown: list[CaseResult] = []

    def show(result: CaseResult) -> None:
        # The table starts with the first case that reached the app: one that could not even
        # connect stops the check, and the summary's one line says why.
        if not shown and result.answer.no_connection:
            return
        if not shown:
            print("\n" + table.header())
        shown.append(result)
        print(table.row(result), flush=True)

    on_result = show if live else None
    if not record:
        return await run_check(options, cases=cases, on_result=on_result)
    async with await Store.open(settings.database_path) as store:
        return await run_check(options, store=store, cases=cases, on_result=on_result)


def cmd_check(args: argparse.Namespace) -> int:
    from walletpass_tui.check.report import json_report, summary

    settings = settings_from_args(args)
    options = _options(args, settings)
    if not args.no_history:
        upgrade_history(settings.database_path)  # the requests it sends are kept there
    report = asyncio.run(_run(options, settings, record=not args.no_history, live=not args.json))
    if args.json:
        print_json(json_report(report))
    else:
        print()
        for line in summary(report):
            print(line)
    sys.stdout.flush()
    return report.exit_code
