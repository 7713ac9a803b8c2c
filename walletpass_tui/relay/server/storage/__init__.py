"""The relay's database, behind one protocol (``base.RelayStorage``) with two backends.

* ``target``: which database a setting names (a ``postgresql://`` URL, else a SQLite file);
* ``sqlite`` and ``sqlite_backend``: one relay process on one file (the default);
* ``postgres`` (with ``postgres_schema``): any number of relay processes on one PostgreSQL
  database, loaded only when one is named, so the SQLite path never imports its driver.
"""

from __future__ import annotations

from walletpass_tui.relay.server.storage.base import RelayStorage
from walletpass_tui.relay.server.storage.target import POSTGRESQL, DatabaseTarget


async def open_storage(
    target: DatabaseTarget, *, serving: bool = True, wait_s: float = 0.0
) -> RelayStorage:
    """Open the database ``target`` names, creating or upgrading its schema. ``serving``: for
    ``relay serve`` (a pool sized for it); else for one command. ``wait_s``: how long to keep
    trying a PostgreSQL server that does not answer yet."""
    if target.kind == POSTGRESQL:
        from walletpass_tui.relay.server.storage.postgres import PostgresStorage

        return await PostgresStorage.open(target, serving=serving, wait_s=wait_s)
    from walletpass_tui.relay.server.storage.sqlite_backend import SqliteStorage

    return SqliteStorage(target)
