"""Hearing the other relay processes: one connection per process that LISTENs for their notices.

Every commit of deliveries sends a notice (``pg_notify``, delivered with the COMMIT, in commit
order), and so does every change to channels and tokens; this connection hears them all, this
process's own included. It is pinged every ``PING_S`` (and at once when a read or write failed);
when it is lost the process says the database is unreachable, reconnects with backoff, LISTENs
again and says it is back, so that every stream reads the database afresh: nothing notified
while it could not listen is missed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import asyncpg

from walletpass_tui.logs import suppressed
from walletpass_tui.relay.server.storage.base import Committed
from walletpass_tui.relay.server.storage.postgres.pool import (
    COMMAND_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    Database,
)
from walletpass_tui.relay.server.storage.postgres.schema import (
    NOTIFY_CHANNEL,
    NOTIFY_CHANNELS,
    NOTIFY_DELIVERIES,
)
from walletpass_tui.text import parse_ascii_int

log = logging.getLogger(__name__)

PING_S = 2.0  # how often the listening connection is checked
BACKOFF_MAX_S = 2.0
LISTENER_NAME = "walletpass-relay-listen"  # this connection, told apart in pg_stat_activity


class Listener:
    """Runs until cancelled. ``on_deliveries`` and ``on_channels`` hear the notices;
    ``on_database`` hears the database lost, and back (or listened to again after a lost
    connection: then what was missed must be read again)."""

    def __init__(
        self,
        db: Database,
        *,
        on_deliveries: Callable[[Committed], None],
        on_channels: Callable[[], None],
        on_database: Callable[[bool], None],
    ) -> None:
        self._db = db
        self._on_deliveries = on_deliveries
        self._on_channels = on_channels
        self._on_database = on_database
        self.reachable = True
        self.listening: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def run(self) -> None:
        """Listen, reconnecting with backoff; ``listening`` is done once the first LISTEN is in
        place."""
        db = self._db
        backoff = 0.1
        first = True
        while True:
            conn: Any = None
            try:
                conn = await asyncpg.connect(
                    db.target.url,
                    timeout=CONNECT_TIMEOUT_S,
                    command_timeout=COMMAND_TIMEOUT_S,
                    server_settings={"application_name": LISTENER_NAME},
                )
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await conn.add_listener(NOTIFY_CHANNEL, self._on_notify)
                backoff = 0.1
                db.down_until = 0.0
                self._set_reachable(True, catch_up=not first)
                first = False
                if not self.listening.done():
                    self.listening.set_result(None)
                await self._watch(conn, lost)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.reachable:
                    log.warning(
                        "relay: the database %s is unreachable (%s); retrying",
                        db.target.display,
                        db.reason(exc),
                    )
                self._set_reachable(False)
            finally:
                if conn is not None:
                    with suppressed(log, "relay: dropping the listening connection"):
                        conn.terminate()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    def _set_reachable(self, reachable: bool, *, catch_up: bool = False) -> None:
        was = self.reachable
        self.reachable = reachable
        if not reachable:
            self._db.fail_fast()
            if was:
                self._on_database(False)
        elif catch_up or not was:
            if not was:
                log.warning("relay: the database %s is reachable again", self._db.target.display)
            self._on_database(True)

    async def _watch(self, conn: Any, lost: asyncio.Event) -> None:
        """Ping the connection every ``PING_S``, or at once when asked; raise when it is lost."""
        check_now = self._db.check_now
        while True:
            check_now.clear()
            waiter = asyncio.ensure_future(check_now.wait())
            lost_waiter = asyncio.ensure_future(lost.wait())
            try:
                await asyncio.wait(
                    {waiter, lost_waiter}, timeout=PING_S, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                waiter.cancel()
                lost_waiter.cancel()
            if lost.is_set():
                raise ConnectionResetError("the database closed the connection")
            await conn.fetchval("SELECT 1", timeout=PING_S + CONNECT_TIMEOUT_S)

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        parts = payload.split()
        if parts == [NOTIFY_CHANNELS]:
            self._on_channels()
            return
        if len(parts) == 5 and parts[0] == NOTIFY_DELIVERIES:
            numbers = [parse_ascii_int(p) for p in parts[1:]]
            channel_id, first, last, used = numbers
            if channel_id is None or first is None or last is None or used is None:
                return
            if not 0 < first <= last:
                return
            self._on_deliveries(Committed(channel_id, first, last))
