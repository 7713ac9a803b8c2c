"""``schema``: the payload schemas learned from verified deliveries, their drift and exports.

This module only defines the arguments; the schema reader is imported when an action runs, and
reading never loads Textual, aiohttp nor httpx. Reading never creates a file either: a home with
no history yet, or whose schemas were not learned yet, says so.
"""

from __future__ import annotations

import argparse

from walletpass_tui.cli.common import lazy_handler, schema_topic_arg
from walletpass_tui.cli.time_args import when_arg

_HANDLERS = "walletpass_tui.cli.schema_cmd.actions"

TOPIC_HELP = (
    "a topic (pass.activated or activated, pass.deactivated or deactivated, or any other topic "
    "learned, as 'schema list' names it), 'templates' for the pass templates, 'unknown' for "
    "deliveries without a topic, or topic:NAME for the topic NAME exactly"
)
FORMATS = ("jsonschema", "typescript", "pydantic", "openapi")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    sc = sub.add_parser(
        "schema",
        parents=parents,
        help="payload schemas learned from verified deliveries: list, show, drift, export, rebuild",
        description="The service documents neither a webhook's body nor a pass template's fields: "
        "walletpass-tui learns them from what arrives. Each topic's schema is learned from every "
        "verified delivery while 'listen', the dashboard or the demo runs ('templates' learns "
        "the pass templates), and drift (a field added, missing, or of another type) is flagged "
        "once a topic has 20 samples. See docs/schemas.md.",
        epilog="examples:\n"
        "  walletpass-tui schema list\n"
        "  walletpass-tui schema show activated\n"
        "  walletpass-tui schema drift --json",
        formatter_class=raw,
    )
    # In the order a person meets them: what was learned, its drift, learning again, exporting.
    sc_sub = sc.add_subparsers(dest="schema_command", metavar="ACTION", required=True)

    lst = sc_sub.add_parser(
        "list",
        parents=parents,
        help="one row per topic and the templates: samples, paths, drift, last seen",
        epilog="examples:\n  walletpass-tui schema list\n  walletpass-tui schema list --json",
        formatter_class=raw,
    )
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(handler=lazy_handler(_HANDLERS, "cmd_list"))

    show = sc_sub.add_parser(
        "show",
        parents=parents,
        help="one topic's field tree: types, presence, first values",
        description="Every field path learned for TOPIC, parents before their children: the JSON "
        "types seen there (with counts), how often it is present, its first value and when it "
        "was first and last seen.",
        epilog="examples:\n"
        "  walletpass-tui schema show activated\n"
        "  walletpass-tui schema show pass.activated --json | jq .samples",
        formatter_class=raw,
    )
    show.add_argument("topic", metavar="TOPIC", type=schema_topic_arg, help=TOPIC_HELP)
    show.add_argument("--json", action="store_true", help="print a JSON document")
    show.set_defaults(handler=lazy_handler(_HANDLERS, "cmd_show"))

    drift = sc_sub.add_parser(
        "drift",
        parents=parents,
        help="drift found, newest first: fields added, missing or of another type",
        description="Each finding is reported once, by the first delivery that showed it; "
        "COUNT says how many deliveries have shown it since. Drift is looked for once a topic "
        "has 20 samples.",
        epilog="examples:\n"
        "  walletpass-tui schema drift\n"
        "  walletpass-tui schema drift --topic activated --since 2026-11-01T00:00:00Z --json",
        formatter_class=raw,
    )
    drift.add_argument(
        "--topic",
        metavar="TOPIC",
        type=schema_topic_arg,
        help="only this topic's (" + TOPIC_HELP + ")",
    )
    drift.add_argument(
        "--since",
        metavar="WHEN",
        type=when_arg,
        help="only drift first seen since WHEN: a duration back from now (90m, 12h, 7d) or an "
        "ISO 8601 time",
    )
    drift.add_argument("--json", action="store_true", help="print a JSON array")
    drift.set_defaults(handler=lazy_handler(_HANDLERS, "cmd_drift"))

    rb = sc_sub.add_parser(
        "rebuild",
        parents=parents,
        help="learn every topic again from the stored history",
        description="Forget what was learned from deliveries and learn it again from the stored "
        "history, oldest first (a receiver running meanwhile follows). The pass templates are "
        "kept: they are not in the history. On a terminal, stderr shows how far it got.",
        epilog="example: walletpass-tui schema rebuild",
    )
    rb.set_defaults(handler=lazy_handler(_HANDLERS, "cmd_rebuild"))

    export = sc_sub.add_parser(
        "export",
        parents=parents,
        help="schemas as JSON Schema, TypeScript, pydantic models or an OpenAPI document",
        description="Print TOPIC's learned schema as code: jsonschema (JSON Schema 2020-12), "
        "typescript (an interface per object), pydantic (v2 models) or openapi (an OpenAPI 3.1 "
        "document with a webhook per topic: the signed headers, the body, the 2xx answer). "
        "Without TOPIC, every topic learned in one document, with their union (discriminated "
        "by 'type' when each topic's type took one value). A field that took at most 12 values "
        "over at least 50 is exported as those values. Every delivery learned validates "
        "against it.",
        epilog="examples:\n"
        "  walletpass-tui schema export activated --format typescript > pass-activated.ts\n"
        "  walletpass-tui schema export pass.activated --format jsonschema > activated.schema.json\n"
        "  walletpass-tui schema export --format openapi > webhooks.openapi.json",
        formatter_class=raw,
    )
    export.add_argument(
        "topic",
        metavar="TOPIC",
        nargs="?",
        type=schema_topic_arg,
        help=TOPIC_HELP + "; without it, every topic",
    )
    export.add_argument(
        "--format", choices=FORMATS, default="jsonschema", help="default: jsonschema"
    )
    export.set_defaults(handler=lazy_handler(_HANDLERS, "cmd_export"))
