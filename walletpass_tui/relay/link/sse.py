"""Server-Sent Events from a peer that is not trusted: an incremental parser (the WHATWG rules),
bounded by count and size.

Feed it bytes in any pieces; it yields messages and comments. What it holds between two blank
lines (the end of an event) is bounded: the event's lines together (``max_event`` bytes, the data
with the field names), each line that is not data (``MAX_FIELD_LINE``: a comment, ``id:``,
``event:``), and the lines themselves (``MAX_EVENT_LINES``). Past any bound it yields one
``SSEBroken`` saying why, frees what it held and parses nothing more: the caller drops the
connection. Its work is linear in the bytes fed, however they are cut (a line dripped one byte
at a time is not copied again for every byte).

Lines end with CRLF, LF or CR (a CRLF split between two pieces is one end); a UTF-8 byte order
mark at the start of the stream is skipped; an ``id:`` holding NUL is ignored, as the rules say.
Data is kept as the bytes received.
"""

from __future__ import annotations

from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"
MAX_FIELD_LINE = 4096  # a comment, id:, event: or retry: line
MAX_EVENT_LINES = 100  # lines between two blank lines (the relay writes 3, or 1 comment)
KEPT_HEAD = 64 * 1024  # of an event refused for its size: what is kept to show


@dataclass(frozen=True)
class SSEMessage:
    event: str
    raw: bytes  # the data lines as received, joined by LF
    id: str | None  # the last event id in force when it was dispatched

    @property
    def data(self) -> str:
        return self.raw.decode("utf-8", "replace")


@dataclass(frozen=True)
class SSEComment:
    text: str


@dataclass(frozen=True)
class SSEBroken:
    """What was read went past a bound; nothing more is parsed from this stream."""

    reason: str
    event: str  # the event's name, if its event: line came first
    id: str | None  # the event's own id: line, if it came before the bound was passed
    head: bytes  # the first KEPT_HEAD bytes of its data
    size: int  # bytes of the event read when it was refused


SSEItem = SSEMessage | SSEComment | SSEBroken


class SSEParser:
    def __init__(
        self,
        max_event: int,
        *,
        max_field_line: int = MAX_FIELD_LINE,
        max_lines: int = MAX_EVENT_LINES,
    ) -> None:
        self.max_event = max_event
        self.max_field_line = max_field_line
        self.max_lines = max_lines
        self.last_id: str | None = None
        self.lines = 0  # complete lines read: the caller's measure of progress
        self.broken: SSEBroken | None = None
        self._partial = bytearray()  # a line not ended yet
        self._pending_cr = False  # the last piece ended with CR: a LF next is part of it
        self._started = False  # past the byte order mark, if any
        self._event = b""
        self._data = bytearray()
        self._has_data = False
        self._own_id: str | None = None  # this event's id: line
        self._event_bytes = 0  # of this event's lines so far
        self._event_lines = 0

    def feed(self, chunk: bytes) -> list[SSEItem]:
        out: list[SSEItem] = []
        if self.broken is not None:
            return out
        if not self._started:
            chunk = bytes(self._partial) + chunk
            self._partial.clear()
            if len(chunk) < len(BOM) and BOM.startswith(chunk):
                self._partial += chunk
                return out
            self._started = True
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM) :]
        if self._pending_cr:
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        size = len(chunk)
        pos = 0
        cr = chunk.find(b"\r")
        lf = chunk.find(b"\n")
        while pos < size:
            # Each search starts where the last line ended and is done again only once passed:
            # every byte is looked at once, whatever mix of line ends the chunk holds.
            if 0 <= cr < pos:
                cr = chunk.find(b"\r", pos)
            if 0 <= lf < pos:
                lf = chunk.find(b"\n", pos)
            if cr < 0 and lf < 0:
                break
            end = lf if cr < 0 else cr if lf < 0 else min(cr, lf)
            piece = chunk[pos:end]
            if chunk[end] == 0x0D:  # CR, alone or followed by LF
                if end + 1 < size:
                    pos = end + 2 if chunk[end + 1] == 0x0A else end + 1
                else:
                    pos = end + 1
                    self._pending_cr = True
            else:
                pos = end + 1
            if self._partial:
                self._partial += piece
                line = bytes(self._partial)
                self._partial.clear()
            else:
                line = piece
            self._line(line, out)
            if self.broken is not None:
                return out
        if pos < size:
            self._partial += chunk[pos:]
            self._check(self._partial, out)
        return out

    # -- one line ----------------------------------------------------------------------------------

    def _check(self, line: bytes | bytearray, out: list[SSEItem]) -> None:
        """Break when ``line`` (ended or not) goes past a bound."""
        if line.startswith(b"data:"):
            if self._event_bytes + len(line) > self.max_event:
                self._break(f"an event of more than {self.max_event:,} bytes", line, out)
        elif len(line) > self.max_field_line:
            self._break(
                f"a line of more than {self.max_field_line:,} bytes that is not data", b"", out
            )

    def _line(self, line: bytes, out: list[SSEItem]) -> None:
        self.lines += 1
        if not line:
            self._dispatch(out)
            return
        self._check(line, out)
        if self.broken is not None:
            return
        self._event_lines += 1
        self._event_bytes += len(line) + 1
        if self._event_lines > self.max_lines:
            self._break(
                f"more than {self.max_lines} lines without the blank line that ends an event",
                b"",
                out,
            )
            return
        if line[0] == 0x3A:  # ":"
            out.append(SSEComment(line[1:].decode("utf-8", "replace").lstrip(" ")))
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            if self._has_data:
                self._data += b"\n"
            self._data += value
            self._has_data = True
        elif name == b"event":
            self._event = value
        elif name == b"id" and b"\0" not in value:
            self.last_id = self._own_id = value.decode("utf-8", "replace")
        # retry: and unknown fields are ignored (the caller keeps its own backoff).

    def _dispatch(self, out: list[SSEItem]) -> None:
        if self._has_data:
            event = self._event.decode("utf-8", "replace") or "message"
            out.append(SSEMessage(event, bytes(self._data), self.last_id))
        self._reset()

    def _reset(self) -> None:
        self._event = b""
        self._data = bytearray()
        self._has_data = False
        self._own_id = None
        self._event_bytes = 0
        self._event_lines = 0

    def _break(self, reason: str, line: bytes | bytearray, out: list[SSEItem]) -> None:
        head = bytes(self._data[:KEPT_HEAD])
        if line.startswith(b"data:") and len(head) < KEPT_HEAD:
            value = bytes(line[5 : 6 + KEPT_HEAD])
            if value[:1] == b" ":
                value = value[1:]
            head = ((head + b"\n" if self._has_data else b"") + value)[:KEPT_HEAD]
        self.broken = SSEBroken(
            reason,
            self._event.decode("utf-8", "replace"),
            self._own_id,
            head,
            self._event_bytes + len(line),
        )
        out.append(self.broken)
        self._partial = bytearray()
        self._reset()
