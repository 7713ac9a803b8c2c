"""The catalog's rows in the schema file (``schema_file.py`` opens it): read back, every value
checked (a row this program did not write is damage: the file is made anew), and written, only
what changed since the last save.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from walletpass_tui.schemas.catalog import Catalog
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

SKIPPED_KEPT = 100  # the latest deliveries the learner could not take, kept with why


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
