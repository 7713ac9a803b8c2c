"""walletpass-tui: receive, verify, inspect and replay Wallet Pass Service webhooks locally."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("walletpass-tui")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+local"
