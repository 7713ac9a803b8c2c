"""``endpoints create|list|import``: register endpoints at the service and keep their secrets."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from walletpass_tui.api.topics import TopicError, parse_topics
from walletpass_tui.api.urls import ENDPOINT_SCHEMES, UrlError, check_url, is_local_address
from walletpass_tui.cli.common import (
    CommandError,
    UsageError,
    print_json,
    print_table,
    settings_from_args,
)
from walletpass_tui.cli.service_errors import api_failure
from walletpass_tui.config import ConfigError, Settings, check_writable
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.api.models import WebhookEndpoint
    from walletpass_tui.webhooks.endpoints import EndpointRegistry


def _registry(settings: Settings) -> EndpointRegistry:
    from walletpass_tui.webhooks.endpoints import EndpointRegistry

    return EndpointRegistry(settings.endpoints_path)


def _endpoint_url(url: str, settings: Settings) -> str:
    try:
        return check_url(
            url, what="--url", schemes=ENDPOINT_SCHEMES, allow_http=settings.allow_http
        )
    except UrlError as exc:
        raise UsageError(str(exc)) from None


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
        if not public:
            raise UsageError(
                "--from-listener needs the tunnel's public URL: pass --public-url or set public_url."
            )
        url = public.rstrip("/") + settings.receiver_path
    if not url:
        raise UsageError("Give the endpoint's URL with --url (or use --from-listener).")
    return _endpoint_url(url, settings)


def _relay_ingress(args: argparse.Namespace, settings: Settings) -> str:
    """The ingress URL of the relay channel ``--from-relay`` names (asked of the relay)."""
    from walletpass_tui.cli.receiver_flags import relay_token
    from walletpass_tui.relay.channel_info import fetch_channel
    from walletpass_tui.relay.subscriber import RelayClientError

    try:
        info = asyncio.run(
            fetch_channel(args.from_relay, relay_token(args, settings, "--from-relay"))
        )
    except RelayClientError as exc:
        raise CommandError(str(exc)) from None
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
            registry.record_created(endpoint)
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
    return 0


def cmd_endpoints_import(args: argparse.Namespace) -> int:
    from walletpass_tui.webhooks.endpoint_import import (
        EndpointExists,
        backup_endpoint,
        import_endpoint,
    )

    settings = settings_from_args(args)
    _endpoint_url(args.url, settings)
    registry = _registry(settings)
    backup = backup_endpoint(registry, args.endpoint_id) if args.replace else None
    try:
        endpoint = import_endpoint(
            registry,
            args.endpoint_id,
            args.url,
            _topics(args.topics),
            args.secret,
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
