"""``relay serve``: the relay server, until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any

from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.cli.relay_cmd.database import relay_database


def cmd_serve(args: argparse.Namespace) -> int:
    from walletpass_tui.relay.server.channels import public_base
    from walletpass_tui.relay.server.ingress import IngressOptions
    from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
    from walletpass_tui.webhooks.sources import SourcePolicy

    settings = settings_from_args(args)
    sources = SourcePolicy.build(args.allow_source, args.trust_proxy)
    public_url = public_base(args.relay_public_url) if args.relay_public_url else None
    options = RelayOptions(
        home=settings.home,
        database=relay_database(args, settings),
        host=args.relay_host,
        port=args.relay_port,
        public_url=public_url,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        retention_days=args.retention_days,
        heartbeat_s=args.heartbeat,
        max_subscribers=args.max_subscribers,
        max_channel_subscribers=args.max_channel_subscribers,
        request_lines=None if args.quiet else sys.stdout,
        ingress=IngressOptions(
            max_body=settings.max_body, tolerance_s=settings.tolerance_s, sources=sources
        ),
    )
    from walletpass_tui.cli.listen_cmd import run_loop  # uvloop where installed, as listen

    run_loop(_serve(RelayServer(options)))
    return 0


async def _serve(server: Any) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            # no signal handlers here: Ctrl-C still stops it
            loop.add_signal_handler(sig, stop.set)
    await server.start()
    print(f"Relay listening on {server.url} (data: {server.storage.target.display})", flush=True)
    print(f"Public URL: {server.public_url()}", flush=True)
    if not server.options.public_url:
        print("  (no --public-url: channel URLs use the address each request came to)", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
        print("Relay stopped.", flush=True)
    return 0
