"""No subcommand: the dashboard, with its receiver in-process on the same event loop.

Everything async is opened inside one ``asyncio.run``: the store first (so a locked or damaged
database is reported before the screen changes), then the app runs, starting the receiver when it
mounts and stopping it (port released) when it ends; the store is closed last, after every
acknowledged delivery is on disk (acknowledgements wait for commits).
"""

from __future__ import annotations

import argparse
import asyncio

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.cli.receiver_flags import (
    DeliverySetup,
    attach_forwarder,
    delivery_setup,
    receiver_options,
)
from walletpass_tui.config import Settings
from walletpass_tui.webhooks.endpoints import EndpointRegistry
from walletpass_tui.webhooks.forward import secret_lookup
from walletpass_tui.webhooks.receiver import Receiver
from walletpass_tui.webhooks.store import Store


async def run_dashboard_async(settings: Settings, setup: DeliverySetup | None = None) -> int:
    from walletpass_tui.ui.app import build_app

    setup = setup or DeliverySetup(receiver_options(settings))
    registry = EndpointRegistry(settings.endpoints_path)
    registry.load()  # a damaged registry is reported now, as one line, not inside the UI
    store = await Store.open(settings.database_path)
    try:
        client = WalletPassClient(settings, on_endpoint_created=registry.record_created)
        try:
            receiver = Receiver(store, setup.options, registry=registry)
            forwarder = await attach_forwarder(receiver, store, registry, setup)
            app = build_app(
                settings,
                client,
                store,
                registry,
                receiver,
                forwarder=forwarder,
                secret_for=secret_lookup(registry, setup.explicit_secrets),
            )
            await app.run_async()
            await receiver.stop()  # already stopped by the app; harmless, and certain
            if forwarder is not None:
                await forwarder.stop()
        finally:
            await client.aclose()
    finally:
        await store.close()
    return app.return_code or 0


def run_dashboard(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    return asyncio.run(run_dashboard_async(settings, delivery_setup(args, settings)))
