"""The relay's PostgreSQL connections, and how a failure is read.

* **Opening**: a pool (retrying for a while when the server does not answer yet), then the
  schema brought up to date.
* **Failing fast.** A failure that means the database is away (a lost connection, a shutdown,
  no resources) makes reads and writes fail at once for a moment (``FAIL_FAST_S``) instead of
  each waiting for a connect timeout: ingress answers 503 with Retry-After and the service
  retries. The listener is asked to check its connection at once.
* **Nothing secret in a message**: errors name the database by ``DatabaseTarget.display``, and
  every secret of the URL is scrubbed from the driver's words.
* **One line per change.** While the database is away the listener says so once, and once when
  it is back (``listener.py``). The driver's pool says it too, with a traceback, on every try to
  reconnect (every few seconds); its words go to the debug log (``--log-file``) only, in one line
  each (``QuietPool``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from walletpass_tui.config.database_url import database_url_secrets
from walletpass_tui.relay.server.channels import ChannelError
from walletpass_tui.relay.server.storage.errors import DatabaseUnavailable, RelayStoreError
from walletpass_tui.relay.server.storage.postgres.schema import (
    NOTIFY_CHANNEL,
    NOTIFY_CHANNELS,
    SCHEMA_VERSION,
    NewerSchema,
    migrate,
)
from walletpass_tui.relay.server.storage.target import DatabaseTarget

log = logging.getLogger(__name__)

T = TypeVar("T")

CONNECT_TIMEOUT_S = 5.0
COMMAND_TIMEOUT_S = 10.0  # any one statement; a slower database is treated as unavailable
ACQUIRE_TIMEOUT_S = 5.0
POOL_SIZE = 10  # serving: the writer, reads of pages and tokens, channel refreshes
FAIL_FAST_S = 1.0
APPLICATION_NAME = "walletpass-relay"

UNAVAILABLE = "the relay's database cannot be reached now; retry shortly"

# SQLSTATE classes that mean the server, not the request: connection exceptions, insufficient
# resources, operator intervention (shutdown, cancel), system errors.
_UNAVAILABLE_CLASSES = ("08", "53", "57", "58")


class QuietPool(logging.Filter):
    """asyncpg's pool warnings ("Failed to restore the pool connection floor; retrying", with a
    traceback, on every try while the database is away) made debug lines of one line: the
    listener says what a person needs to know, once per change."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        words = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            words += f" ({type(record.exc_info[1]).__name__})"
        record.msg, record.args = words, None
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


_QUIET = QuietPool()


def quiet_pool_logs() -> None:
    """Install ``QuietPool`` on asyncpg's pool logger (once)."""
    logger = logging.getLogger("asyncpg.pool")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


class PoolBusy(RelayStoreError):
    """Every pooled connection stayed in use for ``ACQUIRE_TIMEOUT_S``: this process is busy,
    the database is not (for that) unavailable."""


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database is away (not that one request was wrong)."""
    if isinstance(exc, asyncpg.PostgresError):
        state = str(getattr(exc, "sqlstate", "") or "")
        return state[:2] in _UNAVAILABLE_CLASSES
    return isinstance(exc, (OSError, TimeoutError, asyncpg.InterfaceError, ConnectionError))


def reason(exc: BaseException, target: DatabaseTarget) -> str:
    """Why, in a few words, with nothing of the URL's secret in it."""
    text = str(exc).strip() or type(exc).__name__
    url = target.url or ""
    if url:
        text = text.replace(url, target.display)
    for secret in database_url_secrets(url):
        text = text.replace(secret, "…")
    return text.splitlines()[0][:200]


class Database:
    """The pool, and the fail-fast window every part of the storage shares."""

    def __init__(self, target: DatabaseTarget, pool: Any) -> None:
        self.target = target
        self.pool = pool
        self.down_until = 0.0
        self.check_now = asyncio.Event()  # the listener checks its connection when set

    @classmethod
    async def open(
        cls, target: DatabaseTarget, *, serving: bool = True, wait_s: float = 0.0
    ) -> Database:
        """Connect (retrying for ``wait_s`` while the server does not answer) and migrate."""
        quiet_pool_logs()
        deadline = time.monotonic() + wait_s
        while True:
            try:
                pool = await asyncpg.create_pool(
                    target.url,
                    min_size=1,
                    max_size=POOL_SIZE if serving else 2,
                    timeout=CONNECT_TIMEOUT_S,
                    command_timeout=COMMAND_TIMEOUT_S,
                    server_settings={"application_name": APPLICATION_NAME},
                )
                break
            except Exception as exc:
                if not is_unavailable(exc) or time.monotonic() >= deadline:
                    raise RelayStoreError(
                        f"Cannot open the relay database {target.display} "
                        f"({reason(exc, target)}); check that PostgreSQL runs and that the "
                        "URL, user and password (WALLETPASS_RELAY_DATABASE or ~/.pgpass) are "
                        "right."
                    ) from None
                await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        try:
            async with pool.acquire(timeout=ACQUIRE_TIMEOUT_S) as conn:
                await migrate(conn)
        except NewerSchema as exc:
            await close_pool(pool)
            raise RelayStoreError(
                f"The relay database {target.display} was written by a newer walletpass-tui "
                f"(schema {exc.version}, this one knows {SCHEMA_VERSION}); upgrade it."
            ) from None
        except Exception as exc:
            await close_pool(pool)
            raise RelayStoreError(
                f"Cannot prepare the relay database {target.display} ({reason(exc, target)})."
            ) from None
        return cls(target, pool)

    @property
    def failing_fast(self) -> bool:
        return time.monotonic() < self.down_until

    def fail_fast(self) -> None:
        self.down_until = time.monotonic() + FAIL_FAST_S

    def failure(self, exc: BaseException) -> RelayStoreError:
        """The error to raise for ``exc``; the database away starts the fail-fast window."""
        if isinstance(exc, RelayStoreError):
            return exc
        if is_unavailable(exc):
            self.fail_fast()
            self.check_now.set()
            return DatabaseUnavailable(UNAVAILABLE)
        return RelayStoreError(f"The relay database failed ({self.reason(exc)}).")

    def reason(self, exc: BaseException) -> str:
        return reason(exc, self.target)

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[Any]:
        try:
            conn = await self.pool.acquire(timeout=ACQUIRE_TIMEOUT_S)
        except TimeoutError:
            raise PoolBusy(
                "The relay is busy: no database connection was free; retry shortly."
            ) from None
        try:
            yield conn
        finally:
            await self.pool.release(conn)

    async def run(self, fn: Callable[[Any], Awaitable[T]], *, notify: bool = False) -> T:
        """``fn(conn)`` on a pooled connection; with ``notify``, in a transaction that tells
        every relay process its channels changed."""
        if self.failing_fast:
            raise DatabaseUnavailable(UNAVAILABLE)
        try:
            async with self.acquire() as conn:
                if not notify:
                    return await fn(conn)
                async with conn.transaction():
                    result = await fn(conn)
                    await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, NOTIFY_CHANNELS)
                return result
        except ChannelError:
            raise
        except Exception as exc:
            raise self.failure(exc) from None

    async def close(self) -> None:
        await close_pool(self.pool)


async def close_pool(pool: Any) -> None:
    try:
        await asyncio.wait_for(pool.close(), 5)
    except Exception as exc:
        log.debug("relay: the pool did not close (%s): terminated", type(exc).__name__)
        pool.terminate()
