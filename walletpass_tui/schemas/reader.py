"""Reading the schema file: the queries the command line and the dashboard run.

A ``SchemaReader`` opens its own connection (read only, ``query_only``) per call, so any thread
or process may read while a learner writes: WAL readers see the last committed batch. A missing
file reads as nothing learned yet. Calls are quick (the file holds at most 2,000 paths per group);
from the event loop run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from walletpass_tui.schemas import schema_file, storage
from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.export import EXPORTERS, export, export_all
from walletpass_tui.schemas.model import GroupKey, GroupSchema
from walletpass_tui.schemas.records import DriftRecord, FieldInfo, GroupSummary, SkippedRecord
from walletpass_tui.text import parse_ascii_int
from walletpass_tui.webhooks.store import tables as history_tables

_DRIFT_SELECT = f"SELECT {storage.DRIFT_COLUMNS} FROM drift"


class SchemaReader:
    def __init__(self, history_path: Path, *, busy_timeout_ms: int = 5000) -> None:
        self.history_path = Path(history_path)
        self.path = schema_file.schemas_path(self.history_path)
        self._busy_timeout_ms = busy_timeout_ms

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection | None]:
        linked = schema_file.links(self.path)
        if linked:  # never followed: the learner deletes the link and makes its own file
            raise self._not_ours(linked)
        if not self.path.exists():
            yield None
            return
        try:
            refused = history_tables.not_files(self.path)
            if refused:  # never opened: SQLite would wait on a FIFO forever
                raise sqlite3.OperationalError(refused)
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            raise SchemaError.of(exc, self.path) from None
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            db.execute("PRAGMA query_only = ON")
            made = db.execute(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'drift'"
            ).fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if made and version != schema_file.FORMAT:
                raise SchemaError(
                    f"The schema file {self.path} was written by another version of "
                    "walletpass-tui; it is learned again from the history when the receiver "
                    "next starts (or rebuild it now: walletpass-tui schema rebuild)."
                )
            foreign = schema_file.not_ours(db)
            if foreign or version not in (0, schema_file.FORMAT):
                raise self._not_ours(foreign or f"its format is {version}")
            yield db if made else None  # a file the learner is still making: nothing yet
        except sqlite3.Error as exc:
            raise SchemaError.of(exc, self.path) from None
        finally:
            db.close()

    def _not_ours(self, why: str) -> SchemaError:
        return SchemaError(
            f"The schema file {self.path} is not one walletpass-tui made ({why}); it is "
            "deleted and learned again from the history when the receiver next starts (or "
            "now: walletpass-tui schema rebuild)."
        )

    # -- groups ------------------------------------------------------------------------------

    def groups(self) -> list[GroupSummary]:
        """Every group learned, the most recently seen first."""
        with self._db() as db:
            if db is None:
                return []
            counts = dict(
                db.execute(
                    "SELECT grp, COUNT(*) FROM paths WHERE path != '$' GROUP BY grp"
                ).fetchall()
            )
            drift = dict(db.execute("SELECT grp, COUNT(*) FROM drift GROUP BY grp").fetchall())
            out = []
            for grp, samples, not_json, untracked, more, last_ms, skipped in db.execute(
                "SELECT grp, samples, not_json, untracked, untracked_more, last_seen_ms, skipped "
                "FROM groups ORDER BY last_seen_ms DESC, grp"
            ):
                out.append(
                    GroupSummary(
                        storage.group_key(grp),
                        storage.count(samples),
                        int(counts.get(grp, 0)),
                        int(drift.get(grp, 0)),
                        storage.moment(last_ms),
                        storage.count(not_json),
                        len(untracked) // 8 if type(untracked) is bytes else 0,
                        bool(more),
                        storage.count(skipped),
                    )
                )
            return out

    def topics_not_learned(self) -> int:
        """Verified deliveries not learned because MAX_GROUPS topics from the wire were already
        (the service's own topics always are)."""
        with self._db() as db:
            if db is None:
                return 0
            row = db.execute("SELECT value FROM meta WHERE key = 'topics_not_learned'").fetchone()
            if row is None:  # a file being made
                return 0
            value = row[0]
            count = parse_ascii_int(value) if type(value) is str else None
            if count is not None:
                return count
            raise sqlite3.DatabaseError("the schema file is malformed: not a count of topics")

    def group(self, key: GroupKey) -> GroupSchema | None:
        """Everything learned about one group (None: nothing yet)."""
        with self._db() as db:
            return None if db is None else storage.load_group(db, key, findings=False)

    def fields(self, key: GroupKey) -> list[FieldInfo]:
        """One group's field tree: parents before children, siblings in the order first seen;
        the first entry is the body itself (path ``$``)."""
        group = self.group(key)
        if group is None:
            return []
        return [FieldInfo.of(group, stats) for stats in group.tree()]

    # -- drift -------------------------------------------------------------------------------

    def drift(
        self, key: GroupKey | None = None, *, since_ms: int | None = None, limit: int = 200
    ) -> list[DriftRecord]:
        """Findings, newest first; only one group's with ``key``, only those first seen at or
        after ``since_ms`` with it."""
        where: list[str] = []
        params: list[object] = []
        if key is not None:
            where.append("grp = ?")
            params.append(key.stored)
        if since_ms is not None:
            where.append("seen_at_ms >= ?")
            params.append(since_ms)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        sql = f"{_DRIFT_SELECT}{clause} ORDER BY seen_at_ms DESC, id DESC LIMIT ?"
        return self._findings(sql, [*params, limit])

    def drift_for_attempt(self, attempt_id: int) -> list[DriftRecord]:
        """The findings the delivery stored as ``attempt_id`` showed first."""
        return self._findings(f"{_DRIFT_SELECT} WHERE attempt_id = ? ORDER BY id", [attempt_id])

    def drift_for_attempts(self, attempt_ids: Sequence[int]) -> dict[int, list[DriftRecord]]:
        """The findings of each of ``attempt_ids`` that showed any (a page of the log)."""
        out: dict[int, list[DriftRecord]] = {}
        ids = list(dict.fromkeys(attempt_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"{_DRIFT_SELECT} WHERE attempt_id IN ({marks}) ORDER BY id"
            for record in self._findings(sql, chunk):
                assert record.attempt_id is not None
                out.setdefault(record.attempt_id, []).append(record)
        return out

    def drift_state(self) -> tuple[int, ...]:
        """What the drift findings and the groups they are counted in read as, in one cheap
        query: while it reads the same, so do the deliveries marked and the findings counted
        (the dashboard asks this every second while deliveries arrive, and reads those only
        when it changed)."""
        with self._db() as db:
            if db is None:
                return ()
            row = db.execute(
                "SELECT COUNT(*), COALESCE(MAX(rowid), 0), TOTAL(attempt_id), "
                "(SELECT COUNT(*) FROM groups) FROM drift"
            ).fetchone()
            return tuple(int(value) for value in row)

    def attempts_with_drift(self, *, limit: int = 200, before_id: int | None = None) -> list[int]:
        """Row ids of the deliveries that showed drift first, newest first (``events list
        --drift``); pages with ``before_id``."""
        with self._db() as db:
            if db is None:
                return []
            rows = db.execute(
                "SELECT DISTINCT attempt_id FROM drift WHERE attempt_id IS NOT NULL "
                "AND attempt_id < ? ORDER BY attempt_id DESC LIMIT ?",
                (before_id if before_id is not None else 2**63 - 1, limit),
            ).fetchall()
            return [int(r[0]) for r in rows]

    def messages_with_drift(self, *, limit: int = 200, offset: int = 0) -> list[str]:
        """Webhook-ids of the messages one of whose deliveries showed drift first, the latest
        drift first (``events list --drift``); pages with ``offset``."""
        with self._db() as db:
            if db is None:
                return []
            rows = db.execute(
                "SELECT webhook_id FROM drift WHERE webhook_id IS NOT NULL AND attempt_id IS NOT "
                "NULL GROUP BY webhook_id ORDER BY MAX(seen_at_ms) DESC, MAX(id) DESC "
                "LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
            return [str(r[0]) for r in rows]

    def drift_for_messages(self, webhook_ids: Sequence[str]) -> dict[str, list[DriftRecord]]:
        """The findings each of ``webhook_ids``' deliveries showed first (those that showed any)."""
        out: dict[str, list[DriftRecord]] = {}
        ids = list(dict.fromkeys(webhook_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = (
                f"{_DRIFT_SELECT} WHERE webhook_id IN ({marks}) AND attempt_id IS NOT NULL "
                "ORDER BY id"
            )
            for record in self._findings(sql, chunk):
                assert record.webhook_id is not None
                out.setdefault(record.webhook_id, []).append(record)
        return out

    def _findings(self, sql: str, params: Sequence[object]) -> list[DriftRecord]:
        with self._db() as db:
            if db is None:
                return []
            return [DriftRecord.of(storage.finding_from_row(r)) for r in db.execute(sql, params)]

    def skipped(self, key: GroupKey | None = None) -> list[SkippedRecord]:
        """The latest deliveries the learner could not take (with why), newest first."""
        with self._db() as db:
            if db is None:
                return []
            where, params = ("WHERE grp = ?", [key.stored]) if key is not None else ("", [])
            return [
                SkippedRecord(
                    storage.group_key(grp),
                    storage.count(attempt_id),
                    storage.maybe_text(webhook_id),
                    storage.moment(at_ms),
                    storage.text(why),
                )
                for attempt_id, grp, webhook_id, at_ms, why in db.execute(
                    "SELECT attempt_id, grp, webhook_id, seen_at_ms, why FROM skipped "
                    f"{where} ORDER BY attempt_id DESC",
                    params,
                )
            ]

    # -- exports -----------------------------------------------------------------------------

    def export(self, key: GroupKey, fmt: str) -> str:
        """One group's schema as ``jsonschema``, ``typescript``, ``pydantic`` or ``openapi``."""
        _check_format(fmt)
        group = self.group(key)
        if group is None or group.samples == 0:
            raise SchemaError(
                f"Nothing is learned for {key.label} yet; it is learned from verified deliveries."
            )
        return export(group, fmt)

    def export_topics(self, fmt: str) -> str:
        """Every topic learned (not the templates, not ``topic unknown``) in one document: each
        one's schema and their union (OpenAPI: a webhook each)."""
        _check_format(fmt)
        groups = []
        with self._db() as db:
            if db is not None:
                for key in storage.group_keys(db):
                    if key.templates or key.topic is None:
                        continue
                    group = storage.load_group(db, key, findings=False)
                    if group is not None and group.samples:
                        groups.append(group)
        if not groups:
            raise SchemaError(
                "No topic is learned yet; topics are learned from verified deliveries."
            )
        groups.sort(key=lambda g: g.key)
        return export_all(groups, fmt)


def _check_format(fmt: str) -> None:
    if fmt not in EXPORTERS:
        raise SchemaError(f"Unknown export format {fmt!r}; choose one of {', '.join(EXPORTERS)}.")
