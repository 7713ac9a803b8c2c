"""The catalog kept in step with the schema file and with the history it learns from.

One ``Book`` per connection, used from one thread at a time. ``step()`` learns the next rows of
the history (by row id) in one transaction of the schema file; the history is only read, through
WAL, so a delivery's commit never waits for learning. Every write transaction starts by writing
the file's ``version`` and checks it against the one this book last wrote: when another program
(a second learner on the same history, ``rebuild`` from the command line) changed the file, the
catalog is loaded again first, so two programs never learn a row twice or lose each other's work.

Nothing a history holds stops learning:

* a delivery the catalog cannot take (whatever it raises) is recorded as skipped, with why, and
  passed: the step is made again without it;
* a schema file whose rows this program did not write is damaged: deleted and learned again;
* a history started over at its path (deleted under the receiver, or replaced) is followed: the
  file at the path is attached again, and when it is not the history learned so far (the last
  row learned is not there as it was) every topic is learned again from it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from walletpass_tui.schemas import schema_file, storage
from walletpass_tui.schemas.catalog import MAX_GROUPS, Catalog, Delivery
from walletpass_tui.schemas.drift import DRIFT_AFTER
from walletpass_tui.schemas.model import Finding, GroupKey
from walletpass_tui.text import printable
from walletpass_tui.webhooks.models import VERIFIED, now_ms

log = logging.getLogger(__name__)

CHUNK = 512  # history rows per learning transaction
REBUILD_CHUNK = 4096

Progress = Callable[[int, int], None]

# Each attempt after the last one learned, in row-id order. Only a verified attempt's body is
# read, and not that of a redelivery (same webhook-id, same body as an earlier verified attempt):
# it would teach nothing new and count one message twice. The earlier attempts of a message are
# found through its own index (``attempts_by_message``: webhook-id, id); the ``+`` keeps SQLite
# from reading every verified attempt before this one through ``attempts_by_verdict`` instead, a
# cost that would grow with the history (tests/schemas/test_schema_query_plans.py).
_NEXT_ROWS = f"""
SELECT a.id, a.webhook_id, a.received_at_ms, a.topic, a.verdict,
    CASE WHEN a.verdict = '{VERIFIED}' AND NOT (a.attempt_no > 1 AND a.body_differs = 0
        AND EXISTS (SELECT 1 FROM history.attempts b WHERE b.webhook_id = a.webhook_id
            AND b.id < a.id AND +b.verdict = '{VERIFIED}'))
    THEN a.body END
FROM history.attempts a WHERE a.id > ? ORDER BY a.id LIMIT ?
"""


@dataclass
class Step:
    rows: int = 0  # history rows read (every verdict)
    verified: int = 0  # ... of them verified
    learned: int = 0  # verified deliveries learned from (a redelivery of a body is not)
    skipped: int = 0  # ... of them the catalog could not take (see Unlearnable)
    passed: list[tuple[str | None, int, str]] = field(default_factory=list)  # id, row, why
    # Groups still learning (at most DRIFT_AFTER samples) that it taught: their samples after
    # it, and the last row that taught them.
    warming: dict[GroupKey, tuple[int, int]] = field(default_factory=dict)
    findings: list[tuple[int | None, list[Finding]]] = field(default_factory=list)
    upto: int = 0


class Unlearnable(Exception):
    """Learning the delivery stored as ``attempt_id`` raised ``cause``: it is skipped."""

    def __init__(self, attempt_id: int, cause: BaseException) -> None:
        super().__init__(attempt_id, cause)
        self.attempt_id = attempt_id
        self.why = f"{type(cause).__name__}: {cause}"[:WHY_CHARS]


WHY_CHARS = 200
WARNINGS_KEPT = 20  # skipped deliveries logged as warnings; the later ones at debug level


def _history_id(history: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(history)
    except OSError:  # no history at the path (being started over): none to follow
        return None
    return st.st_dev, st.st_ino


def _mark(received_at_ms: object, webhook_id: object) -> str:
    """What tells the last row learned from another row of the same id: when it arrived, its
    webhook-id."""
    return f"{received_at_ms}:{webhook_id}"


class Book:
    def __init__(
        self, history: Path, busy_timeout_ms: int = 5000, *, history_optional: bool = False
    ) -> None:
        self.history = Path(history)
        self.busy_timeout_ms = busy_timeout_ms
        self.history_optional = history_optional  # templates may be learned before any delivery
        self.db: sqlite3.Connection | None = None
        self.catalog = Catalog()
        self.version = -1
        self.upto = 0
        self._identity: tuple[int, int] | None = None
        self._history_id: tuple[int, int] | None = None
        self._history_attached = False
        self._skip: dict[int, str] = {}  # rows to pass over in the step being made again
        self.skipped = 0  # deliveries skipped by this book (the warnings logged)
        self._said_topics_not_learned = False

    # -- the file ----------------------------------------------------------------------------

    def open(self) -> None:
        """Open (or make) the schema file and load what it holds."""
        self.close()
        self._history_id = _history_id(self.history)
        self.db = schema_file.connect(
            self.history, self.busy_timeout_ms, history_optional=self.history_optional
        )
        self._identity = schema_file.identity(self.history)
        self._history_attached = any(  # not the empty stand-in of a history yet to be made
            name == "history" and file for _, name, file in self.db.execute("PRAGMA database_list")
        )
        if self._history_attached:
            self._transaction(self._check_history)

    def close(self) -> None:
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):  # closing a connection being dropped
                self.db.close()
            self.db = None

    def ensure_open(self) -> sqlite3.Connection:
        """The connection; a schema file deleted or replaced meanwhile is made anew, and a
        history started over at its path is attached again (one ``stat`` of each a step)."""
        if (
            self.db is None
            or schema_file.identity(self.history) != self._identity
            or _history_id(self.history) != self._history_id
        ):
            self.open()
        assert self.db is not None
        return self.db

    def recover(self) -> None:
        """After a failed step: a damaged file is deleted and made anew; anything else (the
        history locked by another program) is tried again later."""
        try:
            if self.db is not None:
                schema_file.check(self.db)
        except sqlite3.DatabaseError as exc:
            log.info("the schema file of %s is damaged (%s): it is made anew", self.history, exc)
            self.close()
            schema_file.discard(self.history)
        self.version = -1  # whatever was half learned in memory is loaded again

    def _reload(self, db: sqlite3.Connection) -> None:
        self.catalog = storage.load(db)
        self.upto = storage.meta(db, "learned_upto")
        self.version = storage.meta(db, "version")

    def _transaction(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``work`` in one write transaction of the schema file, the catalog loaded again
        first if anybody else wrote the file since; on failure the catalog is loaded again. A
        file whose rows are not ours is made anew, and ``work`` run on the new one."""
        try:
            return self._once(work)
        except storage.Damaged as exc:
            log.info("the schema file of %s is damaged (%s): it is made anew", self.history, exc)
            self.close()
            schema_file.discard(self.history)
            self.open()
            return self._once(work)

    def _once(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        db = self.ensure_open()
        db.execute("BEGIN")
        try:
            # The first statement writes: the file's write lock is taken now (the history's
            # never is), so the version read next cannot change before the commit.
            db.execute("UPDATE main.meta SET value = value WHERE key = 'version'")
            if storage.meta(db, "version") != self.version:
                self._reload(db)
            result = work(db)
            self.version += 1
            storage.set_meta(db, "version", self.version)
            storage.save(db, self.catalog)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # the error that led here is raised
                    db.execute("ROLLBACK")
            self.version = -1
            raise
        return result

    def _check_history(self, db: sqlite3.Connection) -> None:
        """A schema file learned from another history than the one at the path (the history
        was deleted or moved aside and a new one started): start over. It is another one when
        it never had the last row learned, or has another row of that id (a row pruned since
        is no sign either way)."""
        if not self.upto:
            return
        if self.upto > storage.history_top(db):
            self._forget_topics(db)
            return
        mark = storage.meta_text(db, "learned_mark")
        row = db.execute(
            "SELECT received_at_ms, webhook_id FROM history.attempts WHERE id = ?", (self.upto,)
        ).fetchone()
        if mark and row is not None and _mark(*row) != mark:
            self._forget_topics(db)

    def _forget_topics(self, db: sqlite3.Connection) -> None:
        if self.upto:
            log.info(
                "the schemas of %s were learned from another history: learned again", self.history
            )
        storage.clear_topics(db)
        templates = {k: g for k, g in self.catalog.groups.items() if k.templates}
        self.catalog.groups = templates
        self.catalog.topics_not_learned = 0
        self.upto = 0

    # -- learning ----------------------------------------------------------------------------

    def step(self, limit: int = CHUNK) -> Step:
        """Learn up to ``limit`` history rows past the last one learned. A delivery the catalog
        cannot take is skipped (logged with why, counted in its group, kept in the file) and
        the step made again without it."""
        while True:
            try:
                step: Step = self._transaction(lambda db: self._learn_rows(db, limit))
            except Unlearnable as exc:
                if not exc.attempt_id or exc.attempt_id in self._skip:
                    raise exc.__cause__ or exc from None  # not a delivery's doing: a failure
                self._skip[exc.attempt_id] = exc.why
                continue
            self._skip = {a: w for a, w in self._skip.items() if a > step.upto}
            self._say_topics_not_learned()
            for webhook_id, attempt_id, why in step.passed:  # said once it is stored
                self.skipped += 1
                log.log(
                    logging.WARNING if self.skipped <= WARNINGS_KEPT else logging.DEBUG,
                    "The delivery %s (row %d) could not be learned (%s); it is skipped and "
                    "learning goes on.",
                    webhook_id,
                    attempt_id,
                    why,
                )
            return step

    def _learn_rows(self, db: sqlite3.Connection, limit: int) -> Step:
        # Every step, not only when the history's file changed identity: a history deleted
        # and made again once nothing held it open may get the same inode back.
        if self._history_attached:
            self._check_history(db)
        step = Step(upto=self.upto)
        rows = db.execute(_NEXT_ROWS, (self.upto, limit))
        current = 0
        last: tuple[int, str | None] = (0, None)
        try:
            with self.catalog.batch():
                for attempt_id, webhook_id, at_ms, topic, verdict, body in rows:
                    step.rows += 1
                    step.upto = attempt_id
                    last = (at_ms, webhook_id)
                    step.verified += verdict == VERIFIED
                    if body is None:
                        continue  # rejected, or a redelivery of a body already learned
                    why = self._skip.get(attempt_id)
                    if why is not None:
                        key = self.catalog.skip(topic)
                        if key is not None:
                            storage.record_skipped(db, key, attempt_id, webhook_id, at_ms, why)
                        step.passed.append((webhook_id, attempt_id, why))
                        step.skipped += 1
                        continue
                    current = attempt_id  # whatever fails from here is this delivery's doing
                    if type(at_ms) is int:  # a time no date can show is never stored
                        at_ms = min(max(at_ms, 0), storage.MAX_MS)
                    delivery = Delivery(attempt_id, webhook_id, at_ms, topic, verdict, bytes(body))
                    found = self.catalog.learn(delivery)
                    step.learned += 1
                    if found:
                        step.findings.append((attempt_id, found))
                    group = self.catalog.groups.get(GroupKey.of_topic(topic))
                    if group is not None and group.samples <= DRIFT_AFTER:
                        step.warming[group.key] = (group.samples, attempt_id)
        except (sqlite3.Error, Unlearnable):
            raise  # the file's or the history's problem, not the delivery's
        except Exception as exc:
            raise Unlearnable(current, exc) from exc
        self.upto = step.upto
        storage.set_meta(db, "learned_upto", self.upto)
        if step.rows:
            storage.set_meta_text(db, "learned_mark", _mark(*last))
        return step

    def _say_topics_not_learned(self) -> None:
        """Once per book: a topic from the wire was not learned (MAX_GROUPS were already)."""
        topic = self.catalog.first_not_learned
        if topic is None or self._said_topics_not_learned:
            return
        self._said_topics_not_learned = True
        log.warning(
            "Payload schemas are learned for at most %d topics from the wire (the service's own "
            "topics always); deliveries of %s and of any other new topic are stored, but their "
            "schemas are not learned ('walletpass-tui schema list' counts them).",
            MAX_GROUPS,
            printable(topic, 60),
        )

    def catch_up(self, limit: int = CHUNK) -> Step:
        """Learn every row committed so far."""
        total = Step(upto=self.upto)
        while True:
            step = self.step(limit)
            total.rows += step.rows
            total.verified += step.verified
            total.learned += step.learned
            total.skipped += step.skipped
            total.findings += step.findings
            total.upto = step.upto
            if step.rows < limit:
                return total

    def rebuild(self, progress: Progress | None = None) -> int:
        """Forget every topic and learn the whole history again; returns the deliveries learned.

        ``progress(done, total)`` is called after each chunk: verified deliveries read so far,
        and the verified deliveries in the history when the rebuild started (``done`` reaches
        ``total``, and passes it when more arrived meanwhile).
        """

        def start(db: sqlite3.Connection) -> int:
            self._forget_topics(db)
            row = db.execute(
                f"SELECT COUNT(*) FROM history.attempts WHERE verdict = '{VERIFIED}'"
            ).fetchone()
            return int(row[0])

        total = int(self._transaction(start))
        done = learned = 0
        if progress is not None:
            progress(0, total)
        while True:
            step = self.step(REBUILD_CHUNK)
            done += step.verified
            learned += step.learned
            if progress is not None:
                progress(done, total)
            if step.rows < REBUILD_CHUNK:
                return learned

    def learn_templates(
        self, templates: Iterable[Any], seen_at_ms: int | None = None
    ) -> list[Finding]:
        """Learn from the template objects of ``GET passTemplates``."""
        when = now_ms() if seen_at_ms is None else seen_at_ms
        items = list(templates)
        return self._transaction(lambda db: self.catalog.learn_templates(items, when))

    def top(self) -> int:
        """The history's highest row id now."""
        db = self.ensure_open()
        return storage.history_top(db)
