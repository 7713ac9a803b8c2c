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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EVENT_NAME = "delivery"


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
    when = datetime.fromtimestamp(received_at_ms / 1000, UTC)
    data = {
        "received_at": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "received_at_ms": received_at_ms,
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
    return json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode("ascii")


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
    def parse(cls, cursor: int, data: str) -> RelayedDelivery:
        try:
            obj: Any = json.loads(data)
            headers = tuple((str(k), str(v)) for k, v in obj["headers"])
            body = base64.b64decode(obj["body_b64"], validate=True)
            return cls(
                cursor=cursor,
                received_at_ms=_whole(obj["received_at_ms"]),
                method=str(obj["method"]),
                path=str(obj["path"]),
                headers=headers,
                body=body,
                source=_opt(obj.get("source")),
                forwarded_for=_opt(obj.get("forwarded_for")),
                client=_opt(obj.get("client")),
                channel=str(obj.get("channel", "")),
            )
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise EventError(f"event {cursor} is not a relayed delivery ({exc})") from None


def _whole(value: object) -> int:
    """A JSON integer as it came: not a float, a boolean, or a string (which int() would read in
    any script's digits)."""
    if type(value) is not int or not 0 <= value < 2**63:
        raise ValueError(f"{type(value).__name__} where a whole number was expected")
    return value


def _opt(value: object) -> str | None:
    return None if value is None else str(value)
