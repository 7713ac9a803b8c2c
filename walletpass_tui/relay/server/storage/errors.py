"""What goes wrong with a relay database, for every backend: the error, and the outage."""

from __future__ import annotations

from walletpass_tui.errors import WalletpassError

RETRY_AFTER_S = 5  # what a post or a subscriber is told to wait while the database is away


class RelayStoreError(WalletpassError):
    """The relay database cannot be used; the message says what to do."""


class DatabaseUnavailable(RelayStoreError):
    """The database cannot be reached now; the relay answers 503 with Retry-After until it can."""
