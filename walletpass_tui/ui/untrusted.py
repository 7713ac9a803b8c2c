"""Kept for older imports: how untrusted text is shown is decided in :mod:`walletpass_tui.text`.

Nothing from a sender or the service is ever parsed as markup: the dashboard puts it into
``rich.text.Text`` or ``textual.content.Content`` objects built from these plain strings.
"""

from walletpass_tui.text import (
    ELLIPSIS,
    PRETTY_LIMIT,
    RAW_LIMIT,
    body_text,
    clip,
    compact_value,
    one_line,
    parse_json_body,
    pretty_json,
    visible,
)

__all__ = [
    "ELLIPSIS",
    "PRETTY_LIMIT",
    "RAW_LIMIT",
    "body_text",
    "clip",
    "compact_value",
    "one_line",
    "parse_json_body",
    "pretty_json",
    "visible",
]
