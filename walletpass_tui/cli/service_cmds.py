"""Commands that talk to the service or to local settings: templates, endpoints, config.

Only their arguments are defined here; each handler's module is imported when it runs
(``templates_cmd``, ``endpoints_cmds``, ``config_cmd``), so ``config show`` never loads httpx.
"""

from __future__ import annotations

import argparse

from walletpass_tui.cli.common import lazy_handler, topic_arg, url_arg

_CLI = "walletpass_tui.cli"
_ENDPOINTS = f"{_CLI}.endpoints_cmds"


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "templates",
        parents=parents,
        help="list the workspace's pass templates",
        description="List pass templates (GET {base_url}/api/v0/passTemplates). The service does not "
        "document a template's fields, so every field is kept; --json prints them all.",
        epilog="example: walletpass-tui templates --json | jq '.[0]'",
    )
    p.add_argument("--json", action="store_true", help="print the templates as a JSON array")
    p.set_defaults(handler=lazy_handler(f"{_CLI}.templates_cmd", "cmd_templates"))

    ep = sub.add_parser(
        "endpoints",
        parents=parents,
        help="create, list and import webhook endpoints",
        description="Webhook endpoints: create one at the service, list those known locally, or "
        "import one created elsewhere so its deliveries can be verified.",
    )
    ep_sub = ep.add_subparsers(dest="endpoints_command", metavar="ACTION", required=True)

    create = ep_sub.add_parser(
        "create",
        parents=parents,
        help="register a webhook endpoint and store its secret",
        description="Register an endpoint (POST {registration_url}/v0/webhookEndpoints). The "
        "signing secret is shown once and stored at once in the data directory (mode 0600): "
        "the service never returns it again.",
        epilog="example: walletpass-tui endpoints create --url https://ab12.ngrok.app/webhooks "
        "--topic pass.activated --topic pass.deactivated",
    )
    create.add_argument("--url", help="public HTTPS URL the service will post to")
    create.add_argument(
        "--topic",
        action="append",
        type=topic_arg,
        dest="topics",
        metavar="TOPIC",
        help="topic to subscribe to: pass.activated or pass.deactivated (repeat for both)",
    )
    create.add_argument(
        "--disabled", action="store_true", help="create it disabled (no deliveries until enabled)"
    )
    create.add_argument(
        "--from-listener",
        action="store_true",
        help="use the public URL (--public-url / public_url setting) plus the receiver's path",
    )
    create.add_argument(
        "--public-url", type=url_arg, default=argparse.SUPPRESS, help="the tunnel's public URL"
    )
    create.add_argument(
        "--from-relay",
        type=url_arg,
        metavar="SUBSCRIBE_URL",
        help="register a relay channel's ingress URL (asked of the relay with the subscriber "
        "token: WALLETPASS_RELAY_TOKEN, relay_token or --relay-token)",
    )
    create.add_argument(
        "--relay-token", metavar="TOKEN", help="subscriber token (prefer WALLETPASS_RELAY_TOKEN)"
    )
    create.add_argument(
        "--json", action="store_true", help="print the endpoint exactly as the service returned it"
    )
    create.set_defaults(handler=lazy_handler(_ENDPOINTS, "cmd_endpoints_create"))

    lst = ep_sub.add_parser(
        "list",
        parents=parents,
        help="endpoints known locally (secrets masked)",
        epilog="example: walletpass-tui endpoints list --json",
    )
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(handler=lazy_handler(_ENDPOINTS, "cmd_endpoints_list"))

    imp = sub_import = ep_sub.add_parser(
        "import",
        parents=parents,
        help="record an endpoint created elsewhere, with its secret",
        description="Record an endpoint created in the service's web settings, so the receiver "
        "can verify its deliveries. Nothing is sent to the service. An id already known is "
        "refused unless --replace is given; the replaced entry is then kept in a backup file. "
        "Like create, an http:// URL needs --allow-http.",
        epilog="example: walletpass-tui endpoints import --id ep_3f2a --url https://example.com/wh "
        "--topic pass.activated --secret whsec_...",
    )
    imp.add_argument("--id", required=True, dest="endpoint_id", help="the endpoint's id (ep_...)")
    imp.add_argument("--url", required=True, help="the endpoint's URL")
    imp.add_argument(
        "--topic", action="append", type=topic_arg, dest="topics", metavar="TOPIC", required=True
    )
    imp.add_argument("--secret", required=True, help="its signing secret (whsec_...)")
    imp.add_argument("--disabled", action="store_true", help="record it as disabled")
    imp.add_argument(
        "--replace",
        action="store_true",
        help="overwrite an endpoint already known with this id (the old entry is backed up)",
    )
    sub_import.set_defaults(handler=lazy_handler(_ENDPOINTS, "cmd_endpoints_import"))

    cfg = sub.add_parser(
        "config",
        parents=parents,
        help="show the effective settings",
        description="Settings come from flags, then the environment (WALLETPASS_API_KEY, "
        "WALLETPASS_BASE_URL, WALLETPASS_REGISTRATION_URL, WALLETPASS_HOME), then a TOML file, "
        "then defaults.",
    )
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = cfg_sub.add_parser(
        "show",
        parents=parents,
        help="print each setting and where it came from (API key masked)",
        epilog="example: walletpass-tui config show --json",
    )
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=lazy_handler(f"{_CLI}.config_cmd", "cmd_config_show"))
