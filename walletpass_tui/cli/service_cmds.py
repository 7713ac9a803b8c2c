"""Commands that talk to the service or to local settings: templates, endpoints, config."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from datetime import UTC, datetime
from typing import Any

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.models import TOPICS, WebhookEndpoint, template_title
from walletpass_tui.cli.common import (
    CommandError,
    print_json,
    print_table,
    printable,
    settings_from_args,
)
from walletpass_tui.config import ConfigError, Settings, mask_secret, write_private_file
from walletpass_tui.webhooks.endpoints import EndpointRegistry


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
    p.set_defaults(handler=cmd_templates)

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
        choices=TOPICS,
        dest="topics",
        help="topic to subscribe to (repeat for both)",
    )
    create.add_argument(
        "--disabled", action="store_true", help="create it disabled (no deliveries until enabled)"
    )
    create.add_argument(
        "--from-listener",
        action="store_true",
        help="use the public URL (--public-url / public_url setting) plus the receiver's path",
    )
    create.add_argument("--public-url", default=argparse.SUPPRESS, help="the tunnel's public URL")
    create.add_argument(
        "--json", action="store_true", help="print the endpoint exactly as the service returned it"
    )
    create.set_defaults(handler=cmd_endpoints_create)

    lst = ep_sub.add_parser(
        "list",
        parents=parents,
        help="endpoints known locally (secrets masked)",
        epilog="example: walletpass-tui endpoints list --json",
    )
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(handler=cmd_endpoints_list)

    imp = sub_import = ep_sub.add_parser(
        "import",
        parents=parents,
        help="record an endpoint created elsewhere, with its secret",
        description="Record an endpoint created in the service's web settings, so the receiver "
        "can verify its deliveries. Nothing is sent to the service.",
        epilog="example: walletpass-tui endpoints import --id ep_3f2a --url https://example.com/wh "
        "--topic pass.activated --secret whsec_...",
    )
    imp.add_argument("--id", required=True, dest="endpoint_id", help="the endpoint's id (ep_...)")
    imp.add_argument("--url", required=True, help="the endpoint's URL")
    imp.add_argument("--topic", action="append", choices=TOPICS, dest="topics", required=True)
    imp.add_argument("--secret", required=True, help="its signing secret (whsec_...)")
    imp.add_argument("--disabled", action="store_true", help="record it as disabled")
    sub_import.set_defaults(handler=cmd_endpoints_import)

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
    show.set_defaults(handler=cmd_config_show)


def _registry(settings: Settings) -> EndpointRegistry:
    return EndpointRegistry(settings.endpoints_path)


def cmd_templates(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)

    async def run() -> Any:
        async with WalletPassClient(settings) as client:
            return await client.list_pass_templates()

    try:
        result = asyncio.run(run())
    except ApiError as exc:
        raise _api_failure(exc, settings) from None
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


def cmd_endpoints_create(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    url = args.url
    if args.from_listener:
        if url:
            raise CommandError("Give either --url or --from-listener, not both.")
        public = getattr(args, "public_url", None) or settings.public_url
        if not public:
            raise CommandError(
                "--from-listener needs the tunnel's public URL: pass --public-url or set public_url."
            )
        url = public.rstrip("/") + settings.receiver_path
    if not url:
        raise CommandError("Give the endpoint's URL with --url (or use --from-listener).")
    if not args.topics:
        raise CommandError("Give at least one --topic (pass.activated, pass.deactivated).")
    registry = _registry(settings)
    # A damaged endpoints.json fails here, before the service creates an endpoint whose secret
    # could then not be stored.
    registry.load()
    store_failures: list[ConfigError] = []

    def store(endpoint: WebhookEndpoint) -> None:
        try:
            registry.record_created(endpoint)
        except ConfigError as exc:  # the endpoint exists now: its secret must still be shown
            store_failures.append(exc)

    async def run() -> Any:
        async with WalletPassClient(settings, on_endpoint_created=store) as client:
            return await client.create_webhook_endpoint(url, args.topics, enabled=not args.disabled)

    try:
        endpoint = asyncio.run(run())
    except ApiError as exc:
        raise _api_failure(exc, settings, rescue_secret=True) from None
    if args.json:
        print_json(endpoint.to_service_json())
    else:
        print(f"Created {endpoint.id} -> {endpoint.url}")
        print(f"  topics:  {', '.join(endpoint.enabled_topics)}")
        print(f"  enabled: {'yes' if endpoint.enabled else 'no'}")
        print(f"  secret:  {endpoint.secret.reveal()}")
    if store_failures:
        raise CommandError(
            f"{endpoint.id} was created but its secret could not be stored: {store_failures[0]} "
            "Keep the secret printed above: the service never returns it again."
        )
    if not args.json:
        print(
            "This secret is shown once and cannot be retrieved from the service again. It is "
            f"stored in {registry.path} (mode 0600) and used to verify deliveries.",
            file=sys.stderr,
        )
    return 0


def cmd_endpoints_list(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    endpoints = _registry(settings).load()
    if args.json:
        print_json([e.public_dict() for e in endpoints])
        return 0
    if not endpoints:
        print("No endpoints known locally. Create one with 'walletpass-tui endpoints create' or")
        print("record one made elsewhere with 'walletpass-tui endpoints import'.")
        return 0
    rows = [
        [
            e.id,
            printable(e.url, 60),
            ",".join(e.topics),
            "on" if e.enabled else "off",
            e.created_at or "-",
            e.secret.masked,
            e.origin,
        ]
        for e in endpoints
    ]
    print_table(rows, ["ID", "URL", "TOPICS", "ENABLED", "CREATED", "SECRET", "ORIGIN"])
    return 0


def cmd_endpoints_import(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    endpoint = _registry(settings).import_endpoint(
        args.endpoint_id, args.url, args.topics, args.secret, enabled=not args.disabled
    )
    print(f"Imported {endpoint.id} ({endpoint.secret.masked}); its deliveries will be verified.")
    return 0


def cmd_config_show(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    rows = settings.describe()
    if args.json:
        print_json(
            {
                "config_file": str(settings.config_file) if settings.config_file else None,
                "settings": {
                    name: {"value": value, "source": source} for name, value, source in rows
                },
            }
        )
        return 0
    print_table([[n, v, s] for n, v, s in rows], ["SETTING", "VALUE", "FROM"])
    print(f"config file: {settings.config_file}")
    return 0


ANSWER_SHOWN_CHARS = 300
_SECRET_IN_TEXT = re.compile(r"whsec_[A-Za-z0-9+/=]+")


def _redact(text: str, settings: Settings) -> str:
    """``text`` with the API key and any signing secret masked."""
    if settings.api_key:
        text = text.replace(settings.api_key.reveal(), settings.api_key.masked)
    return _SECRET_IN_TEXT.sub(lambda m: mask_secret(m.group(0)), text)


def _api_failure(exc: ApiError, settings: Settings, *, rescue_secret: bool = False) -> CommandError:
    """One line for stderr. When the service's answer is worth seeing it is appended, escaped and
    shortened, secrets masked; an answer to the create call that holds a signing secret is saved
    to a private file instead, since the service never returns that secret again."""
    message = str(exc)
    body = exc.body
    if body is None or exc.kind not in ("bad_shape", "bad_json", "http"):
        return CommandError(message)
    if rescue_secret and _SECRET_IN_TEXT.search(body):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = settings.home / f"unparsed-create-answer-{stamp}.txt"
        try:
            write_private_file(path, body.encode())
        except OSError:
            # Nowhere to keep it: showing it is the only way not to lose it.
            return CommandError(f"{message} The service answered: {printable(body)}")
        return CommandError(
            f"{message} The answer holds the endpoint's signing secret; it is saved in {path} "
            "(mode 0600)."
        )
    shown = printable(_redact(body, settings), ANSWER_SHOWN_CHARS)
    return CommandError(f"{message} The service answered: {shown}")
