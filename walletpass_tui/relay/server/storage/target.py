"""Which database a relay uses: ``--database``, ``WALLETPASS_RELAY_DATABASE`` or ``[relay]
database`` in the config file. A ``postgresql://`` (or ``postgres://``) URL, or libpq's
keyword/value form (``host=db dbname=relay ...``, taken as the same URL), is PostgreSQL; a path,
or nothing, is a SQLite file (``relay.sqlite3`` in the data directory by default).

The URL may carry a password; it is never shown: ``display`` drops it, and ``describe`` (what
``/healthz`` says) keeps only the scheme, host, port and database name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from walletpass_tui.config.database_url import conninfo_url, is_postgres_url, mask_database_url
from walletpass_tui.relay.server.storage.errors import RelayStoreError
from walletpass_tui.text import parse_ascii_int

DB_NAME = "relay.sqlite3"
SQLITE = "sqlite"
POSTGRESQL = "postgresql"


def database_path(home: Path) -> Path:
    return Path(home) / DB_NAME


@dataclass(frozen=True)
class DatabaseTarget:
    kind: str  # SQLITE or POSTGRESQL
    path: Path | None = None  # SQLite's file
    url: str | None = field(default=None, repr=False)  # PostgreSQL's, with its password

    @property
    def display(self) -> str:
        """Fit to print: the file, or the URL without its password."""
        if self.kind == SQLITE:
            return str(self.path)
        return mask_database_url(self.url)

    def describe(self) -> dict[str, Any]:
        """For ``/healthz``: what the database is, nothing secret (no user, no password)."""
        if self.kind == SQLITE:
            return {"backend": SQLITE, "file": self.path.name if self.path else None}
        host, port, name = _url_parts(self.url or "")
        return {"backend": POSTGRESQL, "host": host, "port": port, "database": name}

    def __repr__(self) -> str:
        return f"DatabaseTarget({self.kind}, {self.display!r})"


def database_target(value: str | None, home: Path) -> DatabaseTarget:
    """The database named by a setting (None: the data directory's SQLite file); libpq's
    keyword/value form is PostgreSQL too (``conninfo_url``), never a file name."""
    text = conninfo_url(value or "")
    if is_postgres_url(text):
        return DatabaseTarget(POSTGRESQL, url=text)
    if "://" in text:
        scheme = text.split("://", 1)[0][:20]
        raise RelayStoreError(
            f"The relay database {scheme}://... is not supported: give a postgresql:// URL or "
            "the path of a SQLite file."
        )
    if not text:
        return DatabaseTarget(SQLITE, path=database_path(home))
    path = Path(text).expanduser()
    if path.is_dir():
        path = database_path(path)
    return DatabaseTarget(SQLITE, path=path)


def _url_parts(url: str) -> tuple[str | None, int | None, str | None]:
    """(host, port, database name) of a PostgreSQL URL, as libpq would default them where the
    URL is silent (``PGHOST``, ``PGPORT``, ``PGDATABASE``, else localhost and 5432). A name the
    URL and the environment do not give is None, not libpq's default (the user name, which
    ``/healthz`` never shows)."""
    rest = url.split("://", 1)[1] if "://" in url else url
    rest = rest.split("#", 1)[0]
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    params = dict(
        (unquote(k), unquote(v))
        for k, _, v in (item.partition("=") for item in query.split("&") if item)
    )
    hosts = netloc.rpartition("@")[2]  # the user part is never shown
    first = hosts.split(",", 1)[0]
    host: str | None
    port_text: str | None
    if first.startswith("["):
        host, _, after = first[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else None
    else:
        host, _, port_text = first.partition(":")
    host = unquote(host) if host else params.get("host") or os.environ.get("PGHOST") or "localhost"
    port_text = port_text or params.get("port") or os.environ.get("PGPORT") or "5432"
    port = parse_ascii_int(port_text, max_digits=5)
    name = unquote(path) or params.get("dbname") or os.environ.get("PGDATABASE") or None
    return host, port, name
