"""Endpoints known locally, with their signing secrets, kept in the data directory (mode 0600).

The service returns an endpoint's secret only once, in the answer that creates it, so every endpoint
created through this tool is written here the moment the answer is parsed. Endpoints created
elsewhere (the service's web settings) can be imported with their secret. The receiver verifies
deliveries with these secrets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.models import WebhookEndpoint, format_created_at, validate_topics
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.config.secrets import Secret
from walletpass_tui.private_files import read_private_file, write_private_file

if TYPE_CHECKING:  # verify (HMAC, standardwebhooks) is loaded when a secret is first checked
    from walletpass_tui.webhooks.verify import SigningKey

FILE_VERSION = 1
MAX_REGISTRY_BYTES = 4 * 1024 * 1024  # thousands of endpoints; a larger file is not read


@dataclass(frozen=True)
class LocalEndpoint:
    id: str
    url: str
    topics: tuple[str, ...]
    enabled: bool
    secret: Secret
    created_at: str | None = None
    origin: str = "created"  # "created" here, or "imported"
    tunnel: bool = False  # created for a tunnel's public URL (endpoints create --from-listener)
    stale: str | None = None  # why it no longer receives and what to do (its tunnel URL is gone)
    # The service's create answer; holds the secret in clear, so never part of repr().
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_created(cls, endpoint: WebhookEndpoint, *, tunnel: bool = False) -> LocalEndpoint:
        return cls(
            id=endpoint.id,
            url=endpoint.url,
            topics=tuple(endpoint.enabled_topics),
            enabled=endpoint.enabled,
            secret=endpoint.secret,
            created_at=format_created_at(endpoint.created_at),
            origin="created",
            tunnel=tunnel,
            raw=dict(endpoint.raw),
        )

    def signing_key(self) -> SigningKey:
        from walletpass_tui.webhooks.verify import SigningKey

        return SigningKey.from_secret(self.secret.reveal(), endpoint_id=self.id)

    def public_dict(self) -> dict[str, Any]:
        """For listings: the secret masked."""
        return {
            "id": self.id,
            "url": self.url,
            "enabledTopics": list(self.topics),
            "enabled": self.enabled,
            "createdAt": self.created_at,
            "secret": self.secret.masked,
            "origin": self.origin,
            "tunnel": self.tunnel,
            "stale": self.stale,
        }

    def _to_file(self) -> dict[str, Any]:
        data = self.public_dict()
        data["secret"] = self.secret.reveal()
        if self.raw is not None:
            data["serviceResponse"] = dict(self.raw)
        return data

    @classmethod
    def _from_file(cls, data: Mapping[str, Any]) -> LocalEndpoint:
        return cls(
            id=str(data["id"]),
            url=str(data["url"]),
            topics=tuple(data.get("enabledTopics", ())),
            enabled=bool(data.get("enabled", True)),
            secret=Secret(str(data["secret"])),
            created_at=data.get("createdAt"),
            origin=str(data.get("origin", "created")),
            tunnel=data.get("tunnel") is True,
            stale=str(data["stale"]) if data.get("stale") else None,
            raw=data.get("serviceResponse"),
        )


def validate_import(
    endpoint_id: str, url: str, topics: Sequence[str], secret: str
) -> tuple[str, str, list[str], str]:
    """Check an endpoint the user types in; raises ConfigError with a clear message."""
    endpoint_id = endpoint_id.strip()
    if (
        not endpoint_id.startswith("ep_")
        or len(endpoint_id) <= 3
        or any(c.isspace() for c in endpoint_id)
    ):
        raise ConfigError(
            "An endpoint id starts with ep_ followed by its identifier, e.g. ep_3f2a9c."
        )
    if not url.strip():
        raise ConfigError("Give the endpoint's URL.")
    try:
        topics = validate_topics(topics)
    except ApiError as exc:
        raise ConfigError(str(exc)) from None
    from walletpass_tui.webhooks.verify import SecretError, parse_secret

    try:
        parse_secret(secret)
    except SecretError as exc:
        raise ConfigError(str(exc)) from None
    return endpoint_id, url.strip(), topics, secret.strip()


class EndpointRegistry:
    """The ``endpoints.json`` file. Every write replaces the file atomically with mode 0600."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[LocalEndpoint]:
        try:
            # A regular file (through links), bounded; one loosened is tightened (it holds secrets).
            raw = read_private_file(self.path, MAX_REGISTRY_BYTES, tighten=True)
        except FileNotFoundError:  # no registry file: no endpoints
            return []
        except OSError as exc:
            raise ConfigError(
                f"Cannot read {self.path} ({exc.strerror or exc}); restore it from a backup or "
                "move it aside (it holds the signing secrets of your endpoints)."
            ) from None
        try:
            data = json.loads(raw)
            return [LocalEndpoint._from_file(item) for item in data.get("endpoints", [])]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ConfigError(
                f"{self.path} is damaged and cannot be read; restore it from a backup or move it "
                "aside (it holds the signing secrets of your endpoints)."
            ) from None

    def get(self, endpoint_id: str) -> LocalEndpoint | None:
        return next((e for e in self.load() if e.id == endpoint_id), None)

    def save(self, endpoint: LocalEndpoint) -> None:
        """Add or replace (by id) one endpoint."""
        endpoints = [e for e in self.load() if e.id != endpoint.id]
        endpoints.append(endpoint)
        self._write(endpoints)

    def record_created(self, endpoint: WebhookEndpoint, *, tunnel: bool = False) -> None:
        self.save(LocalEndpoint.from_created(endpoint, tunnel=tunnel))

    def mark_stale(self, endpoint_ids: Iterable[str], note: str) -> None:
        """Note on each of ``endpoint_ids`` why it no longer receives (its secret is kept: the
        deliveries it received stay verifiable and replayable)."""
        ids = set(endpoint_ids)
        if ids:
            self._write(replace(e, stale=note) if e.id in ids else e for e in self.load())

    def import_endpoint(
        self,
        endpoint_id: str,
        url: str,
        topics: Sequence[str],
        secret: str,
        *,
        enabled: bool = True,
    ) -> LocalEndpoint:
        endpoint_id, url, topic_list, secret = validate_import(endpoint_id, url, topics, secret)
        endpoint = LocalEndpoint(
            id=endpoint_id,
            url=url,
            topics=tuple(topic_list),
            enabled=enabled,
            secret=Secret(secret),
            created_at=None,
            origin="imported",
        )
        self.save(endpoint)
        return endpoint

    def signing_keys(self) -> list[SigningKey]:
        from walletpass_tui.webhooks.verify import SecretError

        keys: list[SigningKey] = []
        for endpoint in self.load():
            try:
                keys.append(endpoint.signing_key())
            except SecretError:
                continue  # imported secrets are validated; a hand-edited bad one is skipped
        return keys

    def _write(self, endpoints: Iterable[LocalEndpoint]) -> None:
        payload = {
            "version": FILE_VERSION,
            "updatedAt": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "endpoints": [e._to_file() for e in endpoints],
        }
        try:
            write_private_file(self.path, json.dumps(payload, indent=2).encode() + b"\n")
        except OSError as exc:
            raise ConfigError(
                f"Cannot write {self.path} ({exc.strerror or exc}); check the data directory "
                "(--home / WALLETPASS_HOME) is writable."
            ) from None
