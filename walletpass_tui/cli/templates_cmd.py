"""``templates``: the workspace's pass templates."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from walletpass_tui.cli.attempt_lines import drift_line
from walletpass_tui.cli.common import print_json, print_table, settings_from_args
from walletpass_tui.cli.service_errors import api_failure
from walletpass_tui.config import Settings
from walletpass_tui.text import printable


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "templates",
        parents=parents,
        help="list the workspace's pass templates",
        description="List pass templates (GET {base_url}/api/v0/passTemplates). The service does not "
        "document a template's fields, so every field is kept; --json prints them all. Each "
        "listing also teaches the templates' schema ('walletpass-tui schema show templates'); "
        "drift found in it is said on stderr.",
        epilog="example: walletpass-tui templates --json | jq '.[0]'",
    )
    p.add_argument("--json", action="store_true", help="print the templates as a JSON array")
    p.set_defaults(handler=cmd_templates)


def learn_templates(settings: Settings, templates: Sequence[Any]) -> None:
    """Teach the ``templates`` schema from the templates the service listed; drift they showed
    is said on stderr. A schema file that cannot be written is a warning, never a failure of
    the listing."""
    from walletpass_tui.schemas import learn_templates as learn
    from walletpass_tui.schemas.errors import SchemaError

    try:
        found = learn(settings.database_path, templates)
    except SchemaError as exc:  # said on stderr
        print(f"warning: the templates' schema was not learned: {exc}", file=sys.stderr)
        return
    for record in found:
        print(drift_line(record), file=sys.stderr)


def cmd_templates(args: argparse.Namespace) -> int:
    from walletpass_tui.api.client import WalletPassClient
    from walletpass_tui.api.errors import ApiError
    from walletpass_tui.api.models import template_title

    settings = settings_from_args(args)

    async def run() -> Any:
        async with WalletPassClient(settings) as client:
            return await client.list_pass_templates()

    try:
        result = asyncio.run(run())
    except ApiError as exc:
        raise api_failure(exc, settings) from None
    learn_templates(settings, result.templates)
    if args.json:
        print_json(result.templates)
        return 0
    if not result.templates:
        print("No pass templates.")
        return 0
    rows = []
    for tpl in result.templates:
        ident = tpl.get("id", "")
        others = {k: v for k, v in tpl.items() if k not in ("id",)}
        rows.append(
            [
                printable(str(ident), 40),
                printable(template_title(tpl), 40),
                printable(json.dumps(others, ensure_ascii=False), 70),
            ]
        )
    print_table(rows, ["ID", "NAME", "FIELDS"])
    print(f"{len(result.templates)} template(s). Use --json for every field.")
    return 0
