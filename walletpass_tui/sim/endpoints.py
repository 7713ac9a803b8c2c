"""The simulator's webhook endpoints: the record it keeps, and the checks on a create request.

``validate_create_body`` is the validation of ``POST /v0/webhookEndpoints`` (spec section 4) and
``url_problem`` the URL rule the simulator applies (http or https, with a host); the CLI reuses the
latter to check a ``--url`` before sending it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from walletpass_tui.config.secrets import mask_secret
from walletpass_tui.errors import WalletpassError
from walletpass_tui.sim.events import TOPICS

CREATE_FIELDS = ("enabledTopics", "enabled", "url")
MAX_URL_LENGTH = 2048


class SimError(WalletpassError):
    """The simulator cannot do what was asked; the message says why."""


class UnknownEndpointError(SimError, LookupError):
    """No endpoint with that id (it was never created, or was removed)."""


@dataclass
class SimEndpoint:
    """A webhook endpoint as the simulator stores it."""

    id: str
    url: str
    enabled_topics: tuple[str, ...]
    enabled: bool
    secret: str = field(repr=False)
    created_at: str  # ISO 8601 UTC with milliseconds, as returned

    def created_json(self) -> dict[str, Any]:
        """The create response (spec section 2): the only time the secret is returned."""
        return {
            "id": self.id,
            "url": self.url,
            "enabledTopics": list(self.enabled_topics),
            "enabled": self.enabled,
            "secret": self.secret,
            "createdAt": self.created_at,
        }

    def public_json(self) -> dict[str, Any]:
        """For the control API: the secret masked."""
        data = self.created_json()
        data["secret"] = mask_secret(self.secret)
        return data


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be an endpoint URL for the sim: it needs an http(s) scheme and a host."""
    if not isinstance(url, str):
        return "url must be a string."
    if not url or len(url) > MAX_URL_LENGTH:
        return f"url must be an http or https URL of at most {MAX_URL_LENGTH} characters."
    if re.search(r"[\s\x00-\x1f\x7f]", url):
        return "url must not contain spaces or control characters."
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:  # answered with its reason
        return "url is not a valid URL."
    if parts.scheme not in ("http", "https") or not host:
        return "url must be an http or https URL with a host, e.g. https://example.com/webhooks."
    return None


def validate_create_body(payload: Any) -> tuple[str, tuple[str, ...], bool]:
    """(url, topics, enabled) from a create body, or ValueError with one sentence."""
    if not isinstance(payload, dict):
        raise ValueError(
            "The request body must be a JSON object with enabledTopics, enabled and url."
        )
    unknown = [k for k in payload if k not in CREATE_FIELDS]
    if unknown:
        raise ValueError(
            f"Unknown field(s): {', '.join(unknown)}; the allowed fields are enabledTopics, "
            "enabled and url."
        )
    missing = [k for k in CREATE_FIELDS if k not in payload]
    if missing:
        raise ValueError(f"Missing required field(s): {', '.join(missing)}.")
    topics = payload["enabledTopics"]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise ValueError("enabledTopics must be an array of topic strings.")
    if not topics:
        raise ValueError(
            "enabledTopics must name at least one topic (pass.activated, pass.deactivated)."
        )
    for topic in topics:
        if topic not in TOPICS:
            raise ValueError(
                f"Unknown topic {topic!r} in enabledTopics; the allowed topics are "
                "pass.activated and pass.deactivated."
            )
    repeated = sorted({t for t in topics if topics.count(t) > 1})
    if repeated:
        raise ValueError(f"The topic {repeated[0]} appears more than once in enabledTopics.")
    enabled = payload["enabled"]
    if not isinstance(enabled, bool):
        raise ValueError("enabled must be a boolean (true or false).")
    problem = url_problem(payload["url"])
    if problem:
        raise ValueError(problem)
    return payload["url"], tuple(topics), enabled
