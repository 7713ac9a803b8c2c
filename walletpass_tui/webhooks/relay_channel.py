"""Which relay channel a subscribe URL follows, however it is spelt. Imported by the history's
light readers (``events list``, ``events show``), so it needs nothing beyond the standard library."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import unquote, urlsplit


@lru_cache(maxsize=64)
def relay_channel(subscribe_url: str) -> str:
    """The channel a subscribe URL follows, however it is spelt: the slug of
    ``…/channels/SLUG/events`` (128 random bits, one channel's wherever it is served from).
    A URL of another shape is its scheme, lowercased host, port when not the default, and path
    without empty segments or a trailing slash."""
    parts = urlsplit(subscribe_url.strip())
    path = [unquote(segment) for segment in parts.path.split("/") if segment]
    if len(path) >= 3 and path[-3] == "channels" and path[-1] == "events" and path[-2]:
        return path[-2]
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # not a port: kept as written
        port = None
    host = (parts.hostname or "").rstrip(".")
    default = {"http": 80, "https": 443}.get(scheme)
    where = host if port is None or port == default else f"{host}:{port}"
    return f"{scheme}://{where}/{'/'.join(path)}"
