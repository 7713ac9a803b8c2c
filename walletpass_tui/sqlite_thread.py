"""The one way this project runs SQLite off the event loop: one thread, one queue, futures, one
close (the shape of aiosqlite's own core).

``SqliteThread(name)`` starts a thread that runs the calls put on its queue, one at a time, in the
order they were put there. SQLite connections are not to be shared between threads, so whoever
owns a connection opens it, uses it and closes it through the same ``SqliteThread``::

    thread = SqliteThread("store-writer")
    db = await thread.run(sqlite3.connect, path)
    rows = await thread.run(lambda: db.execute("SELECT ...").fetchall())
    await thread.run(db.close)
    thread.close()

``run`` queues a call from the event loop and returns an ``asyncio.Future`` of it; ``submit`` queues
one from any thread and returns a ``concurrent.futures.Future``. A call whose future was cancelled before its turn is
skipped, as ``ThreadPoolExecutor`` does. ``close()`` takes no more calls; those already queued
still run, then the thread ends (``close(wait=True)`` waits for that, off the event loop only).
What it does is logged at debug level (``walletpass_tui.sqlite_thread``).

``ThreadConnection`` is the common case: one connection on a thread of its own, with
``fetchall(sql, params)``, ``run(fn, *args)`` (``fn(connection, *args)``), ``interrupt()`` and
``close()``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

_Call = tuple[Callable[..., Any], tuple[Any, ...], "concurrent.futures.Future[Any]"]


class SqliteThread:
    """One thread running calls in order; see the module's docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()  # a call is never queued after the end was
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        log.debug("%s: started", name)

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        """Queue ``fn(*args)``; its future holds the result (or the exception it raised).
        RuntimeError once closed."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name}: closed, it takes no more calls")
            self._calls.put((fn, args, future))
        return future

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on the thread, after every call queued before it: a future of the
        running event loop (await it, or add a callback)."""
        return asyncio.wrap_future(self.submit(fn, *args), loop=asyncio.get_running_loop())

    def close(self, *, wait: bool = False) -> None:
        """Take no more calls; the ones queued still run, then the thread ends. ``wait``: until
        it has (never from the event loop)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._calls.put(None)
                log.debug("%s: closing", self.name)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()

    async def joined(self) -> None:
        """``close()``, then wait, off the event loop, until the thread has ended."""
        self.close()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            await asyncio.to_thread(self._thread.join)

    def _serve(self) -> None:
        while True:
            call = self._calls.get()
            if call is None:
                break
            fn, args, future = call
            if not future.set_running_or_notify_cancel():
                continue  # cancelled before its turn
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s: %s", self.name, getattr(fn, "__qualname__", fn))
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the caller through the future
                future.set_exception(exc)
                del exc  # no cycle through the traceback
            else:
                future.set_result(result)
            del fn, args, future, call
        log.debug("%s: ended", self.name)


class ThreadConnection:
    """A ``sqlite3`` connection that lives on a ``SqliteThread`` of its own: opened, used and
    closed there. ``interrupt()`` may be called from any thread (SQLite allows it)."""

    def __init__(self, thread: SqliteThread, db: sqlite3.Connection) -> None:
        self.thread = thread
        self.db = db

    @classmethod
    async def open(
        cls, name: str, connect: Callable[..., sqlite3.Connection], *args: Any
    ) -> ThreadConnection:
        """``connect(*args)`` on a new thread named ``name``; its errors are raised here."""
        thread = SqliteThread(name)
        try:
            db = await thread.run(connect, *args)
        except BaseException:
            thread.close()
            raise
        return cls(thread, db)

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(connection, *args)`` on the connection's thread."""
        return self.thread.run(fn, self.db, *args)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row ``sql`` reads, in one trip to the thread."""
        return await self.run(_fetchall, sql, params)

    def interrupt(self) -> None:
        """Stop the statement under way (it raises ``sqlite3.OperationalError``)."""
        self.db.interrupt()

    async def close(self) -> None:
        """Close the connection after the calls queued, then end the thread (it has ended when
        this returns)."""
        try:
            await self.run(sqlite3.Connection.close)
        finally:
            await self.thread.joined()


def _fetchall(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    return db.execute(sql, params).fetchall()
