"""Reading the history: one connection (``query_only``) on a ``SqliteThread`` of its own, never
blocked by the writer (WAL: readers see the last commit, writers do not wait for them)."""

from __future__ import annotations

import functools
import logging
import sqlite3
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from walletpass_tui.api.topics import TOPICS as KNOWN_TOPICS
from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import SqliteThread
from walletpass_tui.webhooks.models import (
    CHECK,
    CHECK_NOTE_PREFIXES,
    FORWARD,
    PENDING,
    RECEIVED,
    REJECTED,
    VERIFIED,
    Attempt,
    ForwardRow,
    LogFilter,
    LogRow,
    MessageRow,
    RowCondition,
    Stats,
    StoreError,
)
from walletpass_tui.webhooks.store import rows, search, tables
from walletpass_tui.webhooks.store.indexer import index_path

log = logging.getLogger(__name__)

T = TypeVar("T")
MINUTE_MS = 60_000


def fetchall(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """Every row ``sql`` reads (on the connection's thread)."""
    return db.execute(sql, params).fetchall()


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """The reader's connection, with the search index attached as ``idx`` (created by the
    indexer before this)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.create_function(search.HAS_WORDS, 4, search.has_words, deterministic=True)
        conn.execute("ATTACH DATABASE ? AS idx", (str(index_path(path)),))
        conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


@dataclass(frozen=True)
class MinuteCount:
    """Attempts of one topic received in one minute (check requests left out)."""

    minute: int  # epoch milliseconds // MINUTE_MS
    topic: str | None
    deliveries: int
    rejected: int
    redelivered: int


@dataclass(frozen=True)
class MinuteForwards:
    """Forwards (not replays) finished in one minute, with your app's answer times."""

    minute: int
    forwards: int
    total_ms: float
    max_ms: float
    failed: int  # no answer, or not a 2xx


@dataclass(frozen=True)
class TrafficHistory:
    """``traffic_by_minute``'s answer, and the newest attempt and forward ids it saw."""

    attempts: Sequence[MinuteCount]
    forwards: Sequence[MinuteForwards]
    last_attempt_id: int | None
    last_forward_id: int | None


class Reader:
    """Every query the dashboard and the commands run; each failure is a StoreError."""

    def __init__(
        self,
        path: Path,
        thread: SqliteThread,
        conn: sqlite3.Connection,
        index: search.IndexUse = search.KEPT_UP,
        *,
        attach_as: Callable[[Path], str] = str,
    ) -> None:
        """``conn`` was opened on ``thread`` and is used only there; closing the reader closes
        both."""
        self.path = path
        self._thread = thread
        self._db = conn
        self._index = index
        self._attach_as = attach_as  # how a condition's index file is named to ATTACH
        self._functions: set[str] = set()
        self._fx_attached = False

    @classmethod
    async def open(cls, path: Path, busy_timeout_ms: int) -> Reader:
        """The search index (created by the indexer before this) is attached as ``idx``."""
        thread = SqliteThread("store-reader")
        try:
            conn = await thread.run(_connect, path, busy_timeout_ms)
        except BaseException:
            thread.close()
            raise
        return cls(path, thread, conn)

    async def close(self) -> None:
        with suppressed(log, "closing the history reader"):
            await self._thread.run(self._db.close)
        self._thread.close()

    async def fetch(self, sql: str, params: Sequence[Any], build: Callable[[Any], T]) -> list[T]:
        try:
            # One trip to the reader's thread for every row (not one per row fetched, each
            # waiting for a turn of a busy event loop).
            found = await self._thread.run(fetchall, self._db, sql, params)
            return [build(row) for row in found]
        except (sqlite3.Error, ValueError) as exc:
            raise StoreError(tables.explain(exc, self.path)) from None

    async def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        found = await self.fetch(sql, params, lambda r: r[0])
        return found[0] if found else None

    async def last_relay_cursor(self, relay_url: str) -> int:
        """The newest relay cursor stored for ``relay_url`` (0: none yet)."""
        sql = "SELECT MAX(relay_cursor) FROM attempts WHERE relay_url = ? AND relay_cursor >= 0"
        found = await self.one(sql, (relay_url,))
        return int(found or 0)

    async def has_relay_cursor(self, relay_url: str, cursor: int) -> bool:
        sql = "SELECT 1 FROM attempts WHERE relay_url = ? AND relay_cursor = ?"
        return await self.one(sql, (relay_url, cursor)) is not None

    async def relay_received_at(self, relay_url: str) -> int | None:
        """When the relay received the verified delivery stored with its newest cursor."""
        sql = (
            "SELECT received_at_ms FROM attempts WHERE relay_url = ? AND relay_cursor >= 0 "
            f"AND verdict = '{VERIFIED}' ORDER BY relay_cursor DESC LIMIT 1"
        )
        found = await self.one(sql, (relay_url,))
        return None if found is None else int(found)

    # -- the event log -----------------------------------------------------------------------

    async def log_page(
        self,
        flt: LogFilter | None,
        *,
        limit: int,
        before_id: int | None,
        after_id: int | None,
        oldest_first: bool,
    ) -> list[LogRow]:
        order = "ASC" if oldest_first else "DESC"
        plans = await self._plans(flt, before_id=before_id, after_id=after_id)
        found: list[LogRow] = []
        for plan in reversed(plans) if oldest_first else plans:
            if len(found) >= limit:
                break
            group = f" GROUP BY {plan.key}" if plan.grouped else ""
            sql = (
                f"SELECT {_LOG} FROM {plan.source}{plan.where}{group} "
                f"ORDER BY {plan.key} {order} LIMIT ?"
            )
            found += await self.fetch(sql, [*plan.params, limit - len(found)], rows.log_row)
        return found

    async def count(self, flt: LogFilter | None) -> int:
        total = 0
        for plan in await self._plans(flt):
            sql = f"SELECT COUNT(*) FROM {plan.source}{plan.where}"
            if plan.grouped:  # in key order already: grouping streams
                sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM {plan.source}{plan.where} GROUP BY {plan.key})"
            total += int(await self.one(sql, plan.params))
        return total

    async def _plans(
        self, flt: LogFilter | None, *, before_id: int | None = None, after_id: int | None = None
    ) -> list[_Plan]:
        """How to read a filtered log: one statement, or two when a condition's index lists
        its rows (the rows past its mark first: they are the newest)."""
        condition = flt.where if flt is not None else None
        upto = await self._condition_upto(condition) if condition is not None else None
        return _plans(flt, self._index, upto, before_id=before_id, after_id=after_id)

    async def _condition_upto(self, condition: RowCondition) -> int | None:
        """Make the condition's functions and index ready; the last row its index holds (None:
        no usable index, every row is tested by its functions)."""
        for name, arity, function in condition.functions():
            if name not in self._functions:
                await self._thread.run(
                    functools.partial(self._db.create_function, deterministic=True),
                    name,
                    arity,
                    function,
                )
                self._functions.add(name)
        file = condition.index_file(self.path)
        try:
            if not self._fx_attached:
                if not file.exists():
                    return None
                await self._thread.run(
                    fetchall, self._db, "ATTACH DATABASE ? AS fx", (self._attach_as(file),)
                )
                self._fx_attached = True
            found = await self._thread.run(fetchall, self._db, condition.index_mark(), ())
            top = await self._thread.run(
                fetchall, self._db, "SELECT COALESCE(MAX(id), 0) FROM attempts", ()
            )
        except sqlite3.Error as exc:  # no usable index: every row is looked at instead
            log.debug("The field index %s is not used: %s", file, exc)
            return None
        upto = int(next(iter(found))[0]) if found else 0
        if upto > int(next(iter(top))[0]):
            return None  # the index of another history (this one was started over)
        return upto

    async def attempt(self, attempt_id: int) -> Attempt | None:
        found = await self.fetch(
            f"SELECT {rows.ATTEMPT_COLUMNS} FROM attempts WHERE id = ?",
            [attempt_id],
            rows.attempt_from_row,
        )
        return found[0] if found else None

    async def message_attempts(self, webhook_id: str) -> list[Attempt]:
        return await self.fetch(
            f"SELECT {rows.ATTEMPT_COLUMNS} FROM attempts WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            rows.attempt_from_row,
        )

    async def last_received_message(self) -> str | None:
        """The webhook-id of the newest attempt a sender posted (the check's requests left out),
        or None: walked back from the newest row, so it costs nothing however long the history."""
        found = await self.fetch(
            f"SELECT a.webhook_id FROM attempts a WHERE a.webhook_id IS NOT NULL "
            f"AND NOT {_CHECK_ROW} ORDER BY a.id DESC LIMIT 1",
            list(CHECK_NOTE_PREFIXES),
            lambda r: str(r[0]),
        )
        return found[0] if found else None

    async def messages_starting_with(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` webhook-ids that start with ``prefix``, in order (so a whole id equal
        to it comes first), found by a range on the messages' key: no scan."""
        return await self.fetch(
            "SELECT webhook_id FROM messages WHERE webhook_id >= ? AND webhook_id < ? "
            "ORDER BY webhook_id LIMIT ?",
            [prefix, prefix + "\U0010ffff", limit],
            lambda r: str(r[0]),
        )

    async def message_attempts_without_bodies(self, webhook_id: str) -> list[Attempt]:
        """Every attempt of one message, oldest first, each with an empty ``body`` (its size
        in ``body_size``): an attempt list costs no body reads, however large they are."""
        return await self.fetch(
            f"SELECT {_NO_BODY} FROM attempts WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            rows.attempt_from_row,
        )

    async def list_messages(
        self,
        *,
        limit: int,
        topic: str | None,
        verdict: str | None,
        since_ms: int | None,
        text: str | None,
        until_ms: int | None = None,
        where: RowCondition | None = None,
    ) -> list[MessageRow]:
        clauses: list[str] = []
        params: list[Any] = []
        if topic:
            clauses.append("topic = ?")
            params.append(topic)
        if verdict == VERIFIED:
            clauses.append("verified_attempts > 0")
        elif verdict == REJECTED:
            clauses.append("verified_attempts = 0")
        if since_ms is not None:
            clauses.append("last_received_at_ms >= ?")
            params.append(since_ms)
        if until_ms is not None:
            clauses.append("last_received_at_ms < ?")
            params.append(until_ms)
        if where is not None:
            flt = LogFilter(text=text, where=where)
            ins = []
            for plan in await self._plans(flt):
                ins.append(f"webhook_id IN (SELECT a.webhook_id FROM {plan.source}{plan.where})")
                params.extend(plan.params)
            clauses.append("(" + " OR ".join(ins) + ")")
        else:
            joined, matching = search.text_clauses(text or "", params, index=self._index)
            if matching:
                source = _JOINED if joined else "attempts a"
                clauses.append(
                    f"webhook_id IN (SELECT a.webhook_id FROM {source} WHERE "
                    + " AND ".join(matching)
                    + ")"
                )
        sql_where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        params.append(limit)
        sql = (
            "SELECT webhook_id, topic, pass_id, "
            f"CASE WHEN verified_attempts > 0 THEN '{VERIFIED}' ELSE '{REJECTED}' END, reason, "
            "attempts, first_received_at_ms, last_received_at_ms, endpoint_id, last_status "
            f"FROM messages{sql_where} ORDER BY last_received_at_ms DESC, last_attempt_id DESC "
            "LIMIT ?"
        )
        return await self.fetch(sql, params, lambda r: MessageRow(*r))

    async def stats(self) -> Stats:
        sql = (
            "SELECT COUNT(*), "
            f"COALESCE(SUM(verdict = '{VERIFIED}'), 0), "
            f"COALESCE(SUM(verdict != '{VERIFIED}'), 0), "
            "COALESCE(SUM(attempt_no > 1), 0) FROM attempts"
        )
        found = await self.fetch(sql, [], lambda r: Stats(*(int(x) for x in r)))
        return found[0]

    async def last_id(self) -> int:
        return int(await self.one("SELECT COALESCE(MAX(id), 0) FROM attempts"))

    async def traffic_by_minute(self, since_ms: int) -> TrafficHistory:
        """Attempts by minute and topic, and forwards by minute, from ``since_ms`` on: one
        aggregate query each (the attempts through their time index). Each row carries the
        newest id of its table, read in the same statement, so attempts stored after it can be
        told from those it counted."""
        attempts = await self.fetch(
            "SELECT a.received_at_ms / ? AS minute, a.topic, COUNT(*), "
            f"COALESCE(SUM(a.verdict != '{VERIFIED}'), 0), COALESCE(SUM(a.attempt_no > 1), 0), "
            "(SELECT MAX(id) FROM attempts) "
            f"FROM attempts a WHERE a.received_at_ms >= ? AND NOT {_CHECK_ROW} "
            "GROUP BY minute, a.topic",
            [MINUTE_MS, since_ms, *CHECK_NOTE_PREFIXES],
            lambda r: (MinuteCount(int(r[0]), r[1], int(r[2]), int(r[3]), int(r[4])), r[5]),
        )
        forwards = await self.fetch(
            "SELECT finished_at_ms / ? AS minute, COUNT(*), COALESCE(SUM(latency_ms), 0), "
            "COALESCE(MAX(latency_ms), 0), "
            "COALESCE(SUM(status IS NULL OR status < 200 OR status >= 300), 0), "
            "(SELECT MAX(id) FROM forwards) "
            "FROM forwards WHERE kind = ? AND finished_at_ms >= ? AND latency_ms IS NOT NULL "
            "GROUP BY minute",
            [MINUTE_MS, FORWARD, since_ms],
            lambda r: (
                MinuteForwards(int(r[0]), int(r[1]), float(r[2]), float(r[3]), int(r[4])),
                r[5],
            ),
        )
        return TrafficHistory(
            [row for row, _ in attempts],
            [row for row, _ in forwards],
            attempts[0][1] if attempts else None,
            forwards[0][1] if forwards else None,
        )

    # -- the forward queue -------------------------------------------------------------------

    async def next_pending_forward(self, target: str) -> ForwardRow | None:
        found = await self.fetch(
            f"SELECT {rows.FORWARD_COLUMNS} FROM forwards WHERE state = ? AND target = ? "
            "ORDER BY id LIMIT 1",
            [PENDING, target],
            rows.forward_from_row,
        )
        return found[0] if found else None

    async def pending_forwards_by_target(self) -> list[tuple[str, int]]:
        return await self.fetch(
            "SELECT target, COUNT(*) FROM forwards WHERE state = ? GROUP BY target ORDER BY target",
            [PENDING],
            lambda r: (str(r[0]), int(r[1])),
        )

    async def pending_forward_count(self, target: str | None) -> int:
        sql, params = "SELECT COUNT(*) FROM forwards WHERE state = ?", [PENDING]
        if target is not None:
            sql += " AND target = ?"
            params.append(target)
        return int(await self.one(sql, params))

    async def forwards_for_message(self, webhook_id: str) -> list[ForwardRow]:
        return await self.fetch(
            f"SELECT {rows.FORWARD_COLUMNS} FROM forwards WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            rows.forward_from_row,
        )


_NO_BODY = rows.ATTEMPT_COLUMNS.replace(", body, ", ", x'' AS body, ")
_LOG = ", ".join(f"a.{column}" for column in rows.LOG_COLUMNS.split(", "))
# A request the check sent (its note says so: models.is_check_note); a NULL note is not one.
_CHECK_ROW = "COALESCE(substr(a.note, 1, 11) IN (?, ?, ?), 0)"
assert {len(p) for p in CHECK_NOTE_PREFIXES} == {11}
# Driven by the index in rowid order, so the newest matches of a common word come at once.
_JOINED = "idx.attempts_fts f JOIN attempts a ON a.id = f.rowid"


@dataclass(frozen=True)
class _Plan:
    """One statement's part of a filtered log: ``FROM source``, the id column to order by, the
    ``WHERE`` clause and its parameters; ``grouped``: a row may come twice (group by the key)."""

    source: str
    key: str
    where: str
    params: list[Any]
    grouped: bool = False


def _plans(
    flt: LogFilter | None,
    index: search.IndexUse,
    upto: int | None,
    *,
    before_id: int | None = None,
    after_id: int | None = None,
) -> list[_Plan]:
    """How to read a log filtered by ``flt``.

    With text to find, the trigram index drives the query in rowid order (``f.rowid``): the newest
    rows of a common word come at once instead of after every match was collected and sorted.
    Without, a condition whose index can list its rows (``RowCondition.driven``) drives it the
    same way, after a first statement for the rows its index does not hold yet (past ``upto``).
    """
    text = flt.text if flt is not None else None
    condition = flt.where if flt is not None else None
    joined = search.text_clauses(text or "", [], index=index)[0]
    if condition is not None and not joined and upto is not None:
        driven = condition.driven(upto)
        if driven is not None:
            driver, rest = driven
            later = _plan(flt, "attempts a", "a.id", [], index, None, before_id, after_id)
            later = replace(
                later, where=_and(later.where, "a.id > ?"), params=[*later.params, upto]
            )
            first = _plan(
                replace(flt, where=rest) if flt is not None else None,
                driver.source,
                driver.key,
                [(" AND ".join(driver.clauses), driver.params)],
                index,
                upto,
                before_id,
                after_id,
            )
            return [later, replace(first, grouped=True)]
    source = _JOINED if joined else "attempts a"
    key = "f.rowid" if joined else "a.id"
    return [_plan(flt, source, key, [], index, upto, before_id, after_id)]


def _and(where: str, clause: str) -> str:
    return f"{where} AND {clause}" if where else f" WHERE {clause}"


def _plan(
    flt: LogFilter | None,
    source: str,
    key: str,
    extra: list[tuple[str, Sequence[Any]]],
    index: search.IndexUse,
    upto: int | None,
    before_id: int | None,
    after_id: int | None,
) -> _Plan:
    params: list[Any] = []
    clauses: list[str] = []
    for clause, values in extra:
        clauses.append(clause)
        params.extend(values)
    if before_id is not None:
        clauses.append(f"{key} < ?")
        params.append(before_id)
    if after_id is not None:
        clauses.append(f"{key} > ?")
        params.append(after_id)
    if flt is not None:
        if flt.topic:
            clauses.append("a.topic = ?")
            params.append(flt.topic)
        if flt.verdict == VERIFIED:
            clauses.append("a.verdict = ?")
            params.append(VERIFIED)
        elif flt.verdict == REJECTED:
            clauses.append("a.verdict != ?")
            params.append(VERIFIED)
        if flt.since_ms is not None:
            clauses.append("a.received_at_ms >= ?")
            params.append(flt.since_ms)
        if flt.until_ms is not None:
            clauses.append("a.received_at_ms < ?")
            params.append(flt.until_ms)
        if flt.source in (CHECK, RECEIVED):
            clauses.append(_CHECK_ROW if flt.source == CHECK else f"NOT {_CHECK_ROW}")
            params.extend(CHECK_NOTE_PREFIXES)
        if flt.where is not None:
            clauses.append(flt.where.sql(params, upto))
    text_params: list[Any] = []
    text = flt.text if flt is not None else None
    _, text_where = search.text_clauses(text or "", text_params, index=index)
    clauses.extend(text_where)
    params.extend(text_params)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    return _Plan(source, key, where, params)


# -- following and counting from another process (``events tail``, ``events stats``) -------------
# Plain sqlite3 on a read-only connection: it can never write, take a write lock, migrate or create
# the database (SQLite answers "unable to open" when the file is missing). WAL lets it read the
# last commit while a receiver writes.


def connect_read_only(
    path: Path, busy_timeout_ms: int = tables.DEFAULT_BUSY_TIMEOUT_MS, *, immutable: bool = False
) -> sqlite3.Connection:
    """A read-only connection to the history at ``path`` (sqlite3.Error when it cannot be opened:
    SQLite says "unable to open" for a missing file, and never creates one). Check what it holds
    with :func:`readable_schema` before reading. ``immutable``: no locks, no ``-shm`` or ``-wal``
    created, for a file nobody writes (``read_only.nobody_writes``) on a full or read-only disk."""
    uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro"
    if immutable:
        uri += "&immutable=1"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    except BaseException:
        db.close()
        raise
    return db


def readable_schema(db: sqlite3.Connection, path: Path) -> int:
    """The schema version of the history (below ``SCHEMA_VERSION``: being created, or not yet
    upgraded by a process that writes it); StoreError when a newer walletpass-tui wrote it."""
    version = schema_version(db)
    if version > tables.SCHEMA_VERSION:
        raise StoreError(
            f"The history database {path} was written by a newer walletpass-tui (schema "
            f"{version}, this one knows {tables.SCHEMA_VERSION}); upgrade walletpass-tui or use "
            "another --home."
        )
    return version


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def data_version(db: sqlite3.Connection) -> int:
    """Changes whenever another connection commits: polling it costs no table read."""
    return int(db.execute("PRAGMA data_version").fetchone()[0])


def newest_attempt_id(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT COALESCE(MAX(id), 0) FROM attempts").fetchone()[0])


def attempts_after(
    db: sqlite3.Connection,
    after_id: int,
    *,
    upto_id: int,
    topic: str | None = None,
    verdict: str | None = None,
    received_since_ms: int | None = None,
    limit: int = 200,
    with_bodies: bool = True,
) -> list[Attempt]:
    """Attempts with ``after_id < id <= upto_id`` (oldest first, at most ``limit``), of one topic
    or verdict when given, received at or after ``received_since_ms`` when given. Without
    ``with_bodies`` each ``body`` is empty (its size kept), so a page costs no body reads."""
    clauses = ["id > ?", "id <= ?"]
    params: list[Any] = [after_id, upto_id]
    if topic:
        clauses.append("topic = ?")
        params.append(topic)
    if verdict == VERIFIED:
        clauses.append("verdict = ?")
        params.append(VERIFIED)
    elif verdict == REJECTED:
        clauses.append("verdict != ?")
        params.append(VERIFIED)
    if received_since_ms is not None:
        clauses.append("received_at_ms >= ?")
        params.append(received_since_ms)
    params.append(limit)
    sql = (
        f"SELECT {rows.ATTEMPT_COLUMNS if with_bodies else _NO_BODY} FROM attempts "
        f"WHERE {' AND '.join(clauses)} ORDER BY id LIMIT ?"
    )
    return [rows.attempt_from_row(r) for r in db.execute(sql, params).fetchall()]


def attempt_activity(
    db: sqlite3.Connection, since_ms: int, bucket_ms: int
) -> list[tuple[int, str | None, bool, int, int]]:
    """Attempts received since ``since_ms`` by time bucket: ``(bucket, topic, verified, attempts,
    redeliveries)``. A bucket is ``received_at_ms // bucket_ms``; the topic is None for every name
    the service does not know (or none). Redeliveries: attempt number above 1."""
    known = ", ".join("?" for _ in KNOWN_TOPICS)
    sql = (
        f"SELECT received_at_ms / ?, CASE WHEN topic IN ({known}) THEN topic END, "
        "verdict = ?, COUNT(*), COALESCE(SUM(attempt_no > 1), 0) FROM attempts "
        "WHERE received_at_ms >= ? GROUP BY 1, 2, 3"
    )
    params = [bucket_ms, *KNOWN_TOPICS, VERIFIED, since_ms]
    return [
        (int(b), t, bool(v), int(n), int(r)) for b, t, v, n, r in db.execute(sql, params).fetchall()
    ]


def forward_counts(
    db: sqlite3.Connection, since_ms: int, bucket_ms: int
) -> list[tuple[int, int, int, int]]:
    """Forwards to your app (not replays) queued since ``since_ms``, by the same buckets as
    :func:`attempt_activity`: ``(bucket, forwards, answered, failed)``. Answered: the last try
    got an answer; failed: it was tried and the last try got no 2xx (or no answer)."""
    sql = (
        "SELECT created_at_ms / ?, COUNT(*), "
        "COALESCE(SUM(tries > 0 AND status IS NOT NULL), 0), "
        "COALESCE(SUM(tries > 0 AND (status IS NULL OR status NOT BETWEEN 200 AND 299)), 0) "
        "FROM forwards WHERE kind = ? AND created_at_ms >= ? GROUP BY 1"
    )
    found = db.execute(sql, [bucket_ms, FORWARD, since_ms]).fetchall()
    return [(int(b), int(n), int(a), int(f)) for b, n, a, f in found]


def forward_percentiles(
    db: sqlite3.Connection, since_ms: int, bucket_ms: int | None, percents: Sequence[int]
) -> dict[int, dict[int, float]]:
    """Your app's answer time (ms) at each of ``percents`` (nearest rank), per bucket of
    :func:`forward_counts` (``bucket_ms`` None: one group, bucket 0), over the forwards it
    answered. SQLite sorts and ranks them, so no list of times is held here."""
    group = "created_at_ms / ?" if bucket_ms is not None else "0"
    group_params = [bucket_ms] if bucket_ms is not None else []
    ranks = " OR ".join(f"rn = ({int(p)} * n + 99) / 100" for p in percents)
    sql = (
        f"SELECT b, rn, n, latency_ms FROM (SELECT {group} AS b, latency_ms, "
        f"ROW_NUMBER() OVER (PARTITION BY {group} ORDER BY latency_ms) AS rn, "
        f"COUNT(*) OVER (PARTITION BY {group}) AS n FROM forwards "
        "WHERE kind = ? AND created_at_ms >= ? AND tries > 0 AND status IS NOT NULL "
        f"AND latency_ms IS NOT NULL) WHERE {ranks}"
    )
    params = [*group_params, *group_params, *group_params, FORWARD, since_ms]
    found: dict[int, dict[int, float]] = {}
    for b, rn, n, latency in db.execute(sql, params).fetchall():
        for p in percents:
            if rn == (p * n + 99) // 100:
                found.setdefault(int(b), {})[p] = float(latency)
    return found
