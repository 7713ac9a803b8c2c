"""Shared by the client's tests: paths, a closed port, and a check that no secret leaks."""

from __future__ import annotations

import socket

from walletpass_tui.api.errors import ApiError

TEMPLATES = "/api/v0/passTemplates"
ENDPOINTS = "/v0/webhookEndpoints"
HOOK_URL = "https://example.com/webhooks"
BOTH = ["pass.activated", "pass.deactivated"]


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_no_secret(exc: ApiError, *secrets: str) -> None:
    for text in (str(exc), repr(exc), exc.message, exc.hint or ""):
        for secret in secrets:
            assert secret not in text
