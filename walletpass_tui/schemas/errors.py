"""The one error the schema package raises to its callers: a sentence that says what to do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from walletpass_tui.errors import WalletpassError


class SchemaError(WalletpassError):
    """The schemas cannot be read or exported; the message says why and what to do."""

    @classmethod
    def of(cls, exc: sqlite3.Error, path: Path) -> SchemaError:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            return cls(
                f"The schema file {path} is locked by another program; try again in a moment."
            )
        if any(w in text for w in ("malformed", "not a database", "corrupt")):
            return cls(
                f"The schema file {path} is damaged; it is learned again from the history when "
                "the receiver next starts (or rebuild it now)."
            )
        return cls(f"The schema file {path} cannot be read ({exc}).")
