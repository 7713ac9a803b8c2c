"""How an endpoint's fields read in the dashboard (pure text, no Textual)."""

from __future__ import annotations


def topics_text(topics: tuple[str, ...]) -> str:
    """``activated, deactivated``: the ``pass.`` prefix every topic shares left out."""
    return ", ".join(t.removeprefix("pass.") for t in topics) or "-"


def created_text(created_at: str | None) -> str:
    """``2026-11-23 14:02`` from the service's ISO 8601 UTC timestamp."""
    if not created_at:
        return "-"
    return created_at.replace("T", " ").removesuffix("Z")[:16]
