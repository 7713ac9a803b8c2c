"""``--where``: a field query (the dashboard filter's language) read from the command line.

Everything the query cannot be read as is a usage error (exit 2) in one sentence: a term that does
not parse, one still unfinished (``data.platform:`` with no value), a path no delivery has shown
(named with the nearest known ones), a ``topic:`` or ``verdict:`` that contradicts ``--topic`` or
``--verdict``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.query.condition import FieldCondition
from walletpass_tui.query.filters import to_filter
from walletpass_tui.query.known import load_known, unknown_path_problem
from walletpass_tui.query.language import parse
from walletpass_tui.query.tree import All, Node, SourceIs
from walletpass_tui.webhooks.models import LogFilter


def read_where(text: str, settings: Settings) -> Node | None:
    """The query's tree; UsageError for anything it cannot be read as."""
    parsed = parse(text)
    for problem in (*parsed.problems, *parsed.unfinished):
        raise UsageError(f"--where: {problem}")
    if settings.database_path.exists():
        unknown = unknown_path_problem(parsed.node, load_known(settings.database_path))
        if unknown is not None:
            raise UsageError(f"--where: {unknown}")
    return parsed.node


def _agree(flag: str, given: str | None, queried: str | None) -> str | None:
    if given and queried and given != queried:
        raise UsageError(
            f"--{flag} {given} and {flag}:{queried} in --where ask for different things; give one."
        )
    return given or queried


def log_filter(
    args: argparse.Namespace,
    settings: Settings,
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> LogFilter:
    """The filter of ``--topic``, ``--verdict``, ``--since``, ``--until``, ``--search`` and
    ``--where``."""
    base = LogFilter(
        topic=args.topic,
        verdict=args.verdict,
        text=args.search,
        since_ms=since_ms,
        until_ms=until_ms,
    )
    text = getattr(args, "where", None)
    if not text:
        return base
    queried = to_filter(read_where(text, settings))
    words = " ".join(w for w in (args.search, queried.text) if w) or None
    return replace(
        queried,
        topic=_agree("topic", args.topic, queried.topic),
        verdict=_agree("verdict", args.verdict, queried.verdict),  # type: ignore[arg-type]  # one of the two
        text=words,
        since_ms=since_ms,
        until_ms=until_ms,
    )


def message_condition(flt: LogFilter) -> FieldCondition | None:
    """What ``events list`` asks of a message's attempts beyond its own columns: the query's
    condition, with its ``source:`` (a message has none of its own)."""
    parts: list[Node] = []
    if flt.where is not None and isinstance(flt.where, FieldCondition):
        parts.append(flt.where.node)
    if flt.source is not None:
        parts.append(SourceIs(flt.source))
    if not parts:
        return None
    return FieldCondition(parts[0] if len(parts) == 1 else All(tuple(parts)))
