"""Whether the history's files are still the ones the store has open.

Deleting ``deliveries.sqlite3`` under a running receiver leaves SQLite writing into a file that no
longer has a name: every commit succeeds, and the rows are gone once the process ends. So after
each batch's commit, before anybody is answered, the writer compares the files at their paths with
the ones it opened (``os.stat``: device and inode; three calls a batch, never one a delivery):

* the database file gone or replaced (deleted, or its directory renamed or removed): ``DELETED``.
  The store closes every connection, starts a new, empty history at the path (0600, schema) and
  stores the batch there before it is answered (``Store._start_over``);
* the ``-wal`` or ``-shm`` gone or replaced while the database file stays: ``LOG``. The rows are
  still readable through the log the writer has open, so it copies all of it into the database
  file (a checkpoint, fsynced) and then starts a new log: nothing acknowledged is lost.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from walletpass_tui.webhooks.models import Attempt, StoreError

DELETED = "deleted"
LOG = "log"

FileId = tuple[int, int]


class FilesMoved(StoreError):
    """Raised after a commit whose files are no longer at their paths; ``stored`` is what that
    commit wrote (kept only if the log can be copied into the database file)."""

    def __init__(self, kind: str, path: Path, stored: Sequence[Attempt] | None = None) -> None:
        if kind == DELETED:
            sentence = (
                f"The history database {path} was deleted while in use and could not be "
                "started again; check that its directory exists and is writable, then deliver "
                "again."
            )
        else:
            sentence = (
                f"The history database's log {path}-wal was deleted while in use and could not "
                "be copied into the database yet; deliver again."
            )
        super().__init__(sentence)
        self.kind = kind
        self.stored = stored


def deleted_sentence(path: Path) -> str:
    return (
        f"The history database {path} was deleted (or moved) while in use; a new, empty history "
        "was started in its place."
    )


def log_deleted_sentence(path: Path) -> str:
    return (
        f"The history database's log {path}-wal (or its -shm) was deleted while in use; every "
        f"delivery in it was copied into {path} and a new log was started."
    )


class HistoryFiles:
    """The identity of the database file, its ``-wal`` and its ``-shm`` as the writer opened them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._paths = (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm")))
        self._ids: list[FileId | None] = [None, None, None]
        self.log_bytes = 0  # the -wal's size at the last check (the writer keeps it bounded)

    def remember(self) -> None:
        """Right after the writer's connection is opened (it has made every one of them)."""
        self._ids = [_identity(_stat(p)) for p in self._paths]

    def changed(self) -> str | None:
        """None while every file remembered is still at its path; else DELETED or LOG. Notes the
        log's size on the way."""
        for number, (path, known) in enumerate(zip(self._paths, self._ids, strict=True)):
            found = _stat(path)
            if number == 1:
                self.log_bytes = found.st_size if found is not None else 0
            if known is not None and _identity(found) != known:
                return DELETED if number == 0 else LOG
        return None


def file_id(path: Path) -> FileId | None:
    """The (device, inode) of the file at ``path``, None when there is none: a file deleted or
    replaced under an open connection is noticed by it."""
    return _identity(_stat(path))


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:  # gone: None, as documented
        return None


def _identity(found: os.stat_result | None) -> FileId | None:
    return (found.st_dev, found.st_ino) if found is not None else None
