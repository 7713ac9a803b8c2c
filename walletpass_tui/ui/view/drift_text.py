"""How one drift finding's change is said (the detail pane, the Schema screen), plain text."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from walletpass_tui.schemas.records import DriftRecord

SEVERITY_RANK = {"info": 0, "warning": 1, "breaking": 2}


def change_text(record: DriftRecord) -> str:
    """``added (string)``, ``missing (was string)``, ``string -> integer``; the types come from
    the schema file (escape before showing)."""
    if record.note is not None:  # what the first samples disagreed on
        return record.note
    if record.kind == "field_added":
        return f"added ({record.now})"
    if record.kind == "field_missing":
        return f"missing (was {record.was})"
    if record.kind == "new_value":
        return f"new value {record.now} (was one of {record.was})"
    return f"{record.was} -> {record.now}"
