"""What the receiver's flags (:mod:`walletpass_tui.cli.receiver_flags`) build, for ``listen`` and
the dashboard: the receiver's options, a ``DeliverySetup`` for the delivery runtime (extra
secrets, forwarding, allowed sources, failure injection), and the relay link ``--relay`` asks
for (a feed of the runtime)."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from walletpass_tui.cli.common import CommandError
from walletpass_tui.cli.home_receiver import home_test_secret
from walletpass_tui.cli.secret_flags import GivenSecret, given_secrets
from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.text import printable
from walletpass_tui.webhooks import home_secret
from walletpass_tui.webhooks.injection import Injection
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.sources import SourcePolicy

if TYPE_CHECKING:  # verify (HMAC, standardwebhooks) is loaded only when a --secret is given
    from walletpass_tui.relay.link.feed import RelayLink
    from walletpass_tui.webhooks.forward import Route
    from walletpass_tui.webhooks.verify import SigningKey

__all__ = ["delivery_setup", "receiver_options", "relay_link"]


def signing_keys(secrets: Sequence[GivenSecret]) -> list[SigningKey]:
    """The keys of the secrets given (checked already), labelled masked with their source."""
    if not secrets:
        return []
    from walletpass_tui.webhooks.verify import SigningKey, parse_secret

    return [
        SigningKey(key=parse_secret(given.value), label=f"{given.masked} ({given.source})")
        for given in secrets
    ]


def build_receiver_options(
    args: argparse.Namespace, settings: Settings, secrets: Sequence[GivenSecret] = ()
) -> ReceiverOptions:
    respond = getattr(args, "respond", None)
    fail_first = getattr(args, "fail_first", 0)
    delay = getattr(args, "delay", 0.0)
    if fail_first < 0 or delay < 0:
        raise CommandError("--fail-first and --delay take zero or more.")
    if delay >= 15:
        print(
            "warning: a delay of 15 s or more makes every delivery fail at the service.",
            file=sys.stderr,
        )
    sources = SourcePolicy.build(
        getattr(args, "allow_source", []), getattr(args, "trust_proxy", None)
    )
    try:
        injection = Injection(fail_first=fail_first, respond_status=respond, delay_s=delay)
    except ValueError as exc:  # a status no client can read as an answer
        raise UsageError(f"--{exc}.") from None
    return replace(
        receiver_options(settings),
        secrets=signing_keys(secrets),
        sources=sources,
        injection=injection,
    )


def receiver_options(settings: Settings) -> ReceiverOptions:
    """The receiver as the settings describe it, with no extra secrets, sources or failures."""
    return ReceiverOptions(
        host=settings.receiver_host,
        port=settings.receiver_port,
        path=settings.receiver_path,
        tolerance_s=settings.tolerance_s,
        max_body=settings.max_body,
    )


def delivery_setup(args: argparse.Namespace, settings: Settings) -> DeliverySetup:
    secrets = given_secrets(args)  # read once: standard input cannot be read again
    # The home's test secret, made once: what trigger and check sign with by default.
    test_secret = home_test_secret(settings)
    options = build_receiver_options(
        args, settings, [*secrets, GivenSecret(test_secret, home_secret.LABEL)]
    )
    options = replace(options, check_token=home_secret.check_token(test_secret))
    routes: tuple[Route, ...] = ()
    if getattr(args, "forward_to", []):  # the forwarder's module imports httpx
        from walletpass_tui.cli.target_flags import target_options
        from walletpass_tui.webhooks.forward import parse_route

        parsed = [parse_route(text) for text in args.forward_to]
        # The added headers and trusted certificates travel with each route to the forwarder.
        extra = target_options(args, (r.target for r in parsed))
        routes = tuple(replace(r, options=extra) for r in parsed)
    else:
        for flag, given in (
            ("--header", getattr(args, "header", None)),
            ("--ca-bundle", getattr(args, "ca_bundle", None)),
            ("--insecure", getattr(args, "insecure", False)),
        ):
            if given:
                raise UsageError(f"{flag} applies to forwards: give a --forward-to URL too.")
    ack_target = getattr(args, "ack", "stored") == "target"
    if ack_target and not routes:
        raise CommandError("--ack target needs a --forward-to URL to take the status from.")
    from walletpass_tui.tunnel.choice import tunnel_provider

    return DeliverySetup(
        options=options,
        routes=routes,
        ack_target=ack_target,
        explicit_secrets=tuple(given.value for given in secrets),
        test_secret=test_secret,
        learn_schemas=not getattr(args, "no_schemas", False),
        tunnel=tunnel_provider(settings),
    )


def relay_link(args: argparse.Namespace, settings: Settings) -> RelayLink | None:
    """The relay link ``--relay`` asks for (None without it); the token from --relay-token,
    WALLETPASS_RELAY_TOKEN or relay_token in the config file."""
    url = getattr(args, "relay", None)
    if not url:
        return None
    from walletpass_tui.relay.link.feed import RelayLink

    return RelayLink(relay_url(url, settings, "--relay"), relay_token(args, settings, "--relay"))


def relay_url(url: str, settings: Settings, flag: str) -> str:
    """``url`` when the subscriber token may be sent to it: https://, or http:// to this machine
    (a relay on the laptop, a port forwarded over ssh); http:// to any other host only with
    --allow-http (allow_http), since the token and every delivery would cross the network in
    clear text. Refused with exit 2 otherwise."""
    parts = urlsplit(url)
    if parts.scheme != "http" or settings.allow_http:
        return url
    host = (parts.hostname or "").rstrip(".").lower()
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, not an address: not loopback
        loopback = False
    if not loopback:
        raise UsageError(
            f"{flag} {printable(url, 120)} is http:// to another machine: the subscriber token "
            "and every delivery would cross the network in clear text. Use the relay's https:// "
            "URL (or --allow-http on a network you trust)."
        )
    return url


def relay_token(args: argparse.Namespace, settings: Settings, flag: str) -> str:
    """The subscriber token: --relay-token, else WALLETPASS_RELAY_TOKEN or relay_token in the
    config file; refused (exit 2) when missing or not a token."""
    token = getattr(args, "relay_token", None) or (
        settings.relay_token.reveal() if settings.relay_token else None
    )
    if not token:
        raise UsageError(
            f"{flag} needs the channel's subscriber token: set WALLETPASS_RELAY_TOKEN=wpr_... "
            "(or --relay-token); 'walletpass-tui relay channel add' printed it."
        )
    if not token.isascii() or not token.isprintable() or " " in token:
        raise UsageError(
            "The relay token contains spaces, control or non-ASCII characters; copy it again."
        )
    return token
