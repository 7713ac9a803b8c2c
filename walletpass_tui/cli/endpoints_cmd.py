"""``endpoints create|list|import``: register endpoints at the service and keep their secrets."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from walletpass_tui.api.topics import TopicError, parse_topics
from walletpass_tui.api.urls import ENDPOINT_SCHEMES, check_url, is_local_address
from walletpass_tui.cli.common import (
    CommandError,
    print_json,
    print_table,
    settings_from_args,
    topic_arg,
    url_arg,
)
from walletpass_tui.cli.secret_flags import add_secret_flags, one_secret
from walletpass_tui.cli.service_errors import api_failure
from walletpass_tui.config import Settings, check_writable
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.api.models import WebhookEndpoint
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
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
        help="register the public URL of the receiver running on this home (listen --tunnel, "
        "read from its state), or --public-url / public_url plus the receiver's path",
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
        "can verify its deliveries. Nothing is sent to the service. An id already known is "
        "refused unless --replace is given; the replaced entry is then kept in a backup file. "
        "Like create, an http:// URL needs --allow-http.",
        epilog="examples:\n"
        "  walletpass-tui endpoints import --id ep_3f2a --url https://example.com/wh "
        "--topic pass.activated --secret-file webhook-secret.txt\n"
        "  walletpass-tui endpoints import --id ep_3f2a --url https://example.com/wh "
        "--topic pass.activated --secret -    # asks for it, not shown as typed",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    imp.add_argument("--id", required=True, dest="endpoint_id", help="the endpoint's id (ep_...)")
    imp.add_argument("--url", required=True, help="the endpoint's URL")
    imp.add_argument(
        "--topic", action="append", type=topic_arg, dest="topics", metavar="TOPIC", required=True
    )
    add_secret_flags(imp, what="its signing secret (whsec_...)", many=False)
    imp.add_argument("--disabled", action="store_true", help="record it as disabled")
    imp.add_argument(
        "--replace",
        action="store_true",
        help="overwrite an endpoint already known with this id (the old entry is backed up)",
    )
    sub_import.set_defaults(handler=cmd_endpoints_import)


def _registry(settings: Settings) -> EndpointRegistry:
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

    return EndpointRegistry(settings.endpoints_path)


def _endpoint_url(url: str, settings: Settings) -> str:
    return check_url(url, what="--url", schemes=ENDPOINT_SCHEMES, allow_http=settings.allow_http)


def _topics(given: list[str] | None) -> list[str]:
    try:
        return parse_topics(given or [])
    except TopicError as exc:
        raise UsageError(f"{exc} Use --topic.") from None


def _create_url(args: argparse.Namespace, settings: Settings) -> str:
    url = args.url
    if getattr(args, "from_relay", None):
        if url or args.from_listener:
            raise UsageError("Give one of --url, --from-listener and --from-relay.")
        url = _relay_ingress(args, settings)
    elif args.from_listener:
        if url:
            raise UsageError("Give either --url or --from-listener, not both.")
        public = getattr(args, "public_url", None) or settings.public_url
        url = public.rstrip("/") + settings.receiver_path if public else _listener_url(settings)
    if not url:
        raise UsageError("Give the endpoint's URL with --url (or use --from-listener).")
    return _endpoint_url(url, settings)


def _listener_url(settings: Settings) -> str:
    """The public URL (path included) of the receiver running on this home, from its state file
    (what ``listen --tunnel`` publishes there); UsageError saying how to get one."""
    from walletpass_tui.runtime.instance import Running, find

    found = find(settings.home)
    record = found.record if isinstance(found, Running) else None
    if isinstance(found, Running) and record is None:  # it runs, but its state is not usable
        raise CommandError(found.unreadable(settings.home, "pass --public-url"))
    if record is not None and record.public_url:
        print(
            f"Using the public URL of the receiver running on this home ({record.describe()}): "
            f"{printable(record.public_url)}",
            file=sys.stderr,
        )
        return record.public_url
    if record is not None:
        raise UsageError(
            f"The receiver running on this home ({record.describe()}) has no public URL yet: "
            "start it with --tunnel cloudflared (or ngrok), or pass --public-url."
        )
    raise UsageError(
        "--from-listener needs a public URL: run 'walletpass-tui listen --tunnel cloudflared' "
        "on this home (another shell), or pass --public-url (or set public_url)."
    )


def _mark_left_behind(registry: EndpointRegistry, created: WebhookEndpoint) -> None:
    """The tunnel endpoints that point elsewhere than the one just created for the listener's
    URL are marked stale here, each said with what to do about it in the workspace."""
    from datetime import UTC, datetime

    from walletpass_tui.webhooks.tunnel_endpoints import left_behind, stale_note

    behind = [e for e in left_behind(registry.load(), created.url) if e.id != created.id]
    if not behind:
        return
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    registry.mark_stale((e.id for e in behind), stale_note(created.id, created.url, when))
    for endpoint in behind:
        print(
            f"Marked {printable(endpoint.id, 40)} stale here: it points at "
            f"{printable(endpoint.url, 120)}, a tunnel URL this home no longer has. Disable or "
            "delete it in your workspace's webhook settings (the service's API cannot change it).",
            file=sys.stderr,
        )


def _relay_ingress(args: argparse.Namespace, settings: Settings) -> str:
    """The ingress URL of the relay channel ``--from-relay`` names (asked of the relay)."""
    from walletpass_tui.cli.receiver_setup import relay_token, relay_url
    from walletpass_tui.relay.link.channel_info import fetch_channel

    url = relay_url(args.from_relay, settings, "--from-relay")
    info = asyncio.run(fetch_channel(url, relay_token(args, settings, "--from-relay")))
    print(
        f"Relay channel {printable(info.name)}: ingress {printable(info.ingress_url)}",
        file=sys.stderr,
    )
    return info.ingress_url


def cmd_endpoints_create(args: argparse.Namespace) -> int:
    from walletpass_tui.api.client import WalletPassClient
    from walletpass_tui.api.errors import ApiError

    settings = settings_from_args(args)
    url = _create_url(args, settings)
    topics = _topics(args.topics)
    if is_local_address(url):
        print(
            f"warning: {printable(url)} is this machine or a private network: the service "
            "cannot reach it. Use a tunnel's public URL (see 'walletpass-tui --help').",
            file=sys.stderr,
        )
    registry = _registry(settings)
    # Before anything is created at the service: a secret that cannot be stored is a secret lost.
    check_writable(registry.path)
    registry.load()  # a damaged endpoints.json fails here
    store_failures: list[ConfigError] = []

    def store(endpoint: WebhookEndpoint) -> None:
        try:
            registry.record_created(endpoint, tunnel=bool(args.from_listener))
        except ConfigError as exc:  # the endpoint exists now: its secret must still be shown
            store_failures.append(exc)

    async def run() -> Any:
        async with WalletPassClient(settings, on_endpoint_created=store) as client:
            return await client.create_webhook_endpoint(url, topics, enabled=not args.disabled)

    try:
        endpoint = asyncio.run(run())
    except ApiError as exc:
        raise api_failure(exc, settings, rescue_secret=True) from None
    # The secret is stored (or its failure noted) before anything is printed: a closed pipe
    # (`| head -1`) cannot lose it.
    try:
        if args.json:
            print_json(endpoint.to_service_json())
        else:
            print(f"Created {endpoint.id} -> {printable(endpoint.url)}")
            print(f"  topics:  {', '.join(endpoint.enabled_topics)}")
            print(f"  enabled: {'yes' if endpoint.enabled else 'no'}")
            print(f"  secret:  {endpoint.secret.reveal()}")
        sys.stdout.flush()
    except BrokenPipeError:
        if not store_failures:
            raise  # stored: nothing is lost, the command ends quietly
    if store_failures:
        # Not stored anywhere: the one line on stderr carries it too, whatever became of stdout.
        raise CommandError(
            f"{endpoint.id} was created but its secret could not be stored: {store_failures[0]} "
            f"Keep the secret {endpoint.secret.reveal()}: the service never returns it again; "
            "once the data directory is writable, record it with 'walletpass-tui endpoints "
            "import'."
        )
    if not args.json:
        print(
            "This secret is shown once and cannot be retrieved from the service again. It is "
            f"stored in {registry.path} (mode 0600) and used to verify deliveries.",
            file=sys.stderr,
        )
    if args.from_listener:
        _mark_left_behind(registry, endpoint)
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
            printable(e.id, 40),
            printable(e.url, 60),
            ",".join(e.topics),
            "on" if e.enabled else "off",
            printable(e.created_at or "-"),
            e.secret.masked,
            e.origin,
        ]
        for e in endpoints
    ]
    print_table(rows, ["ID", "URL", "TOPICS", "ENABLED", "CREATED", "SECRET", "ORIGIN"])
    for e in endpoints:
        if e.stale:
            print(f"{printable(e.id, 40)} is stale: {printable(e.stale, 300)}.")
    return 0


def cmd_endpoints_import(args: argparse.Namespace) -> int:
    from walletpass_tui.webhooks.endpoint_import import (
        EndpointExists,
        backup_endpoint,
        import_endpoint,
    )

    settings = settings_from_args(args)
    _endpoint_url(args.url, settings)
    given = one_secret(args)
    if given is None:
        raise UsageError(
            "Give the endpoint's signing secret: --secret - (asked for, not shown), --secret-file "
            "PATH or $WALLETPASS_SECRET."
        )
    registry = _registry(settings)
    backup = backup_endpoint(registry, args.endpoint_id) if args.replace else None
    try:
        endpoint = import_endpoint(
            registry,
            args.endpoint_id,
            args.url,
            _topics(args.topics),
            given.value,
            enabled=not args.disabled,
            allow_http=settings.allow_http,
            replace=args.replace,
        )
    except EndpointExists as exc:
        raise UsageError(str(exc)) from None
    print(f"Imported {endpoint.id} ({endpoint.secret.masked}); its deliveries will be verified.")
    if backup is not None:
        print(f"The entry it replaced, secret included, is kept in {backup} (mode 0600).")
    return 0
