"""A query's text as the ``LogFilter`` the store and the live log filter by, and back.

Terms that every match must have and that the store filters on by its columns (the words, one
``topic:``, one ``verdict:``, one ``source:``) go into the filter's own fields, so a search keeps
its trigram index; everything else (field terms, negations, groups, OR) becomes its ``where``, a
``FieldCondition``.
"""

from __future__ import annotations

from walletpass_tui.query.condition import FieldCondition
from walletpass_tui.query.language import parse
from walletpass_tui.query.tree import All, AnyOf, Node, Parsed, SourceIs, TopicIs, VerdictIs, Word
from walletpass_tui.webhooks.models import (
    CHECK,
    REJECTED,
    VERIFIED,
    Attempt,
    LogFilter,
    Source,
    StoredVerdict,
    is_check_note,
)
from walletpass_tui.webhooks.store.search import matches_text


def to_filter(node: Node | None) -> LogFilter:
    """The filter for a parsed query (an empty one for None)."""
    if node is None:
        return LogFilter()
    topic: str | None = None
    verdict: StoredVerdict | None = None
    source: Source | None = None
    words: list[str] = []
    rest: list[Node] = []
    for part in node.parts if isinstance(node, All) else (node,):
        if isinstance(part, Word):
            words.append(part.text)
        elif isinstance(part, TopicIs) and topic is None:
            topic = part.topic
        elif isinstance(part, VerdictIs) and verdict is None:
            verdict = part.verdict
        elif isinstance(part, SourceIs) and source is None:
            source = part.source
        else:
            rest.append(part)
    where = None
    if rest:
        where = FieldCondition(rest[0] if len(rest) == 1 else All(tuple(rest)))
    return LogFilter(
        topic=topic, verdict=verdict, source=source, text=" ".join(words) or None, where=where
    )


def parse_filter(text: str) -> tuple[LogFilter, Parsed]:
    """``text`` read as a query: the filter, and what the parser said (its problems)."""
    parsed = parse(text)
    return to_filter(parsed.node), parsed


def filter_text(flt: LogFilter) -> str:
    """The filter written back in the query language (the filter box, the pane's title)."""
    parts: list[str] = []
    if flt.topic:
        parts.append(f"topic:{flt.topic}")
    if flt.verdict:
        parts.append(f"verdict:{flt.verdict}")
    if flt.source:
        parts.append(f"source:{flt.source}")
    if flt.text:
        parts.append(flt.text)
    if flt.where is not None:
        where = flt.where
        grouped = parts and isinstance(where, FieldCondition) and isinstance(where.node, AnyOf)
        parts.append(f"({where.text()})" if grouped else where.text())
    return " ".join(parts)


def matches(flt: LogFilter, attempt: Attempt) -> bool:
    """Whether one attempt (a live row, a row ``events tail`` reads) belongs in a log filtered by
    ``flt``: the store's own rules, in memory."""
    if flt.topic and attempt.topic != flt.topic:
        return False
    if flt.verdict == VERIFIED and attempt.verdict != VERIFIED:
        return False
    if flt.verdict == REJECTED and attempt.verdict == VERIFIED:
        return False
    if flt.since_ms is not None and attempt.received_at_ms < flt.since_ms:
        return False
    if flt.until_ms is not None and attempt.received_at_ms >= flt.until_ms:
        return False
    if flt.source is not None and is_check_note(attempt.note) != (flt.source == CHECK):
        return False
    if flt.text and not matches_text(flt.text, attempt):
        return False
    return flt.where is None or flt.where.matches(attempt)
