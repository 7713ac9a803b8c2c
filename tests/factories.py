"""Records the tests build by hand, in one place: an attempt as the receiver stores it, a row of the
event log, and the Standard Webhooks specification's signing example.

Defaults are those of a verified delivery of ``pass.activated``; each test names what it cares
about (``attempt("msg_1", verdict=REJECTED)``) and leaves the rest. A test module never imports
another test module: what two of them share lives here, in a ``*_helpers.py`` of the area, or in a
``conftest.py`` fixture.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from walletpass_tui.webhooks.models import VERIFIED, Attempt, LogRow

T0 = 1_795_000_000_000  # a fixed time (epoch milliseconds), 2026-11
ACTIVATED_BODY = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'

# The signing example of the Standard Webhooks specification: its secret, message, time and the
# signature the specification gives for them.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TS = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
SPEC_NOW = datetime.fromtimestamp(SPEC_TS, UTC)


def attempt(
    webhook_id: str | None = "msg_1",
    body: bytes = b"{}",
    *,
    verdict: str = VERIFIED,
    at: int = T0,
    status: int | None = None,
    reason: str | None = None,
    headers: tuple[tuple[str, str], ...] = (),
    **fields: Any,
) -> Attempt:
    """One POST to ``/webhooks``. A verified one is answered 200, a rejected one 401 with "no
    signature matches", unless ``status`` or ``reason`` say otherwise; ``fields``: any other
    column of Attempt (``topic``, ``relay_url``, ...)."""
    ok = verdict == VERIFIED
    return Attempt(
        received_at_ms=at,
        method="POST",
        path="/webhooks",
        headers=headers,
        body=body,
        verdict=verdict,
        reason=reason if reason is not None else ("verified" if ok else "no signature matches"),
        status=status if status is not None else (200 if ok else 401),
        webhook_id=webhook_id,
        **fields,
    )


def json_attempt(webhook_id: str | None = "msg_1", **kw: Any) -> Attempt:
    """``attempt`` with a ``pass.activated`` body and the headers a sender sends with it."""
    kw.setdefault("body", ACTIVATED_BODY)
    kw.setdefault(
        "headers", (("Content-Type", "application/json"), ("webhook-id", webhook_id or ""))
    )
    return attempt(webhook_id, **kw)


def log_row(i: int, *, verdict: str = VERIFIED, **fields: Any) -> LogRow:
    """Line ``i`` of the event log: received at ``i`` seconds, message ``msg_<i>``."""
    values: dict[str, Any] = {
        "id": i,
        "received_at_ms": 1_000 * i,
        "webhook_id": f"msg_{i}",
        "topic": "pass.activated",
        "pass_id": None,
        "verdict": verdict,
        "reason": "verified" if verdict == VERIFIED else "no signature matches",
        "attempt_no": 1,
        "endpoint_id": None,
        "status": 200 if verdict == VERIFIED else 401,
        "note": None,
    }
    values.update(fields)
    return LogRow(**values)


def as_version_8(db: sqlite3.Connection) -> None:
    """A history made by this version, put back as version 8 left it (relayed cursors and marks
    by URL, not by channel), for the tests of an upgrade from before."""
    db.execute("DROP INDEX attempts_by_relay")
    db.execute("ALTER TABLE attempts DROP COLUMN relay_channel")
    db.execute(
        "CREATE UNIQUE INDEX attempts_by_relay ON attempts(relay_url, relay_cursor) "
        "WHERE relay_cursor IS NOT NULL"
    )
    db.execute("DROP TABLE relay_marks")
    db.execute("CREATE TABLE relay_marks (relay_url TEXT PRIMARY KEY, low_water INTEGER NOT NULL)")
    db.execute("PRAGMA user_version = 8")
