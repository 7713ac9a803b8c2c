"""No subcommand: the dashboard, with its receiver in-process on the same event loop.

Everything async is opened inside one ``asyncio.run`` through the delivery runtime: the store
first (a locked or damaged database is reported before the screen changes), the registry, then the
receiver's port (a port in use is one line and exit 1, never a dashboard that is not listening).
The app subscribes, paints its first frame and only then starts accepting deliveries; when it
ends the runtime closes in reverse order, the store last, after every acknowledged delivery is on
disk. With ``--relay`` the runtime also follows a relay channel (its state in the header; a relay
that refuses the token stops following with a notification, the local receiver keeps going).

The first frame comes before the HTTP stack is imported: the port is a plain socket until the
receiver (its HTTP server, forwarding) is built on it after that frame, and the service's client
(httpx) is built the first time a pane calls the service. The log's first page is read by the
store's thread while the UI is imported, so that frame already shows the newest deliveries.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.cli.receiver_setup import delivery_setup, receiver_options, relay_link
from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable
from walletpass_tui.webhooks.runtime import DeliveryRuntime, DeliverySetup, Feed

if TYPE_CHECKING:
    from walletpass_tui.api.client import WalletPassClient
    from walletpass_tui.api.models import TemplateList, WebhookEndpoint
    from walletpass_tui.webhooks.models import LogRow


class LazyServiceClient:
    """The dashboard's ``ServiceClient``: a ``WalletPassClient`` built on the first call."""

    def __init__(
        self, settings: Settings, on_endpoint_created: Callable[[WebhookEndpoint], None]
    ) -> None:
        self.settings = settings
        self._on_created = on_endpoint_created
        self._client: WalletPassClient | None = None

    def client(self) -> WalletPassClient:
        if self._client is None:
            from walletpass_tui.api.client import WalletPassClient

            self._client = WalletPassClient(self.settings, on_endpoint_created=self._on_created)
        return self._client

    async def list_pass_templates(self) -> TemplateList:
        return await self.client().list_pass_templates()

    async def create_webhook_endpoint(
        self, url: str, topics: Sequence[str], enabled: bool = True
    ) -> WebhookEndpoint:
        return await self.client().create_webhook_endpoint(url, topics, enabled)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


async def run_dashboard_async(
    settings: Settings,
    setup: DeliverySetup | None = None,
    feeds: Sequence[Feed] = (),
    theme: str | None = None,
) -> int:
    setup = setup or DeliverySetup(options=receiver_options(settings))
    async with DeliveryRuntime(settings, setup, feeds=feeds) as runtime:
        first_page = read_first_page(runtime)
        await asyncio.sleep(0)  # the read goes to the store's thread...
        from walletpass_tui.ui.app import build_app  # ...and runs while the UI is imported

        client = LazyServiceClient(settings, runtime.registry.record_created)
        try:
            app = build_app(runtime, client, first_page=first_page, theme=theme)
            await app.run_async()
        finally:
            await client.aclose()
    return app.return_code or 0


def read_first_page(runtime: DeliveryRuntime) -> asyncio.Future[list[LogRow]] | None:
    """The log's first page, read on the store's reader thread while the UI is imported and its
    screen composed, so the first frame already shows the newest deliveries. Not with a relay
    feed: deliveries it stores before the log subscribes would fall between page and feed."""
    if runtime.feeds:
        return None
    from walletpass_tui.ui.view.log_window import PAGE

    return asyncio.ensure_future(runtime.store.log_page(limit=PAGE))


def theme_arg(name: str | None) -> str | None:
    """``--theme NAME``: one of Textual's themes; UsageError listing them otherwise."""
    if name is None:
        return None
    from textual.theme import BUILTIN_THEMES  # loaded by the dashboard anyway

    if name not in BUILTIN_THEMES:
        raise UsageError(
            f"argument --theme: unknown theme {printable(name, 40)!r}; choose one of "
            + ", ".join(sorted(BUILTIN_THEMES))
            + "."
        )
    return name


def run_dashboard(args: argparse.Namespace) -> int:
    theme = theme_arg(getattr(args, "theme", None))
    settings = settings_from_args(args)
    setup = delivery_setup(args, settings)
    link = relay_link(args, settings)
    # No cyclic garbage collection while the UI is imported and the first screen built (tens of
    # thousands of long-lived objects, walked again by each collection): the app turns it back
    # on after its first frame.
    gc.disable()
    try:
        return asyncio.run(
            run_dashboard_async(settings, setup, (link,) if link else (), theme=theme)
        )
    finally:
        gc.enable()
