"""Which columns to show for pass templates, whose fields the service does not document.

Columns come from the keys the templates actually have: id-like keys first, then name-like ones,
then the rest in the order they were first seen. Nested values are shown compactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from walletpass_tui.text import compact_value

MAX_COLUMNS = 8
SAMPLE = 200  # templates looked at to find the keys

_NAME_KEYS = ("name", "title", "displayName", "label", "description", "organizationName")


def _rank(key: str, first_seen: int) -> tuple[int, int]:
    lowered = key.lower()
    if lowered == "id":
        return (0, first_seen)
    if lowered.endswith(("id", "identifier")):
        return (1, first_seen)
    if key in _NAME_KEYS:
        return (2, _NAME_KEYS.index(key))
    if lowered.endswith("name") or lowered.endswith("title"):
        return (3, first_seen)
    return (4, first_seen)


def template_columns(templates: Sequence[Mapping[str, Any]], limit: int = MAX_COLUMNS) -> list[str]:
    """The keys to show as columns, most telling first, at most ``limit``."""
    seen: dict[str, int] = {}
    for template in templates[:SAMPLE]:
        for key in template:
            if isinstance(key, str) and key not in seen:
                seen[key] = len(seen)
    ordered = sorted(seen, key=lambda k: _rank(k, seen[k]))
    return ordered[:limit]


def template_cell(template: Mapping[str, Any], key: str, width: int = 36) -> str:
    """One cell: the value under ``key`` made compact and safe, or an empty string."""
    if key not in template:
        return ""
    return compact_value(template[key], width)
