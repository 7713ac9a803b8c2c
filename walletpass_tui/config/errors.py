"""``ConfigError``: a setting, a private file or a database URL that cannot be used."""

from __future__ import annotations

from walletpass_tui.errors import WalletpassError


class ConfigError(WalletpassError):
    """A setting is missing or invalid; the message says what to do."""
