"""The rows an attached dashboard reads from the history itself: the attempts committed after a
cursor, read-only, on the ``SqliteThread`` the reader's connection lives on (``attached.py``)."""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from typing import Any

from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.store import queries

PAGE = 32  # attempts read at once, with their bodies


@dataclass
class Found:
    """What one read found: the new cursor, the attempts in pages, how many were skipped (or,
    when rows were taken out of the history, at least 1: all is read again)."""

    cursor: int
    batches: list[list[Attempt]]
    skipped: int = 0


class RowReader:
    """A read-only connection to the history (used on one ``SqliteThread``): the attempts after
    a cursor."""

    def __init__(self, path: Any) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._version: int | None = None
        self._oldest: int | None = None  # the oldest attempt id when last looked

    def read(self, cursor: int, announced: int, max_behind: int) -> Found:
        """New attempts after ``cursor``: up to ``announced`` when the receiver said more were
        committed, else up to the newest, if anyone committed since the last look."""
        db = self._db
        if db is None:
            db = self._db = queries.connect_read_only(self.path)
            self._version = None
        if announced > cursor:
            upto = announced
        else:
            version = queries.data_version(db)
            if version == self._version:
                return Found(cursor, [])
            self._version = version
            upto = queries.newest_attempt_id(db)
            oldest, before = queries.oldest_attempt_id(db), self._oldest
            self._oldest = oldest
            if before is not None and oldest != before and upto >= cursor:
                # rows taken out (events prune by itself): everything shown is read again
                return Found(upto, [], skipped=max(1, upto - cursor))
        if upto < cursor:  # the history was replaced, or its newest rows removed
            return Found(upto, [], skipped=1)
        if upto - cursor > max_behind:
            return Found(upto, [], skipped=upto - cursor)
        batches: list[list[Attempt]] = []
        while cursor < upto:
            batch = queries.attempts_after(db, cursor, upto_id=upto, limit=PAGE)
            if not batch:
                break
            batches.append(batch)
            cursor = batch[-1].id or cursor
        return Found(max(cursor, upto), batches)

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):  # closing a connection being dropped
                db.close()
