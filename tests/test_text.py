"""How untrusted text, durations and sizes are shown: one module for the command line and the UI."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.text import (
    format_duration,
    format_gap,
    format_ms,
    format_size,
    one_line,
    parse_ascii_int,
    printable,
    visible,
)

# Every character that must never reach a terminal as it came.
BIDI = [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]
SEPARATORS = ["\u2028", "\u2029", "\x85"]
CONTROLS = [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
FORBIDDEN = set(BIDI + ZERO_WIDTH + SEPARATORS + CONTROLS)
DANGEROUS = st.sampled_from(sorted(FORBIDDEN))


@given(
    st.lists(st.one_of(st.characters(), DANGEROUS, st.just("\x1b]8;;http://x\x07"))).map("".join)
)
def test_visible_text_never_contains_a_control_bidi_zero_width_or_separator(text: str) -> None:
    for shown in (visible(text), printable(text), printable(text, 12), one_line(text, 20)):
        assert not FORBIDDEN & set(shown), repr(shown)
    multi = visible(text, keep_newlines=True)
    assert not (FORBIDDEN - {"\n", "\t"}) & set(multi), repr(multi)


@given(st.text())
def test_printable_text_is_left_alone(text: str) -> None:
    if text.isprintable():
        assert visible(text) == text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J\x07", "\\x1b[2J\\x07"),
        ("\x1b]8;;https://evil\x07link", "\\x1b]8;;https://evil\\x07link"),
        ("pay\u202eusd", "pay\\u202eusd"),
        ("a\u2066b\u2069", "a\\u2066b\\u2069"),
        ("ms\u200bg_1", "ms\\u200bg_1"),
        ("one\u2028two", "one\\u2028two"),
        ("tab\there", "tab\\there"),
        ("plain café [b]x[/b]", "plain café [b]x[/b]"),
    ],
)
def test_untrusted_text_is_shown_as_escapes(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert visible(raw) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.25, "250 ms"),
        (5, "5.0 s"),
        (42, "42 s"),
        (300, "5 min"),
        (2105, "35 min 5 s"),
        (7200, "2 h"),
        (36000 + 65, "10 h 1 min 5 s"),
    ],
)
def test_durations_use_the_units_of_the_retry_schedule(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown
    assert format_gap(round(seconds * 1000)) == shown


def test_coarse_durations_are_whole_seconds() -> None:
    assert format_duration(0, fine=False) == "0 s"
    assert format_duration(5, fine=False) == "5 s"
    assert format_duration(2105, fine=False) == "35 min 5 s"


def test_sizes() -> None:
    assert [format_size(n) for n in (0, 1023, 65536, 1048576)] == [
        "0 B",
        "1023 B",
        "64.0 KiB",
        "1.0 MiB",
    ]


# Each a number Python's int() (or str.isdigit()) takes, and none a number on the wire.
NOT_WIRE_NUMBERS = ["²", "١٢٣", "1_0", " 5", "5 ", "+5", "-5", "0x10", "", "9" * 100_000]


@pytest.mark.parametrize("text", NOT_WIRE_NUMBERS, ids=repr)
def test_parse_ascii_int_refuses_what_is_not_plain_ascii_digits(text: str) -> None:
    assert parse_ascii_int(text) is None
    assert parse_ascii_int(text.encode()) is None


def test_parse_ascii_int_reads_plain_digits_up_to_its_bound() -> None:
    assert parse_ascii_int("0") == 0
    assert parse_ascii_int("007") == 7
    assert parse_ascii_int(b"42") == 42
    assert parse_ascii_int("9" * 19) == int("9" * 19)
    assert parse_ascii_int("9" * 20) is None
    assert parse_ascii_int("12345", max_digits=4) is None


@given(st.text(max_size=30))
def test_parse_ascii_int_agrees_with_a_plain_ascii_reading(text: str) -> None:
    plain = bool(text) and len(text) <= 19 and all("0" <= ch <= "9" for ch in text)
    assert parse_ascii_int(text) == (int(text) if plain else None)


def test_no_module_reads_a_number_with_isdigit_but_the_helper() -> None:
    """``isdigit()``/``isdecimal()`` before ``int()`` is how "²" and "١٢٣" got through: every
    number from the network or a file goes through parse_ascii_int instead."""
    root = Path(__file__).resolve().parents[1] / "walletpass_tui"
    offenders = [
        str(path.relative_to(root))
        for path in sorted(root.rglob("*.py"))
        if path.name != "text.py"
        and any(f".{name}()" in path.read_text() for name in ("isdigit", "isdecimal", "isnumeric"))
    ]
    assert offenders == []


@given(st.integers(min_value=-(10**13), max_value=253_402_300_799_999))
def test_a_time_of_day_is_the_utc_clock_to_the_millisecond(ms: int) -> None:
    """The log's time column: the UTC time of day of an epoch millisecond, exact (no float)."""
    at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    assert (
        format_ms(ms, time_only=True) == at.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}"
    )
