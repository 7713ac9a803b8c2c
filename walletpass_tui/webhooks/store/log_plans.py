"""How a filtered log is read: the statements (``Plan``) that list or count the attempts a
``LogFilter`` selects, driven by the search index, a field condition's index or the row ids, and
the count the per-minute table answers on its own. Pure SQL building: the store's reader runs them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from walletpass_tui.webhooks.models import (
    CHECK,
    CHECK_NOTE_PREFIXES,
    CHECK_NOTE_SQL,
    RECEIVED,
    REJECTED,
    VERIFIED,
    LogFilter,
)
from walletpass_tui.webhooks.store import activity, search

# A request the check sent (its note says so: models.is_check_note); a NULL note is not one.
CHECK_ROW = CHECK_NOTE_SQL.format(note="a.note")


@dataclass(frozen=True)
class Plan:
    """One statement's part of a filtered log: ``FROM source``, the id column to order by, the
    ``WHERE`` clause and its parameters; ``grouped``: a row may come twice (group by the key)."""

    source: str
    key: str
    where: str
    params: list[Any]
    grouped: bool = False


def plans(
    flt: LogFilter | None,
    index: search.IndexUse,
    upto: int | None,
    text_upto: int | None,
    *,
    before_id: int | None = None,
    after_id: int | None = None,
    counting: bool = False,
    within: tuple[int, int] | None = None,
) -> list[Plan]:
    """How to read a log filtered by ``flt`` (``counting``: to count it; ``within``: only the
    row ids ``low < id <= high``).

    With text to find, the trigram index drives the query in rowid order (``f.rowid``): the newest
    rows of a common word come at once instead of after every match was collected and sorted.
    Rows committed past its mark (``text_upto``: the indexer runs behind the writer) come first,
    looked at one by one, so a search finds the newest deliveries while the index catches up.
    Without text, a condition whose index can list its rows (``RowCondition.driven``) drives it
    the same way, after a first statement for the rows its index does not hold yet (past
    ``upto``).

    Each statement bounds its id column once from below and once from above (the tightest of
    the page's edge, the slice and the index's mark): given two upper bounds, SQLite may seek by
    the looser one and test the other on every row it passes.
    """
    text = text_of(flt)
    condition = flt.where if flt is not None else None
    query = search.index_query(text, index)
    low = max(after_id or 0, within[0] if within else 0)
    high = TOP if before_id is None else before_id - 1
    if within:
        high = min(high, within[1])

    def bounded(key: str, floor: int, ceiling: int) -> tuple[str, list[Any]]:
        above, below = max(low, floor), min(high, ceiling)
        clauses = [f"{key} > ?"] if above > 0 else []
        clauses += [f"{key} <= ?"] if below < TOP else []
        values = [v for v, used in ((above, above > 0), (below, below < TOP)) if used]
        return " AND ".join(clauses) or "1", values

    if query is not None and text_upto is not None:
        later = plan_for(flt, "attempts a", "a.id", [bounded("a.id", text_upto, TOP)], upto)
        first = plan_for(
            flt,
            search.JOINED,
            "f.rowid",
            [("f.attempts_fts MATCH ?", [query]), bounded("f.rowid", 0, text_upto)],
            upto,
        )
        return [later, first]
    if condition is not None and upto is not None:
        driven = condition.driven(upto, counting=counting)
        if driven is not None:
            driver, rest = driven
            later = plan_for(flt, "attempts a", "a.id", [bounded("a.id", upto, TOP)], None)
            first = plan_for(
                replace(flt, where=rest) if flt is not None else None,
                driver.source,
                driver.key,
                [(" AND ".join(driver.clauses), driver.params), bounded(driver.key, 0, upto)],
                upto,
            )
            return [later, replace(first, grouped=True)]
    return [plan_for(flt, "attempts a", "a.id", [bounded("a.id", 0, TOP)], upto)]


TOP = 2**63 - 1  # above every row id


def count_sql(plans: list[Plan]) -> tuple[str, list[Any]]:
    """One statement adding up every plan's count."""
    parts: list[str] = []
    params: list[Any] = []
    for plan in plans:
        if plan.grouped:  # in key order already: grouping streams
            parts.append(
                f"(SELECT COUNT(*) FROM (SELECT 1 FROM {plan.source}{plan.where} "
                f"GROUP BY {plan.key}))"
            )
        else:
            parts.append(f"(SELECT COUNT(*) FROM {plan.source}{plan.where})")
        params.extend(plan.params)
    return "SELECT " + " + ".join(parts), params


def and_clause(where: str, clause: str) -> str:
    return f"{where} AND {clause}" if where else f" WHERE {clause}"


def text_of(flt: LogFilter | None) -> str:
    return (flt.text if flt is not None else None) or ""


def plan_for(
    flt: LogFilter | None,
    source: str,
    key: str,
    extra: list[tuple[str, Sequence[Any]]],
    upto: int | None,
) -> Plan:
    params: list[Any] = []
    clauses: list[str] = []
    for clause, values in extra:
        clauses.append(clause)
        params.extend(values)
    if flt is not None:
        if flt.topic:
            clauses.append("a.topic = ?")
            params.append(flt.topic)
        if flt.verdict == VERIFIED:
            clauses.append("a.verdict = ?")
            params.append(VERIFIED)
        elif flt.verdict == REJECTED:  # through attempts_by_verdict: the two are all there is
            clauses.append("a.verdict = ?")
            params.append(REJECTED)
        if flt.since_ms is not None:
            clauses.append("a.received_at_ms >= ?")
            params.append(flt.since_ms)
        if flt.until_ms is not None:
            clauses.append("a.received_at_ms < ?")
            params.append(flt.until_ms)
        if flt.source in (CHECK, RECEIVED):
            clauses.append(CHECK_ROW if flt.source == CHECK else f"NOT {CHECK_ROW}")
            params.extend(CHECK_NOTE_PREFIXES)
        if flt.where is not None:
            clauses.append(flt.where.sql(params, upto))
    clauses.extend(search.word_clauses(text_of(flt), params))
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    return Plan(source, key, where, params)


def counted_by_minute(flt: LogFilter | None) -> tuple[str, list[Any]] | None:
    """The count of ``flt`` from the counts by minute, when they answer it (no filter, or only
    a topic, a verdict, a source); None otherwise."""
    flt = flt or LogFilter()
    if flt != LogFilter(topic=flt.topic, verdict=flt.verdict, source=flt.source):
        return None
    column = {VERIFIED: "verified", REJECTED: "rejected"}.get(
        flt.verdict or "", "verified + rejected"
    )
    clauses: list[str] = []
    params: list[Any] = []
    if flt.topic:
        clauses.append("topic = ?")
        params.append(flt.topic)
    if flt.source in (CHECK, RECEIVED):
        clauses.append("source = ?")
        params.append(activity.CHECK_SOURCE if flt.source == CHECK else activity.RECEIVED_SOURCE)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    return f"SELECT COALESCE(SUM({column}), 0) FROM activity{where}", params
