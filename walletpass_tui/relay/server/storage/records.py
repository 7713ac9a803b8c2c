"""What every relay backend writes and answers: a new delivery, a rejection kept for debugging,
and a stored delivery with its cursor. Ingress makes the first two, the fan-out reads the third;
a backend's writer turns the ones into the other, under the rules here."""

from __future__ import annotations

from dataclasses import dataclass

MAX_BATCH = 512  # jobs one commit takes at most
REJECTED_CAP = 1000  # kept per channel; the oldest go first
REJECTED_BODY_LIMIT = 64 * 1024


def storable_text(value: str | None) -> str | None:
    """Text every database takes: a header that was not UTF-8 (lone surrogates) and NUL are
    replaced, so a rejection kept for debugging never fails the transaction it shares."""
    if value is None:
        return None
    return value.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


@dataclass(frozen=True)
class NewDelivery:
    channel_id: int
    received_at_ms: int
    webhook_id: str | None
    # The JSON sent to subscribers (``relay.events.delivery_data``): stored exactly, but for
    # its received time, which a backend shared by several processes sets anew as it stores it.
    data: bytes


@dataclass(frozen=True)
class NewRejection:
    channel_id: int
    received_at_ms: int
    status: int
    reason: str
    webhook_id: str | None
    source: str | None
    headers: str
    body: bytes


@dataclass(frozen=True)
class Stored:
    cursor: int
    channel_id: int
    used_bytes: int  # the channel's usage after this commit
    data: bytes
