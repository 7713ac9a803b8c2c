"""The relay's database, behind one protocol (``base.RelayStorage``) with two backends.

* ``base``: the protocol and the notices a serving storage gives the fan-out; ``records``: what
  every backend writes (a new delivery, a rejection) and answers (a stored delivery); ``errors``;
* ``target``: which database a setting names (a ``postgresql://`` URL, else a SQLite file);
* ``sqlite/``: one relay process on one file (the default);
* ``postgres/``: any number of relay processes on one PostgreSQL database, loaded only when one
  is named, so the SQLite path never imports its driver.

A third backend is a folder beside these two that implements ``base.RelayStorage``.
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
        from walletpass_tui.relay.server.storage.postgres.storage import PostgresStorage

        return await PostgresStorage.open(target, serving=serving, wait_s=wait_s)
    from walletpass_tui.relay.server.storage.sqlite.storage import SqliteStorage

    return await SqliteStorage.open(target)
