"""Reading the history: one connection (``query_only``) on a thread of its own
(``sqlite_thread.ThreadConnection``), never blocked by the writer (WAL: readers see the last
commit, writers do not wait for them)."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sqlite3
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from walletpass_tui.logs import suppressed
from walletpass_tui.sqlite_thread import ThreadConnection
from walletpass_tui.webhooks.models import (
    CHECK_MODE,
    CHECK_NOTE_PREFIXES,
    FORWARD,
    PENDING,
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
from walletpass_tui.webhooks.relay_channel import relay_channel
from walletpass_tui.webhooks.store import activity, log_plans, rows, search, tables
from walletpass_tui.webhooks.store.files import FileId, file_id
from walletpass_tui.webhooks.store.indexer import INDEXED_UPTO_SQL, index_path

log = logging.getLogger(__name__)

T = TypeVar("T")
# A field query's count runs in slices of row ids (see Reader._count_in_slices).
COUNT_SLICE_IDS = 65_536  # the first slice; the next ones sized to take about COUNT_SLICE_S
COUNT_SLICE_S = 0.25
COUNT_SLICE_MIN = 1024
Connect = Callable[[], Awaitable[ThreadConnection]]


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """A reader's connection, with the search index (created by the indexer before this)
    attached as ``idx``."""
    for file in (path, index_path(path)):
        refused = tables.not_files(file)
        if refused:
            raise sqlite3.OperationalError(refused)
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


def _create_function(
    db: sqlite3.Connection, name: str, arity: int, function: Callable[..., Any]
) -> None:
    db.create_function(name, arity, function, deterministic=True)


@dataclass
class _Connection:
    """A reading connection and what it was made ready for (a field query's functions and
    index: ``Reader._ready``)."""

    db: ThreadConnection
    functions: set[str] = field(default_factory=set)
    fx: FileId | None = None  # the index file attached as ``fx`` (device, inode)


class Reader:
    """Every query the dashboard and the commands run; each failure is a StoreError.

    Counting what a filter matches can read every row (a word in half the history): such a
    count runs on a connection of its own, opened when first needed with ``connect``, so the
    log's pages, a detail and the header never wait behind it; a count given up (its caller
    cancelled) is interrupted. What the counts by minute answer (no filter, a topic, a verdict,
    a source) is read from them at once (activity.py).
    """

    def __init__(
        self,
        path: Path,
        conn: ThreadConnection,
        index: search.IndexUse = search.KEPT_UP,
        connect: Connect | None = None,
        *,
        attach_as: Callable[[Path], str] = str,
    ) -> None:
        self.path = path
        self._main = _Connection(conn)
        self._index = index
        self._attach_as = attach_as  # how a condition's index file is named to ATTACH
        self._connect = connect
        self._counting: _Connection | None = None
        self._count_lock = asyncio.Lock()

    @property
    def _db(self) -> ThreadConnection:
        return self._main.db

    @classmethod
    async def open(cls, path: Path, busy_timeout_ms: int) -> Reader:
        """The search index (created by the indexer before this) is attached as ``idx``."""
        connect = functools.partial(cls.connect, path, busy_timeout_ms)
        return cls(path, await connect(), connect=connect)

    @staticmethod
    async def connect(path: Path, busy_timeout_ms: int) -> ThreadConnection:
        return await ThreadConnection.open("store-reader", _connect, path, busy_timeout_ms)

    async def close(self) -> None:
        counting, self._counting = self._counting, None
        if counting is not None:
            with suppressed(log, "closing the history's counting reader"):
                counting.db.interrupt()
                await counting.db.close()
        with suppressed(log, "closing the history reader"):
            await self._db.close()

    async def fetch(self, sql: str, params: Sequence[Any], build: Callable[[Any], T]) -> list[T]:
        try:
            # One trip to the reader's thread for all the rows (not one per row fetched, each
            # waiting for a turn of a busy event loop).
            found = await self._db.fetchall(sql, params)
            return [build(row) for row in found]
        except (sqlite3.Error, ValueError) as exc:
            raise StoreError(tables.explain(exc, self.path)) from None

    async def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        found = await self.fetch(sql, params, lambda r: r[0])
        return found[0] if found else None

    async def last_relay_cursor(self, relay_url: str) -> int:
        """The newest cursor stored from the channel ``relay_url`` follows (0: none yet)."""
        sql = "SELECT MAX(relay_cursor) FROM attempts WHERE relay_channel = ? AND relay_cursor >= 0"
        found = await self.one(sql, (relay_channel(relay_url),))
        return int(found or 0)

    async def has_relay_cursor(self, relay_url: str, cursor: int) -> bool:
        sql = "SELECT 1 FROM attempts WHERE relay_channel = ? AND relay_cursor = ?"
        return await self.one(sql, (relay_channel(relay_url), cursor)) is not None

    async def relay_received_at(self, relay_url: str) -> int | None:
        """When the relay received the verified delivery stored with the channel's newest cursor."""
        sql = (
            "SELECT received_at_ms FROM attempts WHERE relay_channel = ? AND relay_cursor >= 0 "
            f"AND verdict = '{VERIFIED}' ORDER BY relay_cursor DESC LIMIT 1"
        )
        found = await self.one(sql, (relay_channel(relay_url),))
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
        """How many attempts the log shows for ``flt``: from the counts by minute when they
        answer it, else counted on the counting connection (see the class)."""
        quick = log_plans.counted_by_minute(flt)
        if quick is not None:
            return int(await self.one(*quick))
        if flt is not None and flt.where is not None:
            negated = flt.where.complement()
            if negated is not None:  # every row the rest keeps, but those the negated one finds
                whole = await self.count(replace(flt, where=None))
                return whole - await self._count_in_slices(replace(flt, where=negated))
            return await self._count_in_slices(flt)
        sql, params = log_plans.count_sql(await self._plans(flt, counting=True))
        return int(await self._count(sql, params, flt))

    async def _count_in_slices(self, flt: LogFilter) -> int:
        """A condition's count, one slice of row ids at a time, each statement about
        COUNT_SLICE_S long: a reader holds back the write-ahead log's frames for as long as its
        statement runs, and the log cannot start over meanwhile (the writer goes on, the log
        grows). Short statements keep that short, however long the whole count."""
        top = int(await self.one("SELECT COALESCE(MAX(id), 0) FROM attempts"))
        total, low, size = 0, 0, COUNT_SLICE_IDS
        while low < top:
            high = min(top, low + size)
            sql, params = log_plans.count_sql(
                await self._plans(flt, counting=True, within=(low, high))
            )
            started = time.perf_counter()
            total += int(await self._count(sql, params, flt))
            took = time.perf_counter() - started
            low = high
            size = max(COUNT_SLICE_MIN, min(size * 4, int(size * COUNT_SLICE_S / max(took, 1e-3))))
        return total

    async def _count(self, sql: str, params: Sequence[Any], flt: LogFilter | None) -> Any:
        """One aggregate on the counting connection, one at a time; interrupted when its caller
        stops waiting (a new filter made it useless), so the next one starts at once."""
        if self._connect is None:
            return await self.one(sql, params)
        async with self._count_lock:
            try:
                if self._counting is None:
                    self._counting = _Connection(await self._connect())
                counting = self._counting
                condition = flt.where if flt is not None else None
                if condition is not None:
                    await self._ready(condition, counting)
                found = await counting.db.fetchall(sql, params)
            except asyncio.CancelledError:
                if self._counting is not None:
                    self._counting.db.interrupt()
                raise
            except (sqlite3.Error, ValueError) as exc:
                raise StoreError(tables.explain(exc, self.path)) from None
        return next(iter(found))[0]

    async def _plans(
        self,
        flt: LogFilter | None,
        *,
        before_id: int | None = None,
        after_id: int | None = None,
        counting: bool = False,
        within: tuple[int, int] | None = None,
    ) -> list[log_plans.Plan]:
        """How to read a filtered log: one statement, or two when an index lists the rows (the
        rows past its mark first: they are the newest)."""
        condition = flt.where if flt is not None else None
        upto = await self._condition_upto(condition) if condition is not None else None
        text = flt.text if flt is not None else None
        query = search.index_query(text or "", self._index)
        text_upto = None
        if query is not None:
            found = await self.one(INDEXED_UPTO_SQL)  # None: of another history
            text_upto = int(found or 0)
        return log_plans.plans(
            flt,
            self._index,
            upto,
            text_upto,
            before_id=before_id,
            after_id=after_id,
            counting=counting,
            within=within,
        )

    async def _condition_upto(self, condition: RowCondition) -> int | None:
        """Make the condition's functions and index ready; the last row its index holds (None:
        no usable index, every row is tested by its functions)."""
        if not await self._ready(condition, self._main):
            return None
        try:
            found = await self._db.fetchall(condition.index_mark())
        except sqlite3.Error as exc:  # no usable index: every row is looked at instead
            log.debug("The field index is not used: %s", exc)
            return None
        mark = next(iter(found))[0] if found else 0
        if mark is None:
            return None  # the index of another history (this one was started over, or copied)
        return int(mark)

    async def _ready(self, condition: RowCondition, conn: _Connection) -> bool:
        """The condition's functions on ``conn``, and its index attached as ``fx``; whether the
        index is there. An index file deleted or replaced since it was attached is let go and
        the one at the path attached instead (one ``stat`` a query)."""
        for name, arity, function in condition.functions():
            if name not in conn.functions:
                await conn.db.run(_create_function, name, arity, function)
                conn.functions.add(name)
        file = condition.index_file(self.path)
        try:
            found = file_id(file)
            if conn.fx is not None and conn.fx != found:
                await conn.db.fetchall("DETACH DATABASE fx")
                conn.fx = None
            if conn.fx is None:
                if found is None or tables.not_files(file):  # none, or one SQLite would wait on
                    return False
                await conn.db.fetchall("ATTACH DATABASE ? AS fx", (self._attach_as(file),))
                conn.fx = found
        except sqlite3.Error as exc:  # no usable index: every row is looked at instead
            log.debug("The field index %s is not used: %s", file, exc)
            return False
        return True

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
            f"AND NOT {log_plans.CHECK_ROW} ORDER BY a.id DESC LIMIT 1",
            list(CHECK_NOTE_PREFIXES),
            lambda r: str(r[0]),
        )
        return found[0] if found else None

    async def last_verified_message(self) -> str | None:
        """The webhook-id of the newest verified attempt a sender posted (the check's requests
        left out), or None: walked back on the verdict's index, so the rejected posts after it
        (a flood of forgeries) cost nothing."""
        found = await self.fetch(
            f"SELECT a.webhook_id FROM attempts a WHERE a.verdict = '{VERIFIED}' "
            f"AND a.webhook_id IS NOT NULL AND NOT {log_plans.CHECK_ROW} ORDER BY a.id DESC LIMIT 1",
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
        """Messages newest first (by their last attempt). With ``text`` or ``where``: those with
        an attempt that matches, found from the newest matching attempts (an index drives, so a
        word in half the history costs what a rare one does): first the messages of the newest
        ``4 * limit`` of them, more only when those were too few."""
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
        if where is None and not search.words(text or ""):
            return await self._messages(clauses, params, limit)
        flt = LogFilter(topic=topic or None, text=text, since_ms=since_ms, where=where)
        want = max(4 * limit, 100)
        while True:
            ids, exhausted = await self._matching_messages(flt, want)
            found = await self._messages(
                [*clauses, "webhook_id IN (SELECT value FROM json_each(?))"],
                [*params, json.dumps(ids)],
                limit,
            )
            if len(found) >= limit or exhausted:
                return found
            want *= 4

    async def _matching_messages(self, flt: LogFilter, want: int) -> tuple[list[str], bool]:
        """The messages of the newest ``want`` attempts matching ``flt``, and whether those
        were all the attempts it matches."""
        found: list[str] = []
        for plan in await self._plans(flt):
            if len(found) >= want:
                break
            group = f" GROUP BY {plan.key}" if plan.grouped else ""
            sql = (
                f"SELECT a.webhook_id FROM {plan.source}"
                f"{log_plans.and_clause(plan.where, 'a.webhook_id IS NOT NULL')}{group} "
                f"ORDER BY {plan.key} DESC LIMIT ?"
            )
            found += await self.fetch(sql, [*plan.params, want - len(found)], lambda r: str(r[0]))
        return list(dict.fromkeys(found)), len(found) < want

    async def _messages(
        self, clauses: list[str], params: list[Any], limit: int
    ) -> list[MessageRow]:
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        sql = (
            "SELECT webhook_id, topic, pass_id, "
            f"CASE WHEN verified_attempts > 0 THEN '{VERIFIED}' ELSE '{REJECTED}' END, reason, "
            "attempts, first_received_at_ms, last_received_at_ms, endpoint_id, last_status "
            f"FROM messages{where} ORDER BY last_received_at_ms DESC, last_attempt_id DESC LIMIT ?"
        )
        return await self.fetch(sql, [*params, limit], lambda r: MessageRow(*r))

    async def stats(self) -> Stats:
        """The deliveries of all time, as the header shows them: the activity query over one
        bucket (requests "Check my app" sent are not deliveries)."""
        counts = (await self.activity(0, activity.ALL_TIME_MS, forwards=False)).deliveries()
        verified = sum(row.verified for row in counts)
        rejected = sum(row.rejected for row in counts)
        return Stats(
            verified + rejected, verified, rejected, sum(row.redelivered for row in counts)
        )

    async def last_id(self) -> int:
        return int(await self.one("SELECT COALESCE(MAX(id), 0) FROM attempts"))

    async def activity(
        self, since_ms: int, bucket_ms: int, *, attempts: bool = True, forwards: bool = True
    ) -> activity.Activity:
        """The one activity query (activity.py): attempts by bucket, topic and source, and
        forwards by the bucket they were queued in, from the minute holding ``since_ms`` on."""
        found: list[tuple[activity.BucketCount, int]] = []
        queued: list[tuple[activity.BucketForwards, int]] = []
        if attempts:
            sql, params = activity.attempts_query(since_ms, bucket_ms)
            found = await self.fetch(sql, params, activity.attempt_row)
        if forwards:
            sql, params = activity.forwards_query(since_ms, bucket_ms)
            queued = await self.fetch(sql, params, activity.forward_row)
        return activity.assemble(found, queued)

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

    async def last_target_of_topic(self, topic: str | None) -> str | None:
        """The target of the newest forward or replay (not the check's) of a delivery of
        ``topic``, among the last ``RECENT_FORWARDS`` forwards: where a replay most likely goes."""
        found = await self.fetch(
            "SELECT f.target FROM forwards f JOIN attempts a ON a.id = f.attempt_id "
            "WHERE f.id > (SELECT COALESCE(MAX(id), 0) FROM forwards) - ? AND f.mode != ? "
            "AND a.topic IS ? ORDER BY f.id DESC LIMIT 1",
            [RECENT_FORWARDS, CHECK_MODE, topic],
            lambda r: str(r[0]),
        )
        return found[0] if found else None

    async def forwards_for_message(self, webhook_id: str) -> list[ForwardRow]:
        return await self.fetch(
            f"SELECT {rows.FORWARD_COLUMNS} FROM forwards WHERE webhook_id = ? ORDER BY id",
            [webhook_id],
            rows.forward_from_row,
        )


RECENT_FORWARDS = 10_000  # forwards looked through for a topic's last target
_NO_BODY = rows.ATTEMPT_COLUMNS.replace(", body, ", ", x'' AS body, ")
_LOG = ", ".join(f"a.{column}" for column in rows.LOG_COLUMNS.split(", "))


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
    refused = tables.not_files(Path(path))
    if refused:  # never opened: SQLite would wait on a FIFO forever
        raise sqlite3.OperationalError(refused)
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


def oldest_attempt_id(db: sqlite3.Connection) -> int:
    """The smallest id (a prune deletes the oldest first, so it moves up): one index lookup."""
    return int(db.execute("SELECT COALESCE(MIN(id), 0) FROM attempts").fetchone()[0])


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
        clauses.append("verdict = ?")
        params.append(REJECTED)
    if received_since_ms is not None:
        clauses.append("received_at_ms >= ?")
        params.append(received_since_ms)
    params.append(limit)
    sql = (
        f"SELECT {rows.ATTEMPT_COLUMNS if with_bodies else _NO_BODY} FROM attempts "
        f"WHERE {' AND '.join(clauses)} ORDER BY id LIMIT ?"
    )
    return [rows.attempt_from_row(r) for r in db.execute(sql, params).fetchall()]


def forward_percentiles(
    db: sqlite3.Connection, since_ms: int, bucket_ms: int | None, percents: Sequence[int]
) -> dict[int, dict[int, float]]:
    """Your app's answer time (ms) at each of ``percents`` (nearest rank), per bucket of
    ``activity.forwards_query`` (``bucket_ms`` None: one group, bucket 0), over the forwards it
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
