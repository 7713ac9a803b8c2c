"""The Wallet Pass Service as a client sees it."""

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.models import TOPICS, TemplateList, WebhookEndpoint

__all__ = ["TOPICS", "ApiError", "TemplateList", "WalletPassClient", "WebhookEndpoint"]
