"""A history written by an older walletpass-tui is upgraded before a command opens it, and says so.

Most upgrades take no time; one that counts every stored attempt by minute (the table the
dashboard's header, its Stats screen and ``events stats`` read, see ``store/activity.py``) reads
the whole history once. The command says so in one line on stderr, then shows how far it got
while stderr is a terminal (``cli/progress.py``), and goes on with the upgraded history.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import time
from pathlib import Path

from walletpass_tui.cli.progress import Progress
from walletpass_tui.text import printable

__all__ = ["upgrade_history"]


def _version(path: Path) -> int | None:
    """The history's schema version; None when it cannot be read (the command says why)."""
    from walletpass_tui.webhooks.store.queries import connect_read_only, schema_version
    from walletpass_tui.webhooks.store.read_only import nobody_writes

    try:
        # A look writes nothing: with no writer, the file alone is read (a full or read-only disk).
        with contextlib.closing(connect_read_only(path, immutable=nobody_writes(path))) as db:
            return schema_version(db)
    except sqlite3.Error:  # damaged, locked, unreadable: the command opening it reports it
        return None


def upgrade_history(path: Path) -> None:
    """Upgrade the history at ``path`` if an older walletpass-tui wrote it (nothing to do for a
    missing, new or current one). A failure is left to the command, which opens it next and
    reports it in its own words."""
    from walletpass_tui.webhooks.store.tables import SCHEMA_VERSION

    if not path.exists():
        return
    version = _version(path)
    if version is None or version == 0 or version >= SCHEMA_VERSION:
        return
    asyncio.run(_upgrade(path))


async def _upgrade(path: Path) -> None:
    from walletpass_tui.webhooks.models import StoreError
    from walletpass_tui.webhooks.store import Store

    started = time.monotonic()
    progress = Progress("upgrading the history: counted")
    said = False

    def counted(done: int, total: int) -> None:  # on the store's writer thread
        nonlocal said
        if not said and total:
            said = True
            print(
                f"Upgrading the history {printable(str(path), 200)} for this version: counting "
                f"its {total:,} attempts by minute, once.",
                file=sys.stderr,
                flush=True,
            )
        progress.total = total
        progress.update(done)

    with progress, contextlib.suppress(StoreError):  # reported by the command that opens it
        store = await Store.open(path, upgrading=counted)
        await store.close()
    if said:
        print(f"Upgraded in {time.monotonic() - started:.1f} s.", file=sys.stderr, flush=True)
