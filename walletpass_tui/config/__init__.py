"""Settings: where they come from and what they are.

Precedence, highest first: command-line flags > environment (``WALLETPASS_*``) > a TOML file
(``config.toml`` in the config directory, or ``--config PATH``) > defaults. Every value remembers
where it came from so ``config show`` can say so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from walletpass_tui.config.database_url import conninfo_url, mask_database_url
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.config.receiver_path import receiver_path_problem, url_path
from walletpass_tui.config.secrets import Secret
from walletpass_tui.private_files import ensure_private_dir, read_private_file
from walletpass_tui.text import printable

APP_NAME = "walletpass-tui"

ENV_API_KEY = "WALLETPASS_API_KEY"
ENV_BASE_URL = "WALLETPASS_BASE_URL"
ENV_REGISTRATION_URL = "WALLETPASS_REGISTRATION_URL"
ENV_HOME = "WALLETPASS_HOME"
ENV_RELAY_TOKEN = "WALLETPASS_RELAY_TOKEN"
ENV_RELAY_DATABASE = "WALLETPASS_RELAY_DATABASE"
ENV_SECRET = (
    "WALLETPASS_SECRET"  # signing secrets, white space between several (cli/secret_flags.py)
)

DEFAULT_RECEIVER_HOST = "127.0.0.1"
DEFAULT_RECEIVER_PORT = 8787
DEFAULT_RECEIVER_PATH = "/webhooks"
DEFAULT_TOLERANCE_S = 300
DEFAULT_MAX_BODY = 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_RETENTION_DAYS = 30
MAX_RETENTION_DAYS = 36_500  # a century, as the longest duration a command takes
MAX_CONFIG_BYTES = 1024 * 1024  # a config file is a few KiB; a larger one is not read
TUNNEL_PROVIDERS = ("cloudflared", "ngrok")  # --tunnel / [tunnel] provider; "none": no tunnel


@dataclass(frozen=True)
class Settings:
    base_url: str | None = None
    registration_url: str | None = None
    api_key: Secret | None = None
    home: Path = field(default_factory=lambda: default_data_dir())
    receiver_host: str = DEFAULT_RECEIVER_HOST
    receiver_port: int = DEFAULT_RECEIVER_PORT
    receiver_path: str = DEFAULT_RECEIVER_PATH
    tolerance_s: int = DEFAULT_TOLERANCE_S
    max_body: int = DEFAULT_MAX_BODY
    timeout_s: float = DEFAULT_TIMEOUT_S
    retention_days: int = DEFAULT_RETENTION_DAYS
    allow_http: bool = False
    public_url: str | None = None
    relay_token: Secret | None = None  # a relay channel's subscriber token (listen --relay)
    relay_database: str | None = None  # relay serve's database: a PostgreSQL URL or a file
    tunnel: str | None = None  # the tunnel listen starts: cloudflared, ngrok (None: none)
    tunnel_name: str | None = None  # a named cloudflared tunnel
    tunnel_url: str | None = None  # the named tunnel's (or the ngrok domain's) https:// URL
    config_file: Path | None = None
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def database_path(self) -> Path:
        return self.home / "deliveries.sqlite3"

    @property
    def endpoints_path(self) -> Path:
        return self.home / "endpoints.json"

    def source_of(self, name: str) -> str:
        return self.sources.get(name, "default")

    def with_values(self, source: str = "override", **values: Any) -> Settings:
        """A copy with some values replaced, recording ``source`` for each."""
        sources = dict(self.sources)
        for key in values:
            sources[key] = source
        return replace(self, sources=sources, **values)

    def receiver_url(self) -> str:
        host = self.receiver_host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.receiver_port}{url_path(self.receiver_path)}"

    def describe(self) -> list[tuple[str, str, str]]:
        """(name, display value, source) for every setting; secrets masked."""
        rows = [
            ("base_url", self.base_url or "(not set)"),
            ("registration_url", self.registration_url or "(not set)"),
            ("api_key", self.api_key.masked if self.api_key else "(not set)"),
            ("home", str(self.home)),
            ("receiver_host", self.receiver_host),
            ("receiver_port", str(self.receiver_port)),
            ("receiver_path", self.receiver_path),
            ("tolerance_s", str(self.tolerance_s)),
            ("max_body", str(self.max_body)),
            ("timeout_s", str(self.timeout_s)),
            ("retention_days", str(self.retention_days)),
            ("allow_http", "true" if self.allow_http else "false"),
            ("public_url", self.public_url or "(not set)"),
            ("relay_token", self.relay_token.masked if self.relay_token else "(not set)"),
            ("relay_database", mask_database_url(self.relay_database)),
            ("tunnel", self.tunnel or "(not set)"),
            ("tunnel_name", self.tunnel_name or "(not set)"),
            ("tunnel_url", self.tunnel_url or "(not set)"),
        ]
        return [(name, value, self.source_of(name)) for name, value in rows]

    def typed(self) -> dict[str, Any]:
        """Every setting with its JSON type (numbers, booleans, null when unset); secrets masked."""
        return {
            "base_url": self.base_url,
            "registration_url": self.registration_url,
            "api_key": self.api_key.masked if self.api_key else None,
            "home": str(self.home),
            "receiver_host": self.receiver_host,
            "receiver_port": self.receiver_port,
            "receiver_path": self.receiver_path,
            "tolerance_s": self.tolerance_s,
            "max_body": self.max_body,
            "timeout_s": self.timeout_s,
            "retention_days": self.retention_days,
            "allow_http": self.allow_http,
            "public_url": self.public_url,
            "relay_token": self.relay_token.masked if self.relay_token else None,
            "relay_database": (
                mask_database_url(self.relay_database) if self.relay_database else None
            ),
            "tunnel": self.tunnel,
            "tunnel_name": self.tunnel_name,
            "tunnel_url": self.tunnel_url,
        }


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_config_file(env: Mapping[str, str], home: str | Path | None = None) -> Path:
    """``config.toml`` in ``home`` (the --home flag), else in $WALLETPASS_HOME, else the platform's."""
    home = home or env.get(ENV_HOME)
    if home:
        return Path(home).expanduser() / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


# name -> (type, validator). Keys accepted in the TOML file and as flags.
_FIELDS: dict[str, type] = {
    "base_url": str,
    "registration_url": str,
    "api_key": str,
    "home": str,
    "receiver_host": str,
    "receiver_port": int,
    "receiver_path": str,
    "tolerance_s": int,
    "max_body": int,
    "timeout_s": float,
    "retention_days": int,
    "allow_http": bool,
    "public_url": str,
    "relay_token": str,
    "relay_database": str,
    "tunnel": str,
    "tunnel_name": str,
    "tunnel_url": str,
}

# Tables the TOML file may group settings in; their keys are read as if at the top level.
_TOML_TABLES = ("receiver", "service", "relay", "tunnel")
# Tables of the dashboard's preferences (``load_ui_prefs``), not settings.
_UI_TABLES = ("ui", "keys")

# Friendlier TOML spellings, mapped to field names.
_TOML_ALIASES = {
    "data_dir": "home",
    "host": "receiver_host",
    "port": "receiver_port",
    "path": "receiver_path",
    "tolerance": "tolerance_s",
    "timeout": "timeout_s",
}
# Spellings read only inside one table: ``[relay] database = "postgresql://..."``.
_TABLE_ALIASES = {
    "relay": {"database": "relay_database"},
    "tunnel": {"provider": "tunnel", "name": "tunnel_name", "url": "tunnel_url"},
}


def config_text(path: Path) -> str:
    """The text of the config file at ``path``: a regular file (through links; the null device
    reads as empty) of at most ``MAX_CONFIG_BYTES``, never waited on, without the byte order mark
    an editor may have put first. FileNotFoundError when there is none; OSError saying what is
    wrong (a FIFO, a device, too large); UnicodeDecodeError."""
    text = read_private_file(path, MAX_CONFIG_BYTES).decode("utf-8")
    return text.removeprefix("\ufeff")  # the byte order mark some editors save UTF-8 with


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = config_text(path)
    except FileNotFoundError:  # no config file: the defaults, its parser not even loaded
        return {}
    except UnicodeDecodeError:
        raise ConfigError(
            f"The config file {path} is not UTF-8 text; save it as UTF-8 or remove it."
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"Cannot read the config file {path} ({exc.strerror or exc}); fix or remove it."
        ) from None
    import tomllib

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"The config file {path} is not valid TOML ({printable(str(exc), 200)}); "
            "fix or remove it."
        ) from None
    flat: dict[str, Any] = {}
    unknown_tables: list[str] = []
    for key, value in raw.items():
        if isinstance(value, dict):  # allow [receiver] / [service] tables
            if key in _UI_TABLES:
                continue  # the dashboard's preferences: load_ui_prefs reads them
            if key not in _TOML_TABLES:
                unknown_tables.append(f"[{key}]")
                continue
            aliases = _TABLE_ALIASES.get(key, {})
            for sub, subval in value.items():
                name = str(sub)
                flat[aliases.get(name) or _TOML_ALIASES.get(name, name)] = subval
        else:
            flat[_TOML_ALIASES.get(key, key)] = value
    unknown = sorted(set(flat) - set(_FIELDS)) + unknown_tables
    if unknown:
        raise ConfigError(
            f"The config file {path} has unknown setting(s): {', '.join(unknown)}; "
            f"known ones are {', '.join(sorted(_FIELDS))}."
        )
    return flat


def _coerce(name: str, value: Any, origin: str, *, strict: bool = False) -> Any:
    """``value`` as the setting's type. ``strict`` (a TOML file, which has real types) accepts only
    that type (an integer for a float); otherwise text is parsed, as from the environment."""
    kind = _FIELDS[name]
    if strict:
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            shown = "(hidden)" if name in _SECRET_FIELDS else repr(value)
            raise ConfigError(
                f"The setting {name} from {origin} must be a {_TYPE_NAMES[kind]}, not {shown}."
            )
        return kind(value)
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in {"1", "true", "yes", "on"}:
                return True
            if text in {"0", "false", "no", "off"}:
                return False
            raise ValueError(value)
        if kind is int and isinstance(value, bool):
            raise ValueError(value)
        return kind(value)
    except (TypeError, ValueError):
        shown = "(hidden)" if name in _SECRET_FIELDS else repr(value)
        raise ConfigError(
            f"The setting {name} from {origin} must be a {_TYPE_NAMES[kind]}, not {shown}."
        ) from None


_SECRET_FIELDS = ("api_key", "relay_token", "relay_database")
_TYPE_NAMES = {str: "string", int: "whole number", float: "number", bool: "true or false"}


def _validate(values: dict[str, Any], sources: Mapping[str, str]) -> None:
    """Refuse a value out of range, saying where it was set when that was the config file or
    the environment (a flag's problem is on the command line the user just typed)."""

    def refuse(key: str, problem: str) -> ConfigError:
        source = sources.get(key, "")
        where = (
            f"set in the config file {source.removeprefix('file ')}"
            if source.startswith("file ")
            else f"from ${source.removeprefix('env ')}"
            if source.startswith("env ")
            else ""
        )
        return ConfigError(f"{problem.removesuffix('.')} ({where})." if where else problem)

    path = values.get("receiver_path")
    problem = receiver_path_problem(str(path)) if path is not None else None
    if problem:
        raise refuse("receiver_path", problem)
    port = values.get("receiver_port")
    if port is not None and not 0 <= int(port) <= 65535:
        raise refuse("receiver_port", f"The receiver port must be between 0 and 65535, got {port}.")
    tol = values.get("tolerance_s")
    if tol is not None and int(tol) < 0:
        raise refuse("tolerance_s", "The timestamp tolerance must be zero or more seconds.")
    max_body = values.get("max_body")
    if max_body is not None and int(max_body) < 1:
        raise refuse("max_body", "The body limit must be at least 1 byte.")
    retention = values.get("retention_days")
    if retention is not None and not 0 <= int(retention) <= MAX_RETENTION_DAYS:
        raise refuse(
            "retention_days",
            f"retention_days must be from 0 (keep everything) to {MAX_RETENTION_DAYS:,} days "
            f"(a century), not {retention}.",
        )
    timeout = values.get("timeout_s")
    if timeout is not None and not 0 < float(timeout) < float("inf"):
        raise refuse(
            "timeout_s", f"The API call timeout must be more than 0 seconds, got {timeout}."
        )
    tunnel = values.get("tunnel")
    if tunnel is not None and tunnel not in (*TUNNEL_PROVIDERS, "none"):
        raise refuse(
            "tunnel",
            f"The tunnel must be one of {', '.join(TUNNEL_PROVIDERS)} or none, "
            f"not {printable(str(tunnel), 40)!r}.",
        )
    name = values.get("tunnel_name")
    if name is not None and (
        not name
        or len(name) > 100
        or not name.isascii()
        or not name.isprintable()
        or name.startswith("-")
        or " " in name
    ):
        raise refuse(
            "tunnel_name",
            "The tunnel name must be a cloudflared tunnel's name or id: letters, digits, "
            "dashes, no spaces.",
        )
    api_key = values.get("api_key")
    if api_key is not None and (
        not api_key.isascii() or not api_key.isprintable() or " " in api_key
    ):
        # Never show it: it is a secret, even when mistyped.
        raise refuse(
            "api_key",
            "The API key contains spaces, control or non-ASCII characters; copy it again from "
            "your workspace settings.",
        )
    # URLs are checked by the one URL rule, walletpass_tui.api.urls.check_settings_urls (the
    # command line runs it on every Settings it builds); config sits below api and cannot.


# Settings that name a file or directory, with what to give and what leaving them out means.
PATH_SETTINGS: dict[str, tuple[str, str]] = {
    "home": ("a directory", "the default home"),
    "relay_database": ("a PostgreSQL URL or a SQLite file", "relay.sqlite3 in the home"),
}


def blank_path(value: str, *, shell: bool = True) -> str | None:
    """What is wrong with a path as given, or None: an empty one (what an unset shell variable
    gives: ``--home "$DIR"``; ``shell``: say so) or one of white space only (a directory named
    ``" "``). Neither is ever read as "the default", which would have a command act on another
    home than meant."""
    if not value:
        return "is empty (an unset shell variable?)" if shell else "is empty"
    if not value.strip():
        return "is only white space"
    return None


def _check_path_setting(
    name: str, value: Any, origin: str, leave_out: str, *, shell: bool = True
) -> None:
    problem = blank_path(value, shell=shell) if isinstance(value, str) else None
    if problem and name in PATH_SETTINGS:
        what, default = PATH_SETTINGS[name]
        raise ConfigError(f"{origin} {problem}; give {what}, or {leave_out} to use {default}.")


def load_settings(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Build the effective settings. ``flags`` holds only values the user actually passed."""
    env = os.environ if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    for var, key in ((ENV_HOME, "home"), (ENV_RELAY_DATABASE, "relay_database")):
        if var in env:  # set, even to nothing: never the default
            _check_path_setting(key, env[var], f"${var}", "unset it")
    for key, value in flags.items():
        _check_path_setting(key, value, f"The setting {key} from the command line", "leave it out")
    config_path = config_file or default_config_file(env, flags.get("home"))
    explicit_config = config_file is not None
    if explicit_config and not config_path.exists():
        raise ConfigError(f"The config file {config_path} does not exist.")

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    for key, value in _read_toml(config_path).items():
        values[key] = _coerce(key, value, f"config file {config_path}", strict=True)
        _check_path_setting(
            key, value, f"{key} in the config file {config_path}", "remove it", shell=False
        )
        sources[key] = f"file {config_path}"

    env_map = {
        ENV_API_KEY: "api_key",
        ENV_BASE_URL: "base_url",
        ENV_REGISTRATION_URL: "registration_url",
        ENV_HOME: "home",
        ENV_RELAY_TOKEN: "relay_token",
        ENV_RELAY_DATABASE: "relay_database",
    }
    for var, key in env_map.items():
        if env.get(var):
            values[key] = _coerce(key, env[var], f"${var}")
            sources[key] = f"env {var}"

    for key, value in flags.items():
        if key not in _FIELDS:
            raise ConfigError(f"Unknown setting {key}.")
        values[key] = _coerce(key, value, "the command line")
        sources[key] = "flag"

    if isinstance(values.get("api_key"), str):
        values["api_key"] = values["api_key"].strip()
    _validate(values, sources)
    if values.get("tunnel") == "none":
        values["tunnel"] = None
    for key in ("base_url", "registration_url", "public_url", "tunnel_url"):
        if values.get(key):
            values[key] = str(values[key]).rstrip("/")
    api_key = values.pop("api_key", None)
    relay_token = str(values.pop("relay_token", "") or "").strip()
    if "relay_database" in values:
        values["relay_database"] = conninfo_url(str(values["relay_database"])) or None
    home = values.pop("home", None)
    return Settings(
        **values,
        api_key=Secret(api_key) if api_key else None,
        relay_token=Secret(relay_token) if relay_token else None,
        home=Path(home).expanduser() if home else default_data_dir(),
        config_file=config_path,
        sources=sources,
    )


def check_writable(path: Path) -> None:
    """ConfigError unless ``path`` can be (re)written: its directory exists or can be made
    (0700) and accepts a new file (atomic writes replace the file through a new one)."""
    directory = path.parent
    probe = directory / f".write-check-{os.getpid()}"
    try:
        ensure_private_dir(directory)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        probe.unlink()
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory")
    except OSError as exc:
        raise ConfigError(
            f"Cannot write {path} ({exc.strerror or exc}); make the data directory writable or "
            "choose another with --home / WALLETPASS_HOME."
        ) from None
