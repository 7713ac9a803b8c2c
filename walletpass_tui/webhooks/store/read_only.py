"""Looking at the history without writing a byte: ``events list``, ``show`` and ``export``.

A command that only looks must work when the disk is full (that is when a person needs to look,
and export, before pruning), on a read-only mount, and next to a running ``listen``:

* nothing is written, migrated, checked or indexed: the history is opened ``mode=ro``;
* SQLite's ``-wal`` and ``-shm`` are never created by a look. When the log holds nothing (no
  ``-wal``, or an empty one) and there is no ``-shm``, nobody is writing and the file itself holds
  every row: it is opened ``immutable`` (no locks, no ``-shm``). Otherwise a writer keeps them (or
  a crash left them) and ``mode=ro`` reads through them; should that fail while the log holds
  nothing, ``immutable`` is tried;
* the search index is attached the same way when it can be; rows it does not hold yet are looked
  at one by one (queries.py), and every row is when there is no index to attach;
* a history written by an older version needs a migration before it can be read: ``Outdated``
  says so, and the command opens it with ``Store`` (which migrates) instead.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import ThreadConnection
from walletpass_tui.webhooks.models import StoreError
from walletpass_tui.webhooks.store import search, tables
from walletpass_tui.webhooks.store.indexer import INDEXED_UPTO_SQL, index_path
from walletpass_tui.webhooks.store.queries import Reader
from walletpass_tui.webhooks.store.reading import History
from walletpass_tui.webhooks.store.tables import DEFAULT_BUSY_TIMEOUT_MS, SCHEMA_VERSION

log = logging.getLogger(__name__)


class Outdated(StoreError):
    """The history needs a migration (an older version wrote it): open it with ``Store``."""


def uri(path: Path, *, immutable: bool) -> str:
    """The SQLite URI that opens ``path`` read-only (``immutable``: no locks, no ``-shm``)."""
    return f"file:{quote(str(path.absolute()))}?mode=ro" + ("&immutable=1" if immutable else "")


def log_is_empty(path: Path) -> bool:
    """Whether the database at ``path`` has no write-ahead log with anything in it."""
    try:
        return os.stat(path.with_name(path.name + "-wal")).st_size == 0
    except FileNotFoundError:  # no write-ahead log: empty
        return True


def nobody_writes(path: Path) -> bool:
    """No log with anything in it and no ``-shm``: the file alone holds every row."""
    return log_is_empty(path) and not path.with_name(path.name + "-shm").exists()


def _probe(path: Path, busy_timeout_ms: int) -> str:
    """The URI that reads the history at ``path`` (checked with a connection of its own first:
    whether it needs ``immutable``, and which schema it has)."""
    refused = tables.not_files(path)
    if refused:
        raise StoreError(tables.explain(OSError(errno.EINVAL, refused), path))
    immutable = nobody_writes(path)
    while True:
        try:
            with contextlib.closing(
                sqlite3.connect(uri(path, immutable=immutable), uri=True, isolation_level=None)
            ) as db:
                db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
                found = int(db.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            if immutable or not log_is_empty(path):
                raise StoreError(tables.explain(exc, path)) from None
            immutable = True  # -shm could not be read (a full disk?) and the log holds nothing
            continue
        if found > SCHEMA_VERSION:
            raise tables.too_new(found, path)
        if found < SCHEMA_VERSION:
            raise Outdated(f"The history database {path} needs an upgrade (schema {found}).")
        return uri(path, immutable=immutable)


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """The read-only connection (made on the reader's thread)."""
    address = _probe(path, busy_timeout_ms)
    try:
        conn = sqlite3.connect(address, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(tables.explain(exc, path)) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("PRAGMA query_only = ON")
        conn.create_function(search.HAS_WORDS, 4, search.has_words, deterministic=True)
    except BaseException as exc:
        with suppressed(log, "closing a history that did not open"):
            conn.close()
        if isinstance(exc, sqlite3.Error):
            raise StoreError(tables.explain(exc, path)) from None
        raise
    return conn


def _attach_index(conn: sqlite3.Connection, path: Path) -> search.IndexUse:
    """Attach the search index read-only when it can be (rows past its mark are looked at one
    by one: see queries.py)."""
    ipath = index_path(path)
    if not ipath.exists() or tables.not_files(ipath):  # none, or one SQLite would wait on
        return search.NO_INDEX
    immutable = nobody_writes(ipath)
    while True:
        try:
            conn.execute("ATTACH DATABASE ? AS idx", (uri(ipath, immutable=immutable),))
            upto = conn.execute(INDEXED_UPTO_SQL).fetchall()
            conn.execute("SELECT rowid FROM idx.attempts_fts LIMIT 1").fetchall()
        except sqlite3.Error:  # no usable index: tried read-only, or searched without it
            with contextlib.suppress(sqlite3.Error):  # not attached: nothing to detach
                conn.execute("DETACH DATABASE idx")
            if immutable or not log_is_empty(ipath):
                return search.NO_INDEX  # every row is looked at instead
            immutable = True
            continue
        break
    if not upto or upto[0][0] is None:  # the index of another history (see indexer.mark_sql)
        with contextlib.suppress(sqlite3.Error):  # not used: nothing more to do
            conn.execute("DETACH DATABASE idx")
        return search.NO_INDEX
    return search.KEPT_UP


async def _open(path: Path, busy_timeout_ms: int) -> tuple[ThreadConnection, search.IndexUse]:
    conn = await ThreadConnection.open("history-reader", _connect, path, busy_timeout_ms)
    try:
        index = await conn.run(_attach_index, path)
    except BaseException as exc:
        with suppressed(log, "closing a history that did not open"):
            await conn.close()
        if isinstance(exc, sqlite3.Error):
            raise StoreError(tables.explain(exc, path)) from None
        raise
    return conn, index


async def open_history(path: Path, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> History:
    """The history at ``path``, opened to look only; every problem is a StoreError saying what
    to do (``Outdated``: open it with ``Store``)."""
    path = Path(path)
    conn, index = await _open(path, busy_timeout_ms)

    async def connect() -> ThreadConnection:  # another, to count on (queries.Reader)
        return (await _open(path, busy_timeout_ms))[0]

    return History(path, Reader(path, conn, index, connect, attach_as=_read_only_uri))


def _read_only_uri(path: Path) -> str:
    """Another index file (a field query's) attached the way the search index is: read only."""
    return uri(path, immutable=nobody_writes(path))
