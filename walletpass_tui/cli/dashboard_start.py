"""What the dashboard needs to start, with its own receiver (``dashboard_cmd``) or attached to one
running in another process (``attach_cmd``): its ``--theme``, its service client, its first page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.api.client import WalletPassClient
    from walletpass_tui.api.models import TemplateList, WebhookEndpoint
    from walletpass_tui.runtime.protocol import Runtime
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


def read_first_page(
    runtime: Runtime,
) -> asyncio.Future[list[LogRow]] | None:
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
