"""A delivery that reached this machine another way than a POST to the receiver: through a relay.

The relay kept what the service sent exactly (method, path, headers in order, raw body, source
address, when it arrived); ``Receiver.accept(relayed)`` runs it through the same intake
(``intake.py``, as ``intake_request()``), verify, store and forward steps as a direct POST. The
timestamp is checked against ``received_at`` (when
the relay received it), so a delivery caught up after a laptop slept for hours is not refused as
too old. ``relay_url`` and ``relay_cursor`` are stored with the attempt in the same commit: a
restart resumes after the last stored cursor and never stores one twice.

Cursors are the channel's, the same on every instance of a relay, so what a home has stored is
kept by channel (``relay_channel``), never by the way the subscribe URL is spelt: ``localhost``
or ``127.0.0.1``, a trailing slash, a default port, another instance's address, a balancer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from multidict import CIMultiDict

from walletpass_tui.webhooks.attempts import attempt_of
from walletpass_tui.webhooks.intake import IntakeRequest
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.reasons import Reason


@dataclass(frozen=True)
class RelayedRequest:
    """One delivery as the relay received it (``source``: the address that posted it there)."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    received_at: datetime
    source: str | None = None
    forwarded_for: str | None = None
    relay_url: str | None = None
    relay_cursor: int | None = None

    @classmethod
    def from_relay(
        cls,
        *,
        relay_url: str,
        cursor: int,
        received_at_ms: int,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        source: str | None,
        forwarded_for: str | None = None,
    ) -> RelayedRequest:
        return cls(
            method=method,
            path=path,
            headers=tuple(headers),
            body=body,
            received_at=_when(received_at_ms),
            source=source,
            forwarded_for=forwarded_for,
            relay_url=relay_url,
            relay_cursor=cursor,
        )

    def intake_request(self, started: float = 0.0) -> IntakeRequest:
        """The form every door's checks take: the body is in memory, and it comes with no socket
        of this door's (``direct`` is False)."""
        return IntakeRequest(
            method=self.method,
            path=self.path,
            target=self.path,
            headers=CIMultiDict(self.headers),
            peer=self.source,
            received=self.received_at,
            body=self.body,
            direct=False,
            started=started,
        )

    def attempt(
        self, arrived: IntakeRequest, reason: Reason, detail: str = "", **fields: Any
    ) -> Attempt:
        """The attempt to store for ``arrived`` (this delivery's ``intake_request()``), with where
        it came from: the relay and its cursor, and the X-Forwarded-For list the relay recorded
        (the relay saw the socket; this laptop did not)."""
        return attempt_of(
            arrived,
            reason,
            detail,
            forwarded_for=self.forwarded_for,
            relay_url=self.relay_url,
            relay_cursor=self.relay_cursor,
            **fields,
        )


def _when(ms: int) -> datetime:
    """When the relay received it; a time no clock can show (a broken relay) reads as now, so
    the timestamp check still refuses what is old."""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, ValueError, OSError):
        # a time out of range: now; the timestamp check refuses it
        return datetime.now(UTC)
