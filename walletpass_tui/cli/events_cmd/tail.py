"""``events tail``: follow the history as ``tail -f`` follows a file.

Another process receives (``listen``, the dashboard, ``relay follow``) and commits each attempt
to the history; this one prints every new attempt as ``listen`` would, a moment after its commit.

How it follows, cheaply and without ever writing:

* a read-only connection (it cannot write, lock for writing, migrate or create the file) asks
  SQLite every ``POLL_S`` whether anyone committed (``PRAGMA data_version``, no table read), and
  only then reads the attempts after the last one printed, by row id;
* a history that does not exist yet is waited for (said once on stderr), as ``tail -F`` waits;
* a history replaced under it (deleted, moved, restored from a backup: another file at the path,
  or row ids that went back) is reopened, and what it holds that was received since the last look
  at the old one is printed; pruning only deletes old rows and changes nothing here.

Ctrl-C (or SIGTERM) ends it with status 0.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from walletpass_tui.cli.attempt_lines import attempt_text
from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.webhooks.store import queries
from walletpass_tui.webhooks.store.tables import SCHEMA_VERSION

if TYPE_CHECKING:
    from walletpass_tui.webhooks.models import Attempt

POLL_S = 0.15  # a new attempt is printed within this (plus the read) of its commit
PAGE = 32  # attempts read at once with their bodies (each at most the receiver's max_body)
PAGE_WITHOUT_BODIES = 500


class Follower:
    """Following one path: the open connection, which file it is, and the cursor."""

    def __init__(
        self,
        path: Path,
        out: TextIO,
        info: TextIO,
        *,
        topic: str | None,
        verdict: str | None,
        as_json: bool,
        keep: Callable[[Attempt], bool] | None = None,
    ) -> None:
        self.path = path
        self.out = out
        self.info = info
        self.topic = topic
        self.verdict = verdict
        self.as_json = as_json
        self.keep = keep  # --where: tested on each attempt, its body read (as the live log does)
        self.db: sqlite3.Connection | None = None
        self.file_id: tuple[int, int] | None = None
        self.cursor = 0  # the newest row id already looked at
        self.seen_version: int | None = None
        self.last_look_ms = _now_ms()  # when the history was last read (or the start)
        # At the start, like tail -f, only what comes next is printed; once the history had to
        # be waited for or was replaced, what it holds from since the last look is printed too.
        self.from_now = True
        self.said: str | None = None  # the last thing said on stderr, so nothing is said twice

    def say(self, text: str) -> None:
        if self.said != text:
            self.said = text
            self.info.write(text + "\n")
            self.info.flush()

    def _file_id(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:  # not there (yet, or any more): the follower waits for it
            return None
        return st.st_dev, st.st_ino

    # -- opening ------------------------------------------------------------------------------

    def open(self) -> bool:
        """Open the history if it is there and ready; False to try again at the next poll.
        StoreError when it can never be read (a newer walletpass-tui wrote it)."""
        file_id = self._file_id()
        if file_id is None:
            self.from_now = False
            self.say(
                f"No history yet at {self.path}; start `walletpass-tui listen` (or the "
                "dashboard). Waiting for it... (Ctrl-C to stop)"
            )
            return False
        try:
            db = queries.connect_read_only(self.path)
        except sqlite3.Error as exc:  # said by _unreadable; tried again
            return self._unreadable(exc)
        try:
            version = queries.readable_schema(db, self.path)
        except sqlite3.Error as exc:  # being written over, or damaged
            db.close()
            return self._unreadable(exc)
        except BaseException:
            db.close()
            raise
        if version < SCHEMA_VERSION:
            db.close()
            self.from_now = False
            if version > 0:  # 0: being created this moment, by the receiver that opens it
                self.say(
                    f"The history at {self.path} was written by an older walletpass-tui; "
                    "waiting for `walletpass-tui listen` (or the dashboard) to upgrade it..."
                )
            return False
        self.db, self.file_id = db, file_id
        self.seen_version = None
        try:
            if self.from_now:
                self.cursor = queries.newest_attempt_id(db)
            else:
                self.cursor = 0
                self._catch_up(since_ms=self.last_look_ms)
        except sqlite3.Error as exc:  # said by _unreadable; tried again
            self.close()
            return self._unreadable(exc)
        self.from_now = True
        self.say(f"Following {self.path} (Ctrl-C to stop)")
        return True

    def _unreadable(self, exc: sqlite3.Error) -> bool:
        self.from_now = False
        self.say(f"Cannot read the history at {self.path} ({exc}); trying again...")
        return False

    def close(self) -> None:
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):  # closing a connection being dropped
                self.db.close()
        self.db = None

    # -- following ----------------------------------------------------------------------------

    def poll(self) -> None:
        """Print what was committed since the last poll; reopen when the history was replaced."""
        if self.db is None:
            self.open()
            return
        if self._file_id() != self.file_id:
            self.close()
            self.from_now = False
            if self._file_id() is not None:
                self.say(f"The history at {self.path} was replaced; following the new one.")
            self.open()
            return
        look_ms = _now_ms()
        try:
            version = queries.data_version(self.db)
            if version == self.seen_version:
                self.last_look_ms = look_ms
                return
            self.seen_version = version
            newest = queries.newest_attempt_id(self.db)
            if newest < self.cursor:  # restored in place: the ids went back
                self.cursor = 0
                self._catch_up(since_ms=self.last_look_ms, upto=newest)
            else:
                self._catch_up(upto=newest)
        except sqlite3.Error as exc:  # overwritten in place, or damaged, mid-read
            self.close()
            self._unreadable(exc)
            return
        self.last_look_ms = look_ms

    def _catch_up(self, *, since_ms: int | None = None, upto: int | None = None) -> None:
        assert self.db is not None
        if upto is None:
            upto = queries.newest_attempt_id(self.db)
        bodies = self.as_json or self.keep is not None
        limit = PAGE if bodies else PAGE_WITHOUT_BODIES
        while True:
            found = queries.attempts_after(
                self.db,
                self.cursor,
                upto_id=upto,
                topic=self.topic,
                verdict=self.verdict,
                received_since_ms=since_ms,
                limit=limit,
                with_bodies=bodies,  # the line shows no body; the JSON and a query read it
            )
            for attempt in found:  # untrusted text escaped by attempt_line / JSON
                if self.keep is not None and not self.keep(attempt):
                    continue
                self.out.write(attempt_text(attempt, as_json=self.as_json) + "\n")
            self.out.flush()
            if len(found) < limit:
                self.cursor = upto
                return
            self.cursor = found[-1].id


def _now_ms() -> int:
    return int(time.time() * 1000)


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event set by Ctrl-C or SIGTERM (the loop sleeps on it, so it ends at once)."""
    stop = threading.Event()
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):  # not the main thread
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, OSError):
                # the handler cannot be put back at exit: nothing to do about it
                signal.signal(sig, handler)


def cmd_tail(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    path = settings.database_path
    info = sys.stderr
    keep = None
    if args.where:
        from walletpass_tui.cli.events_cmd.where import read_where
        from walletpass_tui.query.filters import matches, to_filter

        keep = functools.partial(matches, to_filter(read_where(args.where, settings)))
    follower = Follower(
        path,
        sys.stdout,
        info,
        topic=args.topic,
        verdict=args.verdict,
        as_json=args.json,
        keep=keep,
    )
    with _stop_on_signals() as stop:
        try:
            follower.open()
            while not stop.wait(POLL_S):
                follower.poll()
        except KeyboardInterrupt:  # Ctrl-C ends tail: nothing to say
            pass
        finally:
            follower.close()
    return 0
