"""The event log's filter: what the user types after ``/``, and matching live rows against it.

The syntax is the query language of ``walletpass_tui.query`` (``events list --where`` reads the
same): words (each found as part of a webhook id, topic or body, as the store's search finds it:
``forged`` finds ``msg_forged00036``), ``topic:``, ``verdict:``, ``source:`` and field terms::

    pass_0042                    text
    topic:activated              topic pass.activated (``topic:pass.activated`` is the same)
    verdict:rejected  is:ok      verdict (verified/ok, rejected/bad)
    source:received              what senders posted, without the check's requests
    data.platform:google         a field of the body (data.balance>10, has:data.tier, ...)

Rows that arrive while a filter is active are matched here, in memory, so the live view never waits
for the search or field index (filled just after each commit). The text match is the store's own
``matches_text`` and the field test the condition's own ``matches``, so a live row and a stored
one match the same queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from walletpass_tui.query import filters
from walletpass_tui.query.known import KnownPaths, drop_unknown, unknown_path_problem
from walletpass_tui.webhooks.models import Attempt, LogFilter

PROBLEM_SEPARATOR = " · "  # between two problems of one filter, on the line under the log


@dataclass(frozen=True)
class ParsedFilter:
    filter: LogFilter
    problem: str | None = None  # a term that could not be understood, said plainly


def parse_filter(text: str, known: KnownPaths | None = None) -> ParsedFilter:
    """``text`` as a LogFilter; a term that cannot be read (an unknown topic, a path the history
    has never shown when ``known`` is given) is left out and said, not guessed. A path no
    delivery has shown is said first, whatever else is wrong beside it (else it would read as
    "nothing matches"), then the first term that does not parse."""
    found, parsed = filters.parse_filter(text)
    problems = [parsed.problem] if parsed.problem is not None else []
    if known is not None:
        unknown = unknown_path_problem(parsed.node, known)
        if unknown is not None:
            problems.insert(0, unknown)
            found = filters.to_filter(drop_unknown(parsed.node, known))
    return ParsedFilter(found, PROBLEM_SEPARATOR.join(problems) or None)


def filter_text(flt: LogFilter) -> str:
    """The filter written back in the syntax above (for the input and the pane title)."""
    return filters.filter_text(flt)


def matches(flt: LogFilter, attempt: Attempt) -> bool:
    """Whether a freshly stored ``attempt`` belongs in a log filtered by ``flt``."""
    return filters.matches(flt, attempt)
