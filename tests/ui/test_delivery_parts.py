"""The detail pane's text parts, built without a screen: topics, sizes and untrusted text."""

from __future__ import annotations

from dataclasses import replace

from rich.style import Style
from ui_helpers import attempt

from walletpass_tui.text import format_size
from walletpass_tui.ui.panes.delivery_data import DeliveryData
from walletpass_tui.ui.panes.delivery_parts import attempts_text, headers_text, summary_text


def plain_style(name: str) -> Style:
    return Style()


def test_summary_says_topic_unknown_and_the_size_as_text_formats_it() -> None:
    a = replace(attempt(1), topic=None, body=b"x" * 3000, body_size=3000)
    shown = summary_text(a, plain_style).plain
    assert "topic unknown" in shown and "topic topic" not in shown
    assert f"body {format_size(3000)}" in shown and "2.9 KiB" in shown


def test_header_values_are_shown_as_text_not_markup() -> None:
    a = replace(attempt(1), headers=(("x-evil", "[bold red]hi\x1b[2J"),))
    shown = headers_text(a, plain_style)
    assert "[bold red]hi" in shown.plain
    assert "\x1b" not in shown.plain
    assert not shown.spans or all(s.style == Style() for s in shown.spans)


def test_the_attempts_line_wraps_between_attempts_never_inside_one() -> None:
    attempts = tuple(attempt(n, at_ms=1_700_000_000_000 + n * 60_000) for n in range(1, 9))
    data = DeliveryData(attempts[-1], attempts, ())
    lines = attempts_text(data, 40, plain_style).plain.split("\n")
    assert len(lines) > 1
    assert all(len(line) <= 40 for line in lines)
    assert sum(line.count("#") for line in lines) == 8
