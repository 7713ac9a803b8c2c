"""Channels and their credentials: what a slug and a token are, and how a token is checked.

A channel has a name (for people: one printable line, checked where it is made, and escaped
wherever one read from the database is shown), an ingress slug (128 random bits, the unguessable part of the
URL registered with the service) and subscriber tokens (256 random bits each). A token is shown
once when it is issued; the relay keeps only its SHA-256, and compares hashes in constant time.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field

from walletpass_tui.errors import WalletpassError
from walletpass_tui.text import printable
from walletpass_tui.webhooks.verify import SecretError, parse_secret

TOKEN_PREFIX = "wpr_"
SLUG_BYTES = 16  # 128 bits
TOKEN_BYTES = 32  # 256 bits
DEFAULT_QUOTA_BYTES = 256 * 1024 * 1024

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class ChannelError(WalletpassError, ValueError):
    """A channel name, token or URL that cannot be used; the message says what to do."""


def check_name(name: str) -> str:
    """``name`` if it is a channel name (the whole of it: no line break after it either)."""
    if not _NAME.fullmatch(name):
        raise ChannelError(
            f"'{printable(name, 80)}' is not a channel name: use 1-64 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit."
        )
    return name


def check_secret(secret: str | None) -> str | None:
    """A channel's signing secret (None for none); ``SecretError`` unless it is one."""
    if secret:
        parse_secret(secret)
    return secret or None


def new_slug() -> str:
    """22 URL-safe characters carrying 128 random bits."""
    return secrets.token_urlsafe(SLUG_BYTES)


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, or None."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or len(value) > 512:
        return None
    return value


@dataclass(frozen=True)
class Channel:
    id: int
    name: str
    slug: str
    created_at_ms: int
    secret: str | None = field(default=None, repr=False)  # whsec_... for edge verification
    quota_bytes: int = DEFAULT_QUOTA_BYTES
    used_bytes: int = 0
    deliveries: int = 0
    rejected: int = 0
    tokens: int = 0  # tokens not revoked

    @property
    def over_quota(self) -> bool:
        return self.used_bytes >= self.quota_bytes

    @property
    def verifies_at_edge(self) -> bool:
        return bool(self.secret)

    @property
    def secret_problem(self) -> str | None:
        """Why the stored signing secret cannot be used (written to the database by hand, or
        by another program), or None."""
        if not self.secret:
            return None
        try:
            parse_secret(self.secret)
        except SecretError as exc:  # the answer: why, in the error's words
            return str(exc)
        return None

    @property
    def shown_name(self) -> str:
        """The name as a terminal may show it: a name read from the database is untrusted."""
        return printable(self.name, 80)


def public_base(url: str) -> str:
    """``https://relay.example.com/`` -> ``https://relay.example.com``; refuses what is not a URL."""
    text = url.strip().rstrip("/")
    if not re.match(r"^https?://[^/\s?#]+(/[^\s?#]*)?$", text):
        raise ChannelError(
            f"{url!r} is not a public URL: give the relay's address, e.g. https://relay.example.com."
        )
    return text


def ingress_url(base: str, slug: str) -> str:
    return f"{public_base(base)}/in/{slug}"


def subscribe_url(base: str, slug: str) -> str:
    return f"{public_base(base)}/channels/{slug}/events"
