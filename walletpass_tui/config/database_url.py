"""The relay's database named as a URL or in libpq's keyword/value form: which it is, the one
URL it is read as (``conninfo_url``), and how it is shown (``mask_database_url``: passwords
never, in either form; ``database_url_secrets``: the parts a log line must never hold)."""

from __future__ import annotations

import re
from urllib.parse import quote

from walletpass_tui.config.errors import ConfigError

_DSN_SECRET_KEYS = frozenset({"password", "sslpassword"})


# libpq's keyword/value form (``host=db port=5432 dbname=relay password=...``), as taken: the
# keywords the relay's driver understands, each written as the same parameter of a URL.
_CONNINFO_KEYS = frozenset(
    {
        "host",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "sslmode",
        "sslcert",
        "sslkey",
        "sslrootcert",
        "sslcrl",
        "sslpassword",
        "target_session_attrs",
    }
)
_CONNINFO_START = re.compile(r"\s*([A-Za-z_]+)\s*=")
# libpq's other keywords: a setting that starts with one is that form too (and refused), not a
# file name.
_LIBPQ_KEYS = _CONNINFO_KEYS | {
    "hostaddr",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslcompression",
    "sslcertmode",
    "sslnegotiation",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "load_balance_hosts",
    "channel_binding",
    "require_auth",
}


def conninfo_url(value: str) -> str:
    """A relay database setting as the relay takes it: libpq's keyword/value form
    (``host=db port=5432 dbname=relay user=relay password=...``, quoted values and backslash
    escapes as libpq reads them) becomes the same ``postgresql://`` URL, so it is PostgreSQL and
    its password is masked wherever it is shown; anything else is returned as it is. A setting
    in that form the relay cannot take raises ConfigError, which never quotes a value."""
    text = value.strip()
    if is_postgres_url(text) or "://" in text:
        return text
    first = _CONNINFO_START.match(text)
    if first is None or first.group(1).lower() not in _LIBPQ_KEYS:
        if re.search(r"(^|\s)(ssl)?password\s*=", text):
            raise ConfigError(
                "The relay database setting holds 'password=' but is not a postgresql:// URL "
                "nor libpq's keyword=value form; write it as postgresql://user@host:5432/db "
                "and keep the password in ~/.pgpass."
            )
        return text
    pairs = _conninfo_pairs(text)
    unknown = sorted({key for key, _ in pairs} - _CONNINFO_KEYS)
    if unknown:
        raise ConfigError(
            f"The relay database setting (libpq's keyword=value form) has {', '.join(unknown)}, "
            "which the relay does not take; write it as a postgresql:// URL."
        )
    query = "&".join(f"{key}={quote(val, safe='')}" for key, val in pairs)
    return f"postgresql://?{query}"


def _conninfo_pairs(text: str) -> list[tuple[str, str]]:
    """``key = value`` pairs as libpq reads them; ConfigError (without the text) otherwise."""
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return pairs
        found = _CONNINFO_START.match(text, i)
        if found is None:
            raise ConfigError(
                "The relay database setting is not libpq's keyword=value form as written (each "
                "part is key=value, a value with spaces in single quotes); check it, or write "
                "it as a postgresql:// URL."
            )
        key, i = found.group(1).lower(), found.end()
        while i < n and text[i].isspace():
            i += 1
        chars: list[str] = []
        quoted = i < n and text[i] == "'"
        i += quoted
        while i < n:
            ch = text[i]
            if ch == "\\" and i + 1 < n:
                chars.append(text[i + 1])
                i += 2
                continue
            if (quoted and ch == "'") or (not quoted and ch.isspace()):
                break
            chars.append(ch)
            i += 1
        if quoted:
            if i >= n:
                raise ConfigError(
                    "The relay database setting has a quoted value that does not end; check "
                    "its single quotes."
                )
            i += 1
        pairs.append((key, "".join(chars)))


def is_postgres_url(value: str | None) -> bool:
    """Whether a relay database setting names PostgreSQL (else it is a SQLite file's path)."""
    return bool(value) and str(value).strip().lower().startswith(("postgresql://", "postgres://"))


def mask_database_url(value: str | None) -> str:
    """A relay database setting fit to print: a PostgreSQL URL without its password (in the
    user part or a ``password=`` parameter); a SQLite path as it is."""
    if not value:
        return "(not set)"
    if not is_postgres_url(value):
        return value
    scheme, _, rest = value.strip().partition("://")
    rest, hash_mark, _fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    slash = rest.find("/")
    netloc, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}{':…' if colon else ''}@{hosts}"
    if question:
        parts = []
        for item in query.split("&"):
            key, _, _ = item.partition("=")
            if key.lower() in _DSN_SECRET_KEYS:
                parts.append(f"{key}=…")
            else:
                parts.append(item)
        query = "&".join(parts)
    return f"{scheme}://{netloc}{path}{question}{query}" + ("#…" if hash_mark else "")


def database_url_secrets(value: str | None) -> list[str]:
    """Every secret a PostgreSQL URL holds (the user part's password, each ``password=`` and
    ``sslpassword=`` parameter), as written and percent-decoded, the longest first: to scrub
    from a driver's message, which may echo any of them."""
    if not is_postgres_url(value):
        return []
    from urllib.parse import unquote

    rest = str(value).strip().partition("://")[2].partition("#")[0]
    rest, _, query = rest.partition("?")
    netloc = rest.split("/", 1)[0]
    found: set[str] = set()
    userinfo, at, _hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        found.add(userinfo.partition(":")[2])
    for item in query.split("&"):
        key, _, secret = item.partition("=")
        if key.lower() in _DSN_SECRET_KEYS:
            found.add(secret)
    found |= {unquote(secret) for secret in found}
    return sorted((s for s in found if s), key=len, reverse=True)
