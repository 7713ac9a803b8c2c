"""The one way a request becomes the ``Attempt`` the history keeps, whichever door it came in by.

``attempt_of(request, reason, ...)`` takes what every door knows in the same form
(``intake.IntakeRequest``: method, target, headers in order, where from, when, since when it was
handled) and the verdict, and fills the rest by one rule each: the status is the reason's, the
webhook-id is ``intake.stored_webhook_id``'s, the forwarded-for list is every X-Forwarded-For line
(a relayed delivery passes the one the relay recorded), and a delivery's labels (topic, pass id)
are read from its body here and nowhere else (``body_fields.labels``).
"""

from __future__ import annotations

import time
from enum import Enum
from typing import Final, Literal

from walletpass_tui.webhooks.body_fields import labels
from walletpass_tui.webhooks.intake import IntakeRequest, forwarded_for_text
from walletpass_tui.webhooks.models import REJECTED, Attempt, StoredVerdict
from walletpass_tui.webhooks.reasons import Reason

__all__ = ["FROM_HEADERS", "attempt_of"]


class _FromHeaders(Enum):
    FROM_HEADERS = "from the request's X-Forwarded-For lines"


FROM_HEADERS: Final = _FromHeaders.FROM_HEADERS


def attempt_of(
    request: IntakeRequest,
    reason: Reason,
    detail: str = "",
    *,
    verdict: StoredVerdict = REJECTED,
    body: bytes = b"",
    body_size: int | None = None,
    endpoint_id: str | None = None,
    labelled: bool = True,
    forwarded_for: str | Literal[_FromHeaders.FROM_HEADERS] | None = FROM_HEADERS,
    relay_url: str | None = None,
    relay_cursor: int | None = None,
) -> Attempt:
    """The attempt to store for ``request``: its reason and verdict, the body kept (``body_size``:
    how large it was, None when unknown), and its labels read from the body (``labelled=False``:
    the bytes kept are not a delivery's body, e.g. a relay event that cannot be read).
    ``forwarded_for``: the list kept, by default every X-Forwarded-For line of the request's.
    ``relay_url`` and ``relay_cursor``: the relay it came through and its number there."""
    topic, pass_id = labels(body) if labelled else (None, None)
    if forwarded_for is FROM_HEADERS:
        forwarded_for = forwarded_for_text(request.forwarded_for())
    started = request.started
    return Attempt(
        received_at_ms=int(request.received.timestamp() * 1000),
        method=request.method,
        path=request.target,
        headers=tuple(request.headers.items()),
        body=body,
        verdict=verdict,
        reason=reason.value,
        status=reason.status,
        webhook_id=request.webhook_id(),
        detail=detail,
        endpoint_id=endpoint_id,
        remote_addr=request.peer,
        forwarded_for=forwarded_for,
        body_size=body_size,
        processing_ms=(time.perf_counter() - started) * 1000 if started else 0.0,
        topic=topic,
        pass_id=pass_id,
        relay_url=relay_url,
        relay_cursor=relay_cursor,
    )
