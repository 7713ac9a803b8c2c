"""The relay database the settings name (--database, the environment, the config file, or SQLite
in the data directory), opened for one command; ``relay migrate``."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from walletpass_tui.cli.common import settings_from_args


def relay_database(args: argparse.Namespace, settings: Any) -> str | None:
    """--database, else WALLETPASS_RELAY_DATABASE, else [relay] database, else None (SQLite in
    the data directory)."""
    return getattr(args, "relay_database", None) or settings.relay_database


def run_on_storage(args: argparse.Namespace, action: Any) -> Any:
    """Open the relay database the settings name, run ``action(storage)``, close it."""
    from walletpass_tui.relay.server.storage import open_storage
    from walletpass_tui.relay.server.storage.target import database_target

    settings = settings_from_args(args)
    target = database_target(relay_database(args, settings), settings.home)

    async def run() -> Any:
        storage = await open_storage(target, serving=False)
        try:
            return await action(storage)
        finally:
            await storage.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop running: the usual case, start one
        return asyncio.run(run())
    # Called from code that runs an event loop already (a test, an embedding): its own thread.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def cmd_migrate(args: argparse.Namespace) -> int:
    from walletpass_tui.relay.server.storage.target import POSTGRESQL

    async def describe(storage: Any) -> str:
        return storage.target.display if storage.target.kind == POSTGRESQL else ""

    shown = run_on_storage(args, describe)
    what = shown or "the SQLite file"
    print(f"The relay database is up to date ({what}).")
    return 0
