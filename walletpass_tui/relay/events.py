"""The wire format of one relayed delivery, shared by the relay and its subscribers.

An SSE event ``id: CURSOR`` / ``event: delivery`` / ``data: JSON`` where the JSON holds what the
relay received: ``received_at`` (ISO 8601 UTC, milliseconds) and ``received_at_ms``, ``method``,
``path``, ``headers`` as ``[name, value]`` pairs in the order received, ``body_b64`` (the raw body,
base64), ``source`` (the peer address), ``forwarded_for`` (the X-Forwarded-For header, if any),
``client`` (the client address the relay's source policy settled on) and ``channel``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EVENT_NAME = "delivery"
# What a relayed delivery may hold, as for a POST to the local receiver (its HTTP server's
# MAX_HEADERS and MAX_HEAD_BYTES): more is not a delivery the service sent.
MAX_HEADERS = 128
MAX_HEAD = 64 * 1024
MAX_FIELD_CHARS = 16 * 1024  # the method, the path, an address
MAX_TIME_MS = 2**53  # received_at_ms: beyond, no clock shows it

_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # an HTTP token
_NOT_IN_VALUE = re.compile(r"[\x00\r\n]")


class EventError(ValueError):
    """A relayed event that is not in the expected shape."""


def delivery_data(
    *,
    received_at_ms: int,
    method: str,
    path: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    source: str | None,
    forwarded_for: str | None,
    client: str | None,
    channel: str,
) -> bytes:
    rest = {
        "method": method,
        "path": path,
        "headers": [[k, v] for k, v in headers],
        "body_b64": base64.b64encode(body).decode("ascii"),
        "source": source,
        "forwarded_for": forwarded_for,
        "client": client,
        "channel": channel,
    }
    # ASCII JSON on one line: an SSE data line can never be split by what a sender put in it.
    text = json.dumps(rest, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return stamped(b"," + text[1:], received_at_text(received_at_ms), received_at_ms)


# The data starts with the received time, so a relay's database can set it as it stores the
# delivery (``stamped``: the same bytes as ``json.dumps`` of the whole object would give).
RECEIVED_AT_OPEN = '{"received_at":"'
RECEIVED_AT_MS_KEY = '","received_at_ms":'


def received_at_text(received_at_ms: int) -> str:
    """ISO 8601 UTC with milliseconds, as ``received_at`` says it."""
    when = datetime.fromtimestamp(received_at_ms // 1000, UTC)
    return (
        f"{when.isoformat(timespec='seconds').removesuffix('+00:00')}.{received_at_ms % 1000:03d}Z"
    )


def stamped(rest: bytes, received_at: str, received_at_ms: int) -> bytes:
    """A delivery's data from its received time and the rest of its JSON (``unstamped``)."""
    head = f"{RECEIVED_AT_OPEN}{received_at}{RECEIVED_AT_MS_KEY}{received_at_ms}"
    return head.encode("ascii") + rest


def unstamped(data: bytes) -> bytes:
    """What follows the received time in data ``delivery_data`` made: ``,"method":...}``."""
    key = data.index(RECEIVED_AT_MS_KEY.encode("ascii"))
    return data[data.index(b",", key + len(RECEIVED_AT_MS_KEY)) :]


def sse_event(cursor: int, data: bytes) -> bytes:
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (cursor, EVENT_NAME.encode(), data)


def sse_comment(text: str) -> bytes:
    return f": {text}\n\n".encode("ascii", "replace")


@dataclass(frozen=True)
class RelayedDelivery:
    """One delivery as a subscriber sees it."""

    cursor: int
    received_at_ms: int
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    source: str | None
    forwarded_for: str | None
    client: str | None
    channel: str

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    @property
    def webhook_id(self) -> str | None:
        return self.header("webhook-id")

    @classmethod
    def parse(cls, cursor: int, data: str | bytes) -> RelayedDelivery:
        """Read one event's data; raises EventError saying what is wrong with it.

        Every field is checked for its type (nothing is coerced), the headers for the limits a
        POST to the local receiver has (``MAX_HEADERS`` pairs of header-safe text, ``MAX_HEAD``
        characters together) and the body for being base64."""
        try:
            obj: Any = json.loads(data)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested past Python's stack
            raise EventError(f"its data is not JSON ({_first_line(exc)})") from None
        if not isinstance(obj, dict):
            raise EventError("its data is not a JSON object")
        received_at_ms = obj.get("received_at_ms")
        if received_at_ms is None:
            raise EventError("received_at_ms is missing")
        if type(received_at_ms) is not int or not 0 <= received_at_ms < MAX_TIME_MS:
            raise EventError("received_at_ms is not a time in milliseconds")
        body_b64 = _text(obj, "body_b64")
        try:
            body = base64.b64decode(body_b64, validate=True)
        except (binascii.Error, ValueError):
            raise EventError("body_b64 is not base64") from None
        return cls(
            cursor=cursor,
            received_at_ms=received_at_ms,
            method=_text(obj, "method", MAX_FIELD_CHARS),
            path=_text(obj, "path", MAX_FIELD_CHARS),
            headers=_headers(obj.get("headers")),
            body=body,
            source=_optional_text(obj, "source"),
            forwarded_for=_optional_text(obj, "forwarded_for"),
            client=_optional_text(obj, "client"),
            channel=_optional_text(obj, "channel") or "",
        )


def _first_line(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__).splitlines()[0][:120]


def _text(obj: dict[str, Any], name: str, limit: int | None = None) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise EventError(f"{name} is {'missing' if value is None else 'not a string'}")
    if limit is not None and len(value) > limit:
        raise EventError(f"{name} is longer than {limit:,} characters")
    return value


def _optional_text(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise EventError(f"{name} is not a string")
    if value is not None and len(value) > MAX_FIELD_CHARS:
        raise EventError(f"{name} is longer than {MAX_FIELD_CHARS:,} characters")
    return value


def _headers(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise EventError("headers is not a list of [name, value] pairs")
    if len(value) > MAX_HEADERS:
        raise EventError(f"it has more than {MAX_HEADERS} headers")
    pairs: list[tuple[str, str]] = []
    total = 0
    for index, pair in enumerate(value):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not isinstance(pair[1], str)
        ):
            raise EventError(f"headers[{index}] is not a [name, value] pair of strings")
        name, text = pair
        if not _HEADER_NAME.fullmatch(name) or _NOT_IN_VALUE.search(text):
            raise EventError(f"headers[{index}] is not a header an HTTP request can carry")
        total += len(name) + len(text)
        pairs.append((name, text))
    if total > MAX_HEAD:
        raise EventError(f"its headers hold more than {MAX_HEAD:,} characters")
    return tuple(pairs)


def readable_parts(data: bytes) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """What can still be read of an event ``parse`` refused: its method, path and the headers
    that are pairs of strings (empty when it is not a JSON object), so that its record is
    found with its message."""
    try:
        obj: Any = json.loads(data)
    except (ValueError, RecursionError):  # not JSON: no fields to show, the raw bytes are kept
        return "", "", ()
    if not isinstance(obj, dict):
        return "", "", ()
    method, path, headers = obj.get("method"), obj.get("path"), obj.get("headers")
    pairs: list[tuple[str, str]] = []
    if isinstance(headers, list):
        for pair in headers[:MAX_HEADERS]:
            if (
                isinstance(pair, list)
                and len(pair) == 2
                and isinstance(pair[0], str)
                and isinstance(pair[1], str)
                and len(pair[0]) + len(pair[1]) <= MAX_FIELD_CHARS
            ):
                pairs.append((pair[0], pair[1]))
    return (
        method[:MAX_FIELD_CHARS] if isinstance(method, str) else "",
        path[:MAX_FIELD_CHARS] if isinstance(path, str) else "",
        tuple(pairs),
    )
