"""The Wallet Pass Service as a client sees it: the client, its models and errors, and the rules for
URLs (``api.urls``) and topic names (``api.topics``).

The client (and httpx with it) is imported only when asked for, so a command that needs just the
URL or topic rules starts without loading an HTTP stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.topics import TOPICS

if TYPE_CHECKING:
    from walletpass_tui.api.client import WalletPassClient
    from walletpass_tui.api.models import TemplateList, WebhookEndpoint

__all__ = ["TOPICS", "ApiError", "TemplateList", "WalletPassClient", "WebhookEndpoint"]


def __getattr__(name: str) -> Any:
    if name == "WalletPassClient":
        from walletpass_tui.api.client import WalletPassClient

        return WalletPassClient
    if name in ("TemplateList", "WebhookEndpoint"):
        from walletpass_tui.api import models

        return getattr(models, name)
    raise AttributeError(name)
