"""No subcommand: the dashboard, with its receiver in-process on the same event loop.

Everything async is opened inside one ``asyncio.run`` through the delivery runtime: the store
first (a locked or damaged database is reported before the screen changes), the registry, then the
receiver's port (a port in use is one line and exit 1, never a dashboard that is not listening).
The app subscribes, paints its first frame and only then starts accepting deliveries; when it
ends the runtime closes in reverse order, the store last, after every acknowledged delivery is on
disk. With ``--relay`` the runtime also follows a relay channel (its state in the header; a relay
that refuses the token stops following with a notification, the local receiver keeps going).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.cli.receiver_flags import (
    DeliverySetup,
    delivery_setup,
    receiver_options,
    relay_link,
)
from walletpass_tui.config import Settings
from walletpass_tui.webhooks.runtime import DeliveryRuntime, Feed


async def run_dashboard_async(
    settings: Settings, setup: DeliverySetup | None = None, feeds: Sequence[Feed] = ()
) -> int:
    from walletpass_tui.ui.app import build_app

    setup = setup or DeliverySetup(options=receiver_options(settings))
    async with DeliveryRuntime(settings, setup, feeds=feeds) as runtime:
        client = WalletPassClient(settings, on_endpoint_created=runtime.registry.record_created)
        try:
            app = build_app(runtime, client)
            await app.run_async()
        finally:
            await client.aclose()
    return app.return_code or 0


def run_dashboard(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    setup = delivery_setup(args, settings)
    link = relay_link(args, settings)
    return asyncio.run(run_dashboard_async(settings, setup, (link,) if link else ()))
