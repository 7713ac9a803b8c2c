"""Why a delivery was rejected (or that it was verified): one enum, each member carrying the HTTP
status the receiver answers with and a short label for narrow columns; and ``Rejected``, the one
exception the receiver's steps raise with a reason.

The stored ``reason`` column holds the member's value, so the history, ``listen``, ``events`` and
the dashboard all read the same words; ``SHORT_REASONS`` is derived from the enum, never written
by hand.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Reason(StrEnum):
    """A verdict's reason: ``value`` (stored and shown), ``status`` (answered), ``label`` (short)."""

    status: int
    label: str

    def __new__(cls, value: str, status: int, label: str) -> Reason:
        member = str.__new__(cls, value)
        member._value_ = value
        member.status = status
        member.label = label
        return member

    OK = "verified", 200, "verified"
    # The signature scheme (verify.py decides these).
    MISSING_HEADERS = "missing header(s)", 400, "missing header"
    MALFORMED_TIMESTAMP = "malformed timestamp", 400, "bad timestamp"
    TIMESTAMP_TOO_OLD = "timestamp too old", 401, "too old"
    TIMESTAMP_TOO_NEW = "timestamp too new", 401, "too new"
    NO_V1_SIGNATURE = "no v1 signature present", 400, "no v1 sig"
    NO_MATCH = "no signature matches", 401, "bad signature"
    NO_SECRET = "no secret configured", 401, "no secret"
    # The request itself (the receiver decides these, before any signature is looked at).
    WRONG_PATH = "wrong path", 404, "wrong path"
    METHOD_NOT_ALLOWED = "method not allowed", 405, "not a POST"
    SOURCE_NOT_ALLOWED = "source not allowed", 403, "bad source"
    BODY_TOO_LARGE = "body too large", 413, "too large"
    REQUEST_TIMED_OUT = "request timed out", 408, "timed out"
    MALFORMED_HEADER = "malformed header", 400, "malformed header"
    # A delivery that came through a relay (the relay link decides these).
    RELAY_EVENT_UNREADABLE = "unreadable relay event", 400, "bad relay event"
    RELAY_TIME = "relay time not credible", 401, "bad relay time"

    @property
    def phrase(self) -> str:
        """The start of the answer's text, e.g. ``Unauthorized``."""
        return _PHRASES.get(self.status, "Refused")


_PHRASES = {
    200: "OK",
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    408: "Request timeout",
    413: "Payload too large",
}

# Stored reason text -> short label, for every rejection.
SHORT_REASONS: dict[str, str] = {r.value: r.label for r in Reason if r is not Reason.OK}


class Rejected(Exception):
    """Why a request is refused: the reason (status and words), what is stored with it, what the
    sender reads. Raised by the handler's steps and caught in one place."""

    def __init__(
        self,
        reason: Reason,
        detail: str = "",
        *,
        answer: str | None = None,
        headers: dict[str, str] | None = None,
        close: bool = False,
        record: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.detail = detail
        self.answer = answer  # the text after "<phrase>: " (default: the reason and its detail)
        self.headers = headers
        self.close = close  # close the connection: the rest of the body is never read
        self.record = record or {}  # more fields of the stored attempt (body, topic...)

    @property
    def status(self) -> int:
        return self.reason.status

    def answer_text(self) -> str:
        if self.answer is not None:
            return f"{self.reason.phrase}: {self.answer}\n"
        text = f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value
        return f"{self.reason.phrase}: {text}\n"
