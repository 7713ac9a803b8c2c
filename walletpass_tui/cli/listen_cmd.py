"""``listen``: the receiver without any UI, one line (or JSON object) per attempt."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from walletpass_tui.cli.common import CommandError, printable, settings_from_args
from walletpass_tui.config import Settings, mask_secret
from walletpass_tui.endpoints import EndpointRegistry
from walletpass_tui.formatting import format_ms
from walletpass_tui.tunnel import discover_ngrok
from walletpass_tui.webhooks.forward import (
    Forwarder,
    ForwardError,
    Route,
    SecretLookup,
    parse_route,
)
from walletpass_tui.webhooks.receiver import Injection, Receiver, ReceiverOptions
from walletpass_tui.webhooks.sources import SourceError, SourcePolicy
from walletpass_tui.webhooks.store import Attempt, ForwardResult, ForwardRow, Store
from walletpass_tui.webhooks.verify import SecretError, SigningKey, parse_secret


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "listen",
        parents=parents,
        help="receive and verify webhooks without the dashboard",
        description="Run the webhook receiver headless. Every attempt is verified (Standard Webhooks "
        "signature, timestamp tolerance), stored in the history database, and printed. A verified "
        "delivery is answered 200 only after it is on disk.",
        epilog="examples:\n"
        "  walletpass-tui listen --secret whsec_...\n"
        "  walletpass-tui listen --port 9000 --json | jq .verdict\n"
        "  walletpass-tui listen --fail-first 2     # watch the sender retry",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s = argparse.SUPPRESS
    p.add_argument("--host", default=s, help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=s, help="port to listen on (default 8787; 0 = any)")
    p.add_argument("--path", default=s, help="path webhooks are posted to (default /webhooks)")
    p.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="WHSEC",
        help="a signing secret to verify with (repeatable); endpoints known locally are used too",
    )
    p.add_argument(
        "--tolerance",
        type=int,
        default=s,
        metavar="SECONDS",
        help="timestamp tolerance (default 300)",
    )
    p.add_argument(
        "--max-body",
        type=int,
        default=s,
        metavar="BYTES",
        help="largest body accepted (default 1 MiB)",
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON object per attempt on stdout"
    )
    p.add_argument(
        "--public-url", default=s, metavar="URL", help="the tunnel's public URL, to show"
    )
    fwd = p.add_argument_group("forwarding (to your app)")
    fwd.add_argument(
        "--forward-to",
        action="append",
        default=[],
        metavar="[TOPIC=]URL",
        help="forward each verified delivery, raw bytes and original signature, to URL "
        "(repeatable; TOPIC=URL forwards only that topic)",
    )
    fwd.add_argument(
        "--ack",
        choices=("stored", "target"),
        default="stored",
        help="stored (default): answer 200 once stored, forward after, queue while your app is "
        "down; target: answer with your app's status (within 10 s)",
    )
    src = p.add_argument_group("sources")
    src.add_argument(
        "--allow-source",
        action="append",
        default=[],
        metavar="CIDR|service",
        help="accept only these client addresses ('service' = the service's published ones); "
        "others get 403",
    )
    src.add_argument(
        "--trust-proxy",
        action="append",
        default=None,
        metavar="CIDR",
        help="peers whose X-Forwarded-For is believed (default: loopback, where tunnels connect)",
    )
    inj = p.add_argument_group("failure injection (to watch the sender's retries)")
    inj.add_argument(
        "--fail-first",
        type=int,
        default=0,
        metavar="N",
        help="answer 500 to the first N attempts of each message",
    )
    inj.add_argument(
        "--respond",
        type=int,
        default=None,
        metavar="STATUS",
        help="answer every verified delivery with STATUS",
    )
    inj.add_argument(
        "--delay", type=float, default=0.0, metavar="SECONDS", help="wait before answering"
    )
    p.set_defaults(handler=cmd_listen)


def signing_keys(secrets: Sequence[str]) -> list[SigningKey]:
    keys = []
    for secret in secrets:
        try:
            keys.append(SigningKey(key=parse_secret(secret), label=mask_secret(secret)))
        except SecretError as exc:
            raise CommandError(f"--secret {mask_secret(secret)}: {exc}") from None
    return keys


def build_receiver_options(args: argparse.Namespace, settings: Settings) -> ReceiverOptions:
    if args.respond is not None and not 100 <= args.respond <= 599:
        raise CommandError("--respond takes an HTTP status between 100 and 599.")
    if args.fail_first < 0 or args.delay < 0:
        raise CommandError("--fail-first and --delay take zero or more.")
    if args.delay >= 15:
        print(
            "warning: a delay of 15 s or more makes every delivery fail at the service.",
            file=sys.stderr,
        )
    try:
        sources = SourcePolicy.build(args.allow_source, args.trust_proxy)
    except SourceError as exc:
        raise CommandError(str(exc)) from None
    return ReceiverOptions(
        host=settings.receiver_host,
        port=settings.receiver_port,
        path=settings.receiver_path,
        tolerance_s=settings.tolerance_s,
        max_body=settings.max_body,
        secrets=signing_keys(args.secret),
        sources=sources,
        injection=Injection(
            fail_first=args.fail_first, respond_status=args.respond, delay_s=args.delay
        ),
    )


def attempt_json(a: Attempt) -> dict[str, Any]:
    return {
        "id": a.id,
        "received_at": format_ms(a.received_at_ms),
        "webhook_id": a.webhook_id,
        "attempt": a.attempt_no,
        "topic": a.topic,
        "pass_id": a.pass_id,
        "verdict": a.verdict,
        "reason": a.reason,
        "detail": a.detail,
        "endpoint_id": a.endpoint_id,
        "status": a.status,
        "note": a.note,
        "remote_addr": a.remote_addr,
        "forwarded_for": a.forwarded_for,
        "body_size": a.body_size,
        "processing_ms": round(a.processing_ms, 3),
    }


def attempt_line(a: Attempt) -> str:
    reason = a.reason if not a.detail else f"{a.reason} ({a.detail})"
    if a.note:
        reason += f" [{a.note}]"
    parts = [
        format_ms(a.received_at_ms, time_only=True),
        printable(a.webhook_id or "-", 40).ljust(30),
        printable(a.topic or "-", 24).ljust(18),
        f"#{a.attempt_no}",
        ("verified" if a.verified else "REJECTED").ljust(8),
        str(a.status),
        printable(reason, 120),
    ]
    return "  ".join(parts)


class Printer:
    def __init__(self, out: TextIO, as_json: bool) -> None:
        self.out = out
        self.as_json = as_json

    def __call__(self, batch: Sequence[Attempt]) -> None:
        for a in batch:
            line = json.dumps(attempt_json(a)) if self.as_json else attempt_line(a)
            self.out.write(line + "\n")
        self.out.flush()


def cmd_listen(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    options = build_receiver_options(args, settings)
    try:
        routes = [parse_route(text) for text in args.forward_to]
    except ForwardError as exc:
        raise CommandError(str(exc)) from None
    if args.ack == "target" and not routes:
        raise CommandError("--ack target needs a --forward-to URL to take the status from.")
    return asyncio.run(
        _listen(settings, options, args.json, routes, args.ack == "target", tuple(args.secret))
    )


def secret_lookup(registry: EndpointRegistry, explicit: Sequence[str]) -> SecretLookup:
    """The secret to re-sign an attempt with: its endpoint's, or the only --secret given."""

    def lookup(attempt: Attempt) -> str | None:
        if attempt.endpoint_id:
            endpoint = registry.get(attempt.endpoint_id)
            return endpoint.secret.reveal() if endpoint else None
        return explicit[0] if len(explicit) == 1 else None

    return lookup


class ForwardPrinter:
    def __init__(self, out: TextIO, as_json: bool) -> None:
        self.out = out
        self.as_json = as_json

    def __call__(self, row: ForwardRow, result: ForwardResult) -> None:
        if self.as_json:
            line = json.dumps(
                {
                    "forward": {
                        "webhook_id": row.webhook_id,
                        "attempt_id": row.attempt_id,
                        "target": row.target,
                        "try": row.tries + 1,
                        "status": result.status,
                        "latency_ms": round(result.latency_ms, 1),
                        "error": result.error,
                        "note": result.note,
                    }
                }
            )
        else:
            outcome = f"{result.status}" if result.status is not None else f"failed: {result.error}"
            later = "" if result.ok else "  (will retry)"
            line = (
                f"  -> {printable(row.webhook_id or '-', 40)} forwarded to {printable(row.target, 80)}: "
                f"{outcome} in {result.latency_ms:.0f} ms{later}"
            )
        self.out.write(line + "\n")
        self.out.flush()


async def _listen(
    settings: Settings,
    options: ReceiverOptions,
    as_json: bool,
    routes: Sequence[Route] = (),
    ack_target: bool = False,
    explicit_secrets: Sequence[str] = (),
) -> int:
    info = sys.stderr if as_json else sys.stdout
    # Ctrl-C / SIGTERM are caught from the very start: one that arrives while opening the store or
    # binding still ends in a clean stop (port released, store closed, exit 0), not a traceback.
    stop = asyncio.Event()
    signals = _catch_signals(stop)
    try:
        registry = EndpointRegistry(settings.endpoints_path)
        store = await Store.open(settings.database_path)
        try:
            receiver = Receiver(store, options, registry=registry)
            store.subscribe(Printer(sys.stdout, as_json))
            forwarder = None
            if routes or await store.pending_forward_count():
                forwarder = Forwarder(
                    store,
                    routes,
                    secret_for=secret_lookup(registry, explicit_secrets),
                    on_result=ForwardPrinter(sys.stdout, as_json),
                )
                receiver.forwarder = forwarder
                receiver.ack_target = ack_target
                await forwarder.start()
            await receiver.start()
            try:
                public_url = settings.public_url or await discover_ngrok(
                    receiver.bound[1] if receiver.bound else None
                )
                _announce(info, receiver, settings, registry, public_url, routes, ack_target)
                pending = await store.pending_forward_count()
                if pending:
                    info.write(
                        f"{pending} forward(s) waiting from before; resuming them in order.\n"
                    )
                await stop.wait()
            finally:
                await receiver.stop()
                if forwarder is not None:
                    await forwarder.stop()
        finally:
            await store.close()
    finally:
        _release_signals(signals)
    print("Stopped; every acknowledged delivery is in the history.", file=info)
    return 0


def _announce(
    out: TextIO,
    receiver: Receiver,
    settings: Settings,
    registry: EndpointRegistry,
    public_url: str | None = None,
    routes: Sequence[Route] = (),
    ack_target: bool = False,
) -> None:
    out.write(f"Listening on {receiver.url}\n")
    if public_url:
        found = "" if settings.public_url else "  (found from the ngrok agent)"
        out.write(f"Public URL:  {public_url.rstrip('/')}{settings.receiver_path}{found}\n")
        if not settings.public_url:
            out.write(
                "  register it: walletpass-tui endpoints create --from-listener "
                f"--public-url {public_url} --topic pass.activated --topic pass.deactivated\n"
            )
    for route in routes:
        topic = route.topic or "every topic"
        mode = "answering with its status" if ack_target else "after storing"
        out.write(f"Forwarding {topic} to {route.target} ({mode})\n")
    secrets = [f"{key.label} (--secret)" for key in receiver.options.secrets]
    for endpoint in registry.load():
        secrets.append(f"{endpoint.id} {endpoint.secret.masked}")
    if secrets:
        out.write("Verifying with: " + ", ".join(secrets) + "\n")
    else:
        out.write(
            "No signing secret yet: every delivery will be rejected. Pass --secret whsec_... or "
            "'walletpass-tui endpoints import'.\n"
        )
    injection = receiver.options.injection
    if injection.active:
        out.write(f"Injecting failures: {injection}\n")
    out.write(f"History: {settings.database_path}   (Ctrl-C to stop)\n")
    out.flush()


def _catch_signals(stop: asyncio.Event) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()
    caught = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            caught.append(sig)
    return caught


def _release_signals(caught: list[signal.Signals]) -> None:
    loop = asyncio.get_running_loop()
    for sig in caught:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(sig)
