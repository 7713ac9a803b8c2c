"""The schema file: ``<history>-schemas`` beside the history, 0600, WAL, never fsynced (it can
always be learned again from the history), and the catalog's rows in it.

A file that is damaged, foreign or of another format is deleted and made anew; nothing stored in
the history is ever at stake.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

from walletpass_tui.schemas.catalog import Catalog
from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.jsonscan import BOOLEAN, INTEGER, NULL, STRING, TYPES
from walletpass_tui.schemas.model import (
    Finding,
    GroupKey,
    GroupSchema,
    Kind,
    PathStats,
    Source,
    ValueKey,
)
from walletpass_tui.schemas.paths import MAX_VALUES, Segment
from walletpass_tui.webhooks.store import tables as history_tables

log = logging.getLogger(__name__)

SUFFIX = "-schemas"
FORMAT = 4  # PRAGMA user_version of the schema file; another one is rebuilt

_CREATE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('learned_upto', '0'), ('version', '0'),
    ('topics_not_learned', '0');
CREATE TABLE IF NOT EXISTS groups (
    grp TEXT PRIMARY KEY,
    samples INTEGER NOT NULL,
    not_json INTEGER NOT NULL,
    next_seq INTEGER NOT NULL,
    untracked BLOB NOT NULL,
    untracked_more INTEGER NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    last_webhook_id TEXT,
    skipped INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS paths (
    grp TEXT NOT NULL,
    path TEXT NOT NULL,
    parent TEXT,
    segment TEXT NOT NULL,
    key TEXT NOT NULL,
    depth INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    types TEXT NOT NULL,
    seen INTEGER NOT NULL,
    holders INTEGER NOT NULL,
    objects INTEGER NOT NULL,
    arrays INTEGER NOT NULL,
    example TEXT,
    open INTEGER NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    first_webhook_id TEXT,
    first_attempt_id INTEGER,
    last_seen_ms INTEGER NOT NULL,
    last_webhook_id TEXT,
    vals TEXT,
    PRIMARY KEY (grp, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS drift (
    id INTEGER PRIMARY KEY,
    grp TEXT NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    was TEXT,
    now TEXT,
    baseline TEXT NOT NULL,
    attempt_id INTEGER,
    webhook_id TEXT,
    seen_at_ms INTEGER NOT NULL,
    count INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    variant TEXT NOT NULL DEFAULT '',
    note TEXT,
    UNIQUE (grp, path, kind, variant)
);
CREATE INDEX IF NOT EXISTS drift_by_attempt ON drift(attempt_id);
CREATE INDEX IF NOT EXISTS drift_by_time ON drift(seen_at_ms, id);
CREATE TABLE IF NOT EXISTS templates_seen (digest BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skipped (
    attempt_id INTEGER PRIMARY KEY,
    grp TEXT NOT NULL,
    webhook_id TEXT,
    seen_at_ms INTEGER NOT NULL,
    why TEXT NOT NULL
);
"""

_TABLES = ("meta", "groups", "paths", "drift", "templates_seen", "skipped")
SKIPPED_KEPT = 100  # the latest deliveries the learner could not take, kept with why


def schemas_path(history: Path) -> Path:
    """Where the schemas learned from the history at ``history`` are kept."""
    return history.with_name(history.name + SUFFIX)


def discard(history: Path) -> None:
    """Delete the schema file and its companions: it is learned again from the history."""
    for file in history_tables.companions(schemas_path(history)):
        with contextlib.suppress(FileNotFoundError):  # already gone
            os.unlink(file)


def connect(
    history: Path, busy_timeout_ms: int, *, history_optional: bool = False
) -> sqlite3.Connection:
    """The schema file's connection, the history attached as ``history`` (read only by us); a
    damaged or foreign file is deleted and made anew. With ``history_optional`` a history that
    does not exist yet reads as an empty one (the templates are learned before any delivery)."""
    try:
        return _connect(history, busy_timeout_ms, history_optional)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and not _damaged(exc):
            raise  # locked, unreadable directory...: not the file's fault
        what = "is not one this program made" if isinstance(exc, Foreign) else "is damaged"
        log.info("the schema file of %s %s (%s): it is made anew", history, what, exc)
    discard(history)
    return _connect(history, busy_timeout_ms, history_optional)


class Foreign(sqlite3.DatabaseError):
    """What is at the schema path is not a file this program made (a symlink, another
    program's database, a table of ours with other columns): it is deleted, never written
    into (a symlink's target is left alone), and made anew."""


@functools.cache
def _layout() -> tuple[dict[str, list[tuple[Any, ...]]], set[str]]:
    """Our tables (each one's columns as ``PRAGMA table_info`` gives them) and indexes."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(_CREATE)
        return _layout_of(db)
    finally:
        db.close()


def _layout_of(db: sqlite3.Connection) -> tuple[dict[str, list[tuple[Any, ...]]], set[str]]:
    tables: dict[str, list[tuple[Any, ...]]] = {}
    indexes: set[str] = set()
    for kind, name in db.execute(
        "SELECT type, name FROM main.sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    ).fetchall():
        if kind == "table":
            tables[name] = db.execute(f"PRAGMA main.table_info({_quoted(name)})").fetchall()
        elif kind == "index":
            indexes.add(name)
        else:  # a view or a trigger: never ours
            tables[f"{kind} {name}"] = []
    return tables, indexes


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def not_ours(db: sqlite3.Connection) -> str | None:
    """Why the open database is not a schema file this program made (or is making): a table,
    index, view or trigger it never makes, or one of its tables with other columns; None when
    everything there is ours (an empty file too). Reads only."""
    tables, indexes = _layout_of(db)
    ours, our_indexes = _layout()
    for name, columns in tables.items():
        if name not in ours:
            return f"it holds {name!r:.60}, which walletpass-tui never makes"
        if columns != ours[name]:
            return f"its table {name} has other columns than walletpass-tui gives it"
    for name in indexes - our_indexes:
        return f"it holds the index {name!r:.60}, which walletpass-tui never makes"
    return None


def links(path: Path) -> str | None:
    """``<name> is a symlink`` for the first of the schema file's files that is one (a file
    this program makes is never a link: it is deleted, never followed); None when none is."""
    for file in history_tables.companions(path):
        if os.path.islink(file):
            return f"{file.name} is a symlink"
    return None


def _damaged(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return any(w in text for w in ("malformed", "not a database", "corrupt", "no such table"))


class WrongFormat(sqlite3.DatabaseError):
    """The schema file was written in another format: rebuilt."""


# What is read of a history, as an empty one in memory: a history that does not exist yet.
_EMPTY_HISTORY = """
CREATE TABLE history.attempts (id INTEGER PRIMARY KEY, webhook_id TEXT, received_at_ms INTEGER,
    topic TEXT, verdict TEXT, body BLOB, attempt_no INTEGER, body_differs INTEGER);
CREATE TABLE history.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _connect(
    history: Path, busy_timeout_ms: int, history_optional: bool = False
) -> sqlite3.Connection:
    path = schemas_path(history)
    linked = links(path)
    if linked:  # deleted by connect(), its target never opened
        raise Foreign(linked)
    for file in (history, path):
        refused = history_tables.not_files(file)
        if refused:  # never opened: SQLite would wait on a FIFO forever
            raise SchemaError(
                f"Payload schemas cannot be learned: {refused}; move that file aside or use "
                "another --home."
            )
    missing = not history.is_file()
    if missing and not history_optional:  # ATTACH would create an empty one
        raise SchemaError(f"There is no history at {history} to learn payload schemas from.")
    history_tables.make_private(path)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = OFF")  # learned again from the history if lost
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version not in (0, FORMAT):
            raise WrongFormat(f"schema file format {version}")
        foreign = not_ours(db)  # before anything is written into it
        if foreign:
            raise Foreign(f"not a schema file: {foreign}")
        db.executescript(_CREATE)
        db.execute(f"PRAGMA user_version = {FORMAT}")
        check(db)
        if missing:
            db.execute("ATTACH DATABASE ':memory:' AS history")
            db.executescript(_EMPTY_HISTORY)
        else:
            db.execute("ATTACH DATABASE ? AS history", (str(history),))
    except BaseException:
        db.close()
        raise
    return db


def check(db: sqlite3.Connection) -> None:
    """Raise DatabaseError when the file is damaged (it is small: a full quick check)."""
    row = db.execute("PRAGMA main.quick_check").fetchone()
    if row is None or row[0] != "ok":
        raise sqlite3.DatabaseError("database disk image is malformed")
    for table in _TABLES:
        db.execute(f"SELECT * FROM main.{table} LIMIT 1").fetchall()


def identity(history: Path) -> tuple[int, int] | None:
    """The schema file's (device, inode), None when it is gone: a file deleted or replaced
    under a running learner is noticed and made anew."""
    try:
        st = os.stat(schemas_path(history))
    except OSError:  # no schema file: none to reuse
        return None
    return st.st_dev, st.st_ino


# -- meta -----------------------------------------------------------------------------------------


def meta(db: sqlite3.Connection, key: str) -> int:
    row = db.execute(
        "SELECT CAST(value AS INTEGER) FROM main.meta WHERE key = ?", (key,)
    ).fetchone()
    return int(row[0]) if row else 0


def meta_text(db: sqlite3.Connection, key: str) -> str:
    row = db.execute("SELECT value FROM main.meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else ""


def set_meta_text(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute(
        "INSERT INTO main.meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def set_meta(db: sqlite3.Connection, key: str, value: int) -> None:
    db.execute(
        "INSERT INTO main.meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, str(value)),
    )


def history_top(db: sqlite3.Connection) -> int:
    """The highest row id the history ever handed out (pruned rows' ids are never reused)."""
    row = db.execute(
        "SELECT MAX(COALESCE((SELECT MAX(id) FROM history.attempts), 0), "
        "COALESCE((SELECT CAST(value AS INTEGER) FROM history.meta "
        "WHERE key = 'fts_indexed_upto'), 0))"
    ).fetchone()
    return int(row[0] if row else 0)


# -- loading --------------------------------------------------------------------------------------

_PATH_COLUMNS = (
    "path, parent, segment, key, depth, seq, types, seen, holders, objects, arrays, example, "
    "open, first_seen_ms, first_webhook_id, first_attempt_id, last_seen_ms, last_webhook_id, vals"
)
DRIFT_COLUMNS = (
    "id, grp, path, kind, was, now, baseline, attempt_id, webhook_id, seen_at_ms, count, "
    "last_seen_ms, variant, note"
)
_GROUP_COLUMNS = (
    "samples, not_json, next_seq, untracked, untracked_more, first_seen_ms, last_seen_ms, "
    "last_webhook_id, skipped"
)


class Damaged(sqlite3.DatabaseError):
    """A row of the schema file that this program did not write (a value that does not parse,
    a path without its parent): the file is damaged, deleted and learned again."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the schema file is malformed: {what}")


def count(value: object) -> int:
    """A stored count or id: an integer, never negative."""
    if type(value) is not int or value < 0:
        raise Damaged(f"{value!r:.40} is not a count")
    return value


# The last millisecond of year 9999: a stored time past it (or before 1970) is no time this
# program wrote; every time shown is printed as a date.
MAX_MS = 253_402_300_799_999


def moment(value: object) -> int:
    """A stored time in milliseconds since the epoch: an integer from 0 to MAX_MS."""
    if type(value) is not int or not 0 <= value <= MAX_MS:
        raise Damaged(f"{value!r:.40} is not a time")
    return value


def text(value: object) -> str:
    if type(value) is not str:
        raise Damaged(f"{value!r:.40} is not text")
    return value


def maybe_text(value: object) -> str | None:
    return None if value is None else text(value)


def maybe_count(value: object) -> int | None:
    return None if value is None else count(value)


def group_key(value: object) -> GroupKey:
    try:
        return GroupKey.from_stored(text(value))
    except ValueError:
        raise Damaged(f"{value!r:.40} is not a group") from None


def _json(value: object) -> Any:
    try:
        return json.loads(text(value))
    except ValueError:
        raise Damaged(f"{value!r:.40} is not JSON") from None


def _types(value: object) -> dict[str, int]:
    found = _json(value)
    if type(found) is not dict or not set(found) <= set(TYPES):
        raise Damaged(f"{value!r:.40} is not a set of JSON types")
    return {str(k): count(v) for k, v in found.items()}


def _type_list(value: object) -> tuple[str, ...]:
    found = _json(value)
    if type(found) is not list or not set(found) <= set(TYPES):
        raise Damaged(f"{value!r:.40} is not a list of JSON types")
    return tuple(found)


def path_from_row(row: tuple[Any, ...]) -> PathStats:
    (path, parent, segment, key, depth, seq, types, seen, holders, objects, arrays, example) = row[
        :12
    ]
    (open_, first_ms, first_id, first_attempt, last_ms, last_id, vals) = row[12:]
    try:
        kind = Segment(segment)
    except ValueError:
        raise Damaged(f"{segment!r:.40} is not a path segment") from None
    name = _json(key)
    if type(name) is not str:
        raise Damaged(f"{key!r:.40} is not a key")
    return PathStats(
        text(path),
        maybe_text(parent),
        kind,
        name,
        count(depth),
        seq=count(seq),
        types=_types(types),
        seen=count(seen),
        holders=count(holders),
        objects=count(objects),
        arrays=count(arrays),
        example=maybe_text(example),
        open=bool(count(open_)),
        first_seen_ms=moment(first_ms),
        first_webhook_id=maybe_text(first_id),
        first_attempt_id=maybe_count(first_attempt),
        last_seen_ms=moment(last_ms),
        last_webhook_id=maybe_text(last_id),
        values=_values(vals),
    )


_VALUE_TYPES = {STRING: str, INTEGER: int, BOOLEAN: bool, NULL: type(None)}


def _values(stored: object) -> dict[ValueKey, int] | None:
    """A path's value counts as stored: ``[[type, value, count], ...]``, or NULL for none."""
    if stored is None:
        return None
    found = _json(stored)
    if type(found) is not list or len(found) > MAX_VALUES:
        raise Damaged(f"{stored!r:.40} is not a set of values")
    out: dict[ValueKey, int] = {}
    for item in found:
        if type(item) is not list or len(item) != 3 or item[0] not in _VALUE_TYPES:
            raise Damaged(f"{item!r:.40} is not a counted value")
        kind, value, n = item
        if type(value) is not _VALUE_TYPES[kind]:
            raise Damaged(f"{value!r:.40} is not a value of type {kind}")
        out[(kind, value)] = count(n)
    return out


def values_text(values: dict[ValueKey, int] | None) -> str | None:
    if values is None:
        return None
    return json.dumps([[kind, value, n] for (kind, value), n in values.items()])


def finding_from_row(row: tuple[Any, ...]) -> Finding:
    (id_, grp, path, kind, was, now, baseline, attempt_id, webhook_id, seen_at, n, last) = row[:12]
    try:
        found = Kind(kind)
    except ValueError:
        raise Damaged(f"{kind!r:.40} is not a kind of drift") from None
    variant = text(row[12])
    if variant and found is Kind.TYPE_CHANGED and variant not in TYPES:
        raise Damaged(f"{variant!r:.40} is not a JSON type")
    note = maybe_text(row[13])
    return Finding(
        group_key(grp),
        text(path),
        found,
        maybe_text(was),
        maybe_text(now),
        _type_list(baseline),
        Source(moment(seen_at), maybe_text(webhook_id), maybe_count(attempt_id)),
        count=count(n),
        last_seen_ms=moment(last),
        id=count(id_),
        variant=variant,
        note=note,
    )


def load_group(
    db: sqlite3.Connection, key: GroupKey, *, findings: bool = True
) -> GroupSchema | None:
    row = db.execute(
        f"SELECT {_GROUP_COLUMNS} FROM main.groups WHERE grp = ?", (key.stored,)
    ).fetchone()
    if row is None:
        return None
    samples, not_json, next_seq, untracked, more, first_ms, last_ms, last_id, skipped = row
    if type(untracked) is not bytes or len(untracked) % 8:
        raise Damaged("the untracked paths are not digests")
    group = GroupSchema(
        key,
        samples=count(samples),
        not_json=count(not_json),
        next_seq=count(next_seq),
        untracked={untracked[i : i + 8] for i in range(0, len(untracked), 8)},
        untracked_more=bool(count(more)),
        first_seen_ms=moment(first_ms),
        last_seen_ms=moment(last_ms),
        last_webhook_id=maybe_text(last_id),
        skipped=count(skipped),
    )
    for path_row in db.execute(
        f"SELECT {_PATH_COLUMNS} FROM main.paths WHERE grp = ?", (key.stored,)
    ):
        stats = path_from_row(path_row)
        group.paths[stats.path] = stats
    for stats in group.paths.values():
        if (stats.parent is None) != (stats.segment is Segment.ROOT) or (
            stats.parent is not None and stats.parent not in group.paths
        ):
            raise Damaged(f"the path {stats.path!r:.60} has no parent")
    if findings:
        for drift_row in db.execute(
            f"SELECT {DRIFT_COLUMNS} FROM main.drift WHERE grp = ?", (key.stored,)
        ):
            finding = finding_from_row(drift_row)
            group.findings[finding.key] = finding
    group.reindex()
    return group


def group_keys(db: sqlite3.Connection) -> list[GroupKey]:
    return [group_key(r[0]) for r in db.execute("SELECT grp FROM main.groups")]


def load(db: sqlite3.Connection) -> Catalog:
    catalog = Catalog()
    for key in group_keys(db):
        group = load_group(db, key)
        if group is not None:
            catalog.groups[key] = group
    catalog.topics_not_learned = meta(db, "topics_not_learned")
    catalog.template_digests = set()
    for (digest,) in db.execute("SELECT digest FROM main.templates_seen"):
        if type(digest) is not bytes:
            raise Damaged("a template digest is not a digest")
        catalog.template_digests.add(digest)
    return catalog


# -- saving ---------------------------------------------------------------------------------------


def save(db: sqlite3.Connection, catalog: Catalog) -> None:
    """Write what changed since the last save (inside the caller's transaction)."""
    for group in catalog.groups.values():
        if not (
            group.changed
            or group.dirty
            or group.removed
            or group.dirty_findings
            or group.removed_findings
        ):
            continue
        _save_group(db, group)
    if catalog.new_template_digests:
        db.executemany(
            "INSERT OR IGNORE INTO main.templates_seen(digest) VALUES (?)",
            [(d,) for d in catalog.new_template_digests],
        )
        catalog.new_template_digests = []
    set_meta(db, "topics_not_learned", catalog.topics_not_learned)


def _save_group(db: sqlite3.Connection, group: GroupSchema) -> None:
    key = group.key.stored
    db.execute(
        f"INSERT OR REPLACE INTO main.groups(grp, {_GROUP_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            key,
            group.samples,
            group.not_json,
            group.next_seq,
            b"".join(sorted(group.untracked)),
            int(group.untracked_more),
            group.first_seen_ms,
            group.last_seen_ms,
            group.last_webhook_id,
            group.skipped,
        ),
    )
    if group.removed:
        db.executemany(
            "DELETE FROM main.paths WHERE grp = ? AND path = ?",
            [(key, p) for p in group.removed],
        )
    rows = []
    for path in group.dirty:
        s = group.paths.get(path)
        if s is None:
            continue
        rows.append(
            (
                key,
                s.path,
                s.parent,
                s.segment.value,
                json.dumps(s.key),  # lossless, a lone surrogate included
                s.depth,
                s.seq,
                json.dumps(s.types),
                s.seen,
                s.holders,
                s.objects,
                s.arrays,
                s.example,
                int(s.open),
                s.first_seen_ms,
                s.first_webhook_id,
                s.first_attempt_id,
                s.last_seen_ms,
                s.last_webhook_id,
                values_text(s.values),
            )
        )
    db.executemany(
        f"INSERT OR REPLACE INTO main.paths(grp, {_PATH_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    if group.removed_findings:
        db.executemany(
            "DELETE FROM main.drift WHERE id = ?", [(i,) for i in group.removed_findings]
        )
    seen: set[int] = set()
    for finding in group.dirty_findings:
        if id(finding) in seen or group.findings.get(finding.key) is not finding:
            continue  # saved already, or dropped (folded into a map) since
        seen.add(id(finding))
        if finding.id:
            db.execute(
                "UPDATE main.drift SET path = ?, count = ?, last_seen_ms = ? WHERE id = ?",
                (finding.path, finding.count, finding.last_seen_ms, finding.id),
            )
        else:
            cursor = db.execute(
                "INSERT INTO main.drift(grp, path, kind, was, now, baseline, attempt_id, "
                "webhook_id, seen_at_ms, count, last_seen_ms, variant, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    finding.path,
                    finding.kind.value,
                    finding.was,
                    finding.now,
                    json.dumps(list(finding.baseline)),
                    finding.source.attempt_id,
                    finding.source.webhook_id,
                    finding.source.seen_at_ms,
                    finding.count,
                    finding.last_seen_ms,
                    finding.variant,
                    finding.note,
                ),
            )
            finding.id = int(cursor.lastrowid or 0)
    group.dirty.clear()
    group.removed.clear()
    group.dirty_findings.clear()
    group.removed_findings.clear()
    group.changed = False


def clear_topics(db: sqlite3.Connection) -> None:
    """Forget every topic group (the templates stay: they are not in the history)."""
    db.execute("DELETE FROM main.groups WHERE grp != 'templates'")
    db.execute("DELETE FROM main.paths WHERE grp != 'templates'")
    db.execute("DELETE FROM main.drift WHERE grp != 'templates'")
    db.execute("DELETE FROM main.skipped WHERE grp != 'templates'")
    set_meta(db, "learned_upto", 0)
    set_meta_text(db, "learned_mark", "")
    set_meta(db, "topics_not_learned", 0)


def record_skipped(
    db: sqlite3.Connection,
    key: GroupKey,
    attempt_id: int,
    webhook_id: str | None,
    at_ms: int,
    why: str,
) -> None:
    """Keep why a delivery could not be learned (the latest SKIPPED_KEPT are kept)."""
    db.execute(
        "INSERT OR REPLACE INTO main.skipped(attempt_id, grp, webhook_id, seen_at_ms, why) "
        "VALUES (?, ?, ?, ?, ?)",
        (attempt_id, key.stored, webhook_id, at_ms, why),
    )
    db.execute(
        "DELETE FROM main.skipped WHERE attempt_id <= (SELECT attempt_id FROM main.skipped "
        "ORDER BY attempt_id DESC LIMIT 1 OFFSET ?)",
        (SKIPPED_KEPT,),
    )
