"""The Server-Sent Events parser against what a hostile relay can send: every bound by count and
size holds, however the bytes are cut, and the line endings and byte order mark of the rules."""

from __future__ import annotations

import pytest

from walletpass_tui.relay.link.sse import (
    KEPT_HEAD,
    MAX_EVENT_LINES,
    MAX_FIELD_LINE,
    SSEBroken,
    SSEComment,
    SSEItem,
    SSEMessage,
    SSEParser,
)

LIMIT = 100_000


def feed_all(parser: SSEParser, data: bytes, piece: int) -> list[SSEItem]:
    out: list[SSEItem] = []
    for start in range(0, len(data), piece):
        out.extend(parser.feed(data[start : start + piece]))
    return out


def held(parser: SSEParser) -> int:
    """Bytes the parser holds between calls."""
    return len(parser._partial) + len(parser._data)


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_data_lines_past_the_event_bound_break_the_stream_with_the_cursor_and_a_head(
    piece: int,
) -> None:
    parser = SSEParser(LIMIT)
    stream = b"id: 7\nevent: delivery\n" + b"data: " + b"x" * 1000 + b"\n"
    stream += (b"data: " + b"y" * 2000 + b"\n") * 200  # never the blank line
    out = feed_all(parser, stream, piece)
    (broken,) = out
    assert isinstance(broken, SSEBroken)
    assert broken.reason == f"an event of more than {LIMIT:,} bytes"
    assert (broken.id, broken.event) == ("7", "delivery")
    assert broken.head.startswith(b"x" * 1000 + b"\ny") and len(broken.head) <= KEPT_HEAD
    assert held(parser) == 0  # what it held is let go
    assert parser.feed(b"\n\ndata: more\n\n") == []  # and nothing more is parsed


def test_one_data_line_without_an_end_breaks_at_the_bound_not_later() -> None:
    parser = SSEParser(LIMIT)
    out = feed_all(parser, b"data: " + b"z" * (LIMIT * 3), 1000)
    (broken,) = out
    assert isinstance(broken, SSEBroken) and broken.id is None
    assert broken.size <= LIMIT + 1000
    assert broken.head == b"z" * KEPT_HEAD


@pytest.mark.parametrize(
    "line",
    [b"id: " + b"9" * 10_000, b": " + b"c" * 10_000, b"event: " + b"e" * 10_000],
    ids=["id", "comment", "event"],
)
def test_a_line_that_is_not_data_is_bounded_far_below_an_event(line: bytes) -> None:
    parser = SSEParser(LIMIT)
    out = feed_all(parser, line, 512)  # no end: refused while it is still coming
    (broken,) = out
    assert isinstance(broken, SSEBroken)
    assert broken.reason == f"a line of more than {MAX_FIELD_LINE:,} bytes that is not data"
    assert held(parser) == 0


@pytest.mark.parametrize(
    "line",
    [b"data:", b": heartbeat", b"event: delivery", b"id: 5"],
    ids=["empty data", "comments", "event", "id"],
)
def test_lines_without_the_blank_line_that_ends_an_event_are_counted(line: bytes) -> None:
    parser = SSEParser(LIMIT)
    out = feed_all(parser, (line + b"\n") * (MAX_EVENT_LINES + 50), 64)
    *before, broken = out
    assert isinstance(broken, SSEBroken)
    assert broken.reason.startswith(f"more than {MAX_EVENT_LINES} lines without the blank line")
    assert len(before) <= MAX_EVENT_LINES


def test_heartbeats_forever_are_fine() -> None:
    parser = SSEParser(LIMIT)
    out = feed_all(parser, b": heartbeat head=3\n\n" * 10_000, 4096)
    assert len(out) == 10_000 and all(isinstance(i, SSEComment) for i in out)
    assert parser.broken is None and held(parser) == 0


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["", "BOM"])
@pytest.mark.parametrize("piece", [1, 2, 3, 1000])
def test_every_line_ending_and_a_byte_order_mark_read_the_same(
    newline: bytes, bom: bytes, piece: int
) -> None:
    event = newline.join([b"id: 4", b"event: delivery", b"data: {}", b"data: x", b"", b""])
    stream = bom + b": connected head=4" + newline + newline + event + event.replace(b"4", b"5")
    out = feed_all(SSEParser(LIMIT), stream, piece)
    assert out == [
        SSEComment("connected head=4"),
        SSEMessage("delivery", b"{}\nx", "4"),
        SSEMessage("delivery", b"{}\nx", "5"),
    ]


def test_an_id_holding_nul_is_ignored_and_data_keeps_the_bytes_received() -> None:
    stream = b"id: 3\nevent: delivery\ndata: a\n\nid: 4\x00\nevent: delivery\ndata: \xff\x00b\n\n"
    first, second = SSEParser(LIMIT).feed(stream)
    assert isinstance(second, SSEMessage) and isinstance(first, SSEMessage)
    assert second.id == "3"  # the id in force stays the last valid one
    assert second.raw == b"\xff\x00b"


def test_a_long_line_dripped_a_byte_at_a_time_is_not_copied_for_every_byte() -> None:
    """Linear work: the line grows in place (a parser that joined its buffer with every piece
    would copy ~LIMIT**2/2 bytes here; this one holds one buffer)."""
    parser = SSEParser(LIMIT)
    for byte in b"data: " + b"q" * (LIMIT // 2):
        assert parser.feed(bytes([byte])) == []
    assert len(parser._partial) == LIMIT // 2 + 6
    (message,) = parser.feed(b"\n\n")
    assert isinstance(message, SSEMessage) and message.raw == b"q" * (LIMIT // 2)
