"""The event log's filter: what the user types after ``/``, and matching live rows against it.

Syntax: free words (each found as part of a webhook id, topic or body, as the store's search finds
it: ``forged`` finds ``msg_forged00036``) plus optional ``topic:`` and ``verdict:`` terms, in any order::

    pass_0042                    text
    topic:activated              topic pass.activated (``topic:pass.activated`` is the same)
    verdict:rejected  is:ok      verdict (verified/ok, rejected/bad)
    source:received              what senders posted, without the check's requests
    source:check                 only the requests "Check my app" sent

Rows that arrive while a filter is active are matched here, in memory, so the live view never waits
for the search index (filled just after each commit). The text match is the store's own
``matches_text``, so a live row and a searched one match the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from walletpass_tui.api.topics import TopicError, parse_topic
from walletpass_tui.webhooks.models import (
    CHECK,
    RECEIVED,
    REJECTED,
    VERIFIED,
    Attempt,
    LogFilter,
    Source,
    StoredVerdict,
    is_check_note,
)
from walletpass_tui.webhooks.store.search import matches_text

_VERDICT_WORDS: dict[str, StoredVerdict] = {
    "verified": VERIFIED,
    "ok": VERIFIED,
    "good": VERIFIED,
    "valid": VERIFIED,
    "rejected": REJECTED,
    "bad": REJECTED,
    "invalid": REJECTED,
    "failed": REJECTED,
}
_SOURCE_WORDS: dict[str, Source] = {
    "received": RECEIVED,
    "service": RECEIVED,
    "sender": RECEIVED,
    "delivery": RECEIVED,
    "deliveries": RECEIVED,
    "check": CHECK,
    "checks": CHECK,
}
_TOPIC_KEYS = ("topic", "type")
_VERDICT_KEYS = ("verdict", "is")
_SOURCE_KEYS = ("source", "from")


@dataclass(frozen=True)
class ParsedFilter:
    filter: LogFilter
    problem: str | None = None  # a term that could not be understood, said plainly


def _topic(value: str) -> tuple[str | None, str | None]:
    """The full topic name for ``value`` read as everywhere else (``api.topics``), or why not."""
    try:
        return parse_topic(value.lower()), None
    except TopicError as error:  # the reason is the answer
        return None, str(error)


def parse_filter(text: str) -> ParsedFilter:
    """``text`` as a LogFilter; unknown ``topic:``/``verdict:`` values are reported, not guessed."""
    topic: str | None = None
    verdict: StoredVerdict | None = None
    source: Source | None = None
    words: list[str] = []
    problem: str | None = None
    for token in text.split():
        key, sep, value = token.partition(":")
        key = key.lower()
        if sep and key in _TOPIC_KEYS:
            topic, topic_problem = _topic(value) if value else (None, None)
            problem = topic_problem or problem
        elif sep and key in _VERDICT_KEYS:
            verdict = _VERDICT_WORDS.get(value.lower()) if value else None
            if value and verdict is None:
                problem = f"unknown verdict {value!r}: use verified or rejected"
        elif sep and key in _SOURCE_KEYS:
            source = _SOURCE_WORDS.get(value.lower()) if value else None
            if value and source is None:
                problem = f"unknown source {value!r}: use received or check"
        else:
            words.append(token)
    return ParsedFilter(
        LogFilter(topic=topic, verdict=verdict, text=" ".join(words) or None, source=source),
        problem,
    )


def filter_text(flt: LogFilter) -> str:
    """The filter written back in the syntax above (for the input and the pane title)."""
    parts: list[str] = []
    if flt.topic:
        parts.append(f"topic:{flt.topic}")
    if flt.verdict:
        parts.append(f"verdict:{flt.verdict}")
    if flt.source:
        parts.append(f"source:{flt.source}")
    if flt.text:
        parts.append(flt.text)
    return " ".join(parts)


def matches(flt: LogFilter, attempt: Attempt) -> bool:
    """Whether a freshly stored ``attempt`` belongs in a log filtered by ``flt``."""
    if flt.topic and attempt.topic != flt.topic:
        return False
    if flt.verdict == VERIFIED and attempt.verdict != VERIFIED:
        return False
    if flt.verdict == REJECTED and attempt.verdict == VERIFIED:
        return False
    if flt.since_ms is not None and attempt.received_at_ms < flt.since_ms:
        return False
    if flt.source is not None and is_check_note(attempt.note) != (flt.source == CHECK):
        return False
    return not flt.text or matches_text(flt.text, attempt)
