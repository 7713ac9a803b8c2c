"""Importing an endpoint created elsewhere, without ever losing a secret already stored.

The service returns an endpoint's signing secret once; the registry may hold the only copy. So an
import over an id that is already known is refused (:class:`EndpointExists`) unless the caller
asks to replace it, and then the previous entry is first written to a private backup file
(:func:`backup_endpoint`). ``endpoints import`` and the dashboard's import form both use this.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from walletpass_tui.api.urls import ENDPOINT_SCHEMES, UrlError, check_url
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.private_files import write_private_file
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry, LocalEndpoint

__all__ = ["EndpointExists", "backup_endpoint", "import_endpoint"]


class EndpointExists(ConfigError):
    """The id is already known locally; importing over it would lose its secret."""


def import_endpoint(
    registry: EndpointRegistry,
    endpoint_id: str,
    url: str,
    topics: Sequence[str],
    secret: str,
    *,
    enabled: bool = True,
    allow_http: bool = False,
    replace: bool = False,
) -> LocalEndpoint:
    """Record an endpoint made elsewhere. Raises ConfigError (EndpointExists for a known id unless
    ``replace``) with one sentence to show; ``url`` must be https:// unless ``allow_http``."""
    try:
        check_url(url, what="The endpoint URL", schemes=ENDPOINT_SCHEMES, allow_http=allow_http)
    except UrlError as exc:
        raise ConfigError(str(exc)) from None
    existing = registry.get(endpoint_id.strip())
    if existing is not None and not replace:
        raise EndpointExists(
            f"{existing.id} is already known here (its secret {existing.secret.masked}, "
            f"{existing.origin}); importing would replace that secret. To overwrite it, import "
            "again with --replace: the old entry is kept in a backup file."
        )
    return registry.import_endpoint(endpoint_id, url, topics, secret, enabled=enabled)


def backup_endpoint(registry: EndpointRegistry, endpoint_id: str) -> Path | None:
    """Write the entry for ``endpoint_id`` (its secret included) to a new private file (0600)
    beside the registry; its path, or None when the id is not known."""
    existing = registry.get(endpoint_id.strip())
    if existing is None:
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = registry.path.with_name(f"endpoints-backup-{existing.id}-{stamp}.json")
    entry = existing.public_dict() | {"secret": existing.secret.reveal()}
    if existing.raw is not None:
        entry["serviceResponse"] = dict(existing.raw)
    try:
        write_private_file(path, json.dumps({"endpoints": [entry]}, indent=2).encode() + b"\n")
    except OSError as exc:
        raise ConfigError(
            f"Cannot write the backup {path} ({exc.strerror or exc}); nothing was replaced."
        ) from None
    return path
