"""``demo``: the whole product on the built-in simulated service, no account needed.

The demo's behaviour (simulator, failures on purpose, forged posts, the lock on its data) is in
:mod:`walletpass_tui.runtime.demo`; this module parses the flags and puts the dashboard on top.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import CommandError, bounded_int, settings_from_args
from walletpass_tui.cli.signals import exit_app_on_signals
from walletpass_tui.config import Settings
from walletpass_tui.runtime.demo import DEMO_TIME_SCALE, RelayStarter, running_demo
from walletpass_tui.runtime.local import Feed

if TYPE_CHECKING:
    from walletpass_tui.tunnel.provider import Provider
    from walletpass_tui.ui.app import WalletPassApp


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        parents=parents,
        help="the dashboard on a built-in simulated service (no account needed)",
        description="Start the simulated Wallet Pass Service and the receiver in this process, "
        "register an endpoint through the real API client, and open the dashboard while events "
        "flow. Some deliveries fail on purpose so the service's retries show (its schedule runs "
        f"{1 / DEMO_TIME_SCALE:g}x faster). The demo keeps its data in <home>/demo, emptied at each "
        "start, never mixed with real history; one demo at a time runs on a home.",
        epilog="examples:\n"
        "  walletpass-tui demo --port 8787\n"
        "  walletpass-tui demo --relay     # the service posts to a relay, the dashboard follows it",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--port",
        type=bounded_int(0, 65535),
        default=0,
        help="receiver port, 1-65535 (default: 0, any free port)",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=1.5,
        metavar="SECONDS",
        help="average time between events (default 1.5)",
    )
    p.add_argument(
        "--relay",
        action="store_true",
        help="run a relay too (in this process, on 127.0.0.1): the endpoint is the relay's "
        "ingress URL and every delivery reaches the dashboard through the relay",
    )
    p.add_argument(
        "--tunnel",
        choices=("cloudflared", "ngrok", "none"),
        default=argparse.SUPPRESS,
        help="give the demo's receiver a public HTTPS URL too, as listen --tunnel does (none: "
        "not even when [tunnel] provider is set)",
    )
    p.set_defaults(handler=cmd_demo)


@contextlib.asynccontextmanager
async def _relay_for_demo(home: Path) -> AsyncIterator[tuple[str, Feed]]:
    from walletpass_tui.relay.local import local_relay

    async with local_relay(home) as relay:
        yield relay.ingress_url, relay.link


@contextlib.asynccontextmanager
async def demo_session(
    settings: Settings,
    port: int,
    interval: float,
    relay: bool = False,
    tunnel: Provider | None = None,
) -> AsyncIterator[WalletPassApp]:
    """The demo's dashboard over a running demo. ``run_demo`` runs it in the terminal; tests drive
    the same object with ``App.run_test()``."""
    from walletpass_tui.ui.app import build_app

    starter: RelayStarter | None = _relay_for_demo if relay else None
    async with running_demo(settings, port, interval, starter, tunnel) as demo:
        # `walletpass-tui attach --home <home>/demo` opens more dashboards on it.
        await demo.runtime.start_instance("demo")
        yield build_app(demo.runtime, demo.client, mode="demo")


async def run_demo(
    settings: Settings,
    port: int,
    interval: float,
    relay: bool = False,
    tunnel: Provider | None = None,
) -> int:
    async with demo_session(settings, port, interval, relay, tunnel) as app:
        with exit_app_on_signals(app.exit):  # the terminal closed: the tunnel is stopped too
            await app.run_async()
    return app.return_code or 0


def cmd_demo(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise CommandError("--interval takes a positive number of seconds.")
    if not 0 <= args.port <= 65535:
        raise CommandError("--port takes a number from 0 to 65535.")
    from walletpass_tui.tunnel.choice import tunnel_provider

    settings = settings_from_args(args)
    tunnel = tunnel_provider(settings)
    return asyncio.run(run_demo(settings, args.port, args.interval, args.relay, tunnel))
