"""Kept for older imports: every name here now lives in :mod:`walletpass_tui.text`."""

from walletpass_tui.text import format_duration, format_gap, format_ms, format_size, printable

__all__ = ["format_duration", "format_gap", "format_ms", "format_size", "printable"]
