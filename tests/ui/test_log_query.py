"""The dashboard's filter and topic column read topics the way the command line does."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st
from ui_helpers import attempt

from walletpass_tui.api.topics import TOPICS, UNKNOWN_TOPIC, TopicError, parse_topic
from walletpass_tui.ui.view.log_columns import cell_text
from walletpass_tui.ui.view.log_query import matches, parse_filter
from walletpass_tui.webhooks.models import LogRow


def test_short_and_full_topic_names_filter_the_same_rows() -> None:
    short = parse_filter("topic:activated")
    full = parse_filter("topic:pass.activated")
    assert short == full
    assert short.filter.topic == "pass.activated" and short.problem is None
    assert matches(short.filter, attempt(1, topic="pass.activated"))
    assert not matches(short.filter, attempt(2, topic="pass.deactivated"))


def test_an_unknown_topic_is_said_in_the_words_of_the_command_line() -> None:
    for value in ("act", "deact", "pass.", "activatedx"):
        parsed = parse_filter(f"topic:{value} ferry")
        assert parsed.filter.topic is None
        assert parsed.filter.text == "ferry"
        try:
            parse_topic(value)
        except TopicError as error:
            assert parsed.problem == str(error)
        else:  # pragma: no cover - the values above are all unknown
            raise AssertionError(value)


@given(st.text(max_size=30).filter(lambda s: s and not any(c.isspace() for c in s)))
def test_the_filter_accepts_exactly_the_topics_parse_topic_accepts(value: str) -> None:
    parsed = parse_filter(f"topic:{value}")
    try:
        expected = parse_topic(value.lower())
    except TopicError:
        assert parsed.filter.topic is None and parsed.problem
    else:
        assert parsed.filter.topic == expected and parsed.problem is None
        assert parsed.filter.topic in TOPICS


def test_a_delivery_without_a_topic_is_labelled_topic_unknown() -> None:
    row = LogRow.of(replace(attempt(1), topic=None))
    assert cell_text(row, "topic") == UNKNOWN_TOPIC == "topic unknown"
    assert cell_text(LogRow.of(replace(attempt(2), topic="")), "topic") == UNKNOWN_TOPIC
    assert cell_text(LogRow.of(attempt(3)), "topic") == "activated"
    odd = cell_text(LogRow.of(replace(attempt(4), topic="pass.renamed")), "topic")
    assert odd == "pass.renamed (unknown)"
