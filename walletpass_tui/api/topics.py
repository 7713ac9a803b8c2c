"""The one place for topic names: ``activated`` and ``pass.activated`` mean the same everywhere.

The service knows two topics (``pass.activated``, ``pass.deactivated``). A person may type either
the full name or the part after ``pass.``; anything else is refused with a sentence
listing the known names. The command line (``events list --topic``, ``--forward-to TOPIC=URL``,
``trigger``, ``endpoints create/import``) and the dashboard's filter all call :func:`parse_topic`.
"""

from __future__ import annotations

from collections.abc import Iterable

from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable

__all__ = [
    "TOPICS",
    "UNKNOWN_TOPIC",
    "TopicError",
    "parse_topic",
    "parse_topics",
    "short_topic",
    "topic_label",
]

TOPICS: tuple[str, ...] = ("pass.activated", "pass.deactivated")
_PREFIX = "pass."


class TopicError(UsageError, ValueError):
    """A topic name the service does not know; ``str()`` says which ones it does."""


def parse_topic(text: str) -> str:
    """The full topic name for ``text`` (``activated`` -> ``pass.activated``), or TopicError."""
    name = text.strip() if isinstance(text, str) else ""
    if name in TOPICS:
        return name
    if _PREFIX + name in TOPICS:
        return _PREFIX + name
    shown = ascii(text) if isinstance(text, str) else "(not text)"
    raise TopicError(
        f"Unknown topic {shown}: the service knows only pass.activated and pass.deactivated "
        "(activated and deactivated for short)."
    )


def parse_topics(texts: Iterable[str]) -> list[str]:
    """Several topics, each full name once, in the order given; at least one."""
    topics: list[str] = []
    for text in texts:
        topic = parse_topic(text)
        if topic in topics:
            raise TopicError(f"The topic {topic} is given twice; give each once.")
        topics.append(topic)
    if not topics:
        raise TopicError("Give at least one topic (pass.activated or pass.deactivated).")
    return topics


def short_topic(topic: str) -> str:
    """``pass.activated`` -> ``activated``; any other text is returned as it is."""
    return topic.removeprefix(_PREFIX) if topic in TOPICS else topic


UNKNOWN_TOPIC = "topic unknown"


def topic_label(topic: str | None) -> str:
    """How a delivery's topic is shown: the name, or ``topic unknown`` when its body named none.

    The service does not document the body, so the topic is read from its ``type``, ``topic`` or
    ``event`` field; a delivery without one is forwarded only to catch-all ``--forward-to`` targets.
    A name the service does not know is shown escaped with ``(unknown)`` after it.
    """
    if not topic:
        return UNKNOWN_TOPIC
    if topic in TOPICS:
        return topic
    return f"{printable(topic, 40)} (unknown)"
