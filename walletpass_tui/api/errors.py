"""One error type for everything that can go wrong talking to the service."""

from __future__ import annotations

from walletpass_tui.errors import WalletpassError
from walletpass_tui.text import format_duration

BODY_EXCERPT_LIMIT = 2000


def excerpt(text: str, limit: int = BODY_EXCERPT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit} more characters)"


class ApiError(WalletpassError):
    """A failed call. ``str()`` is one sentence a person can act on.

    ``kind`` names the class of failure (``missing_key``, ``invalid_request``, ``auth``, ``not_found``,
    ``rate_limited``, ``server``, ``http``, ``timeout``, ``connection``, ``tls``, ``too_large``,
    ``bad_json``, ``bad_shape``); ``status`` is the HTTP status when there was one; ``body`` is the service's
    answer, kept so the user can see it (``body_excerpt`` is the truncated form for display).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        status: int | None = None,
        body: str | None = None,
        hint: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.status = status
        self.body = body
        self.hint = hint
        self.retry_after = retry_after

    @property
    def body_excerpt(self) -> str | None:
        return None if self.body is None else excerpt(self.body)

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} {self.hint}"


def hint_for_status(status: int, retry_after: float | None) -> tuple[str, str]:
    """(kind, hint) for an HTTP error status."""
    if status in (401, 403):
        return "auth", "Check the API key (WALLETPASS_API_KEY or --api-key)."
    if status == 404:
        return (
            "not_found",
            "Check the base URL (WALLETPASS_BASE_URL) and registration URL "
            "(WALLETPASS_REGISTRATION_URL).",
        )
    later = format_duration(retry_after, fine=False) if retry_after is not None else None
    if status == 429:
        wait = f" Try again in {later}." if later else ""
        return "rate_limited", f"The service is rate limiting this key.{wait}"
    if status >= 500:
        if later:
            return "server", f"The service failed; it asks to be tried again in {later}."
        return "server", "The service failed; try again later."
    return "http", "The service refused the request; see its answer below."
