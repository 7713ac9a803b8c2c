"""The dashboard's preferences, kept in the config file beside the settings: ``[ui] theme`` and
``[keys]``; read with the file, and the theme written back keeping the rest of the file as it
was."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from walletpass_tui.config import config_text
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.private_files import write_private_file
from walletpass_tui.text import printable


@dataclass(frozen=True)
class UiPrefs:
    """What the dashboard remembers between runs: its theme (``[ui] theme``) and keys remapped by
    binding id (``[keys]``, checked by the dashboard, which knows the ids)."""

    theme: str | None = None
    keys: Mapping[str, Any] = field(default_factory=dict)


def load_ui_prefs(path: Path | None) -> UiPrefs:
    """The preferences in the config file at ``path`` (none when there is no file); ConfigError,
    one sentence naming the file, when they are not of the right shape."""
    if path is None:
        return UiPrefs()
    import tomllib

    try:
        raw = tomllib.loads(config_text(path))
    except FileNotFoundError:  # no config file: no preferences
        return UiPrefs()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            f"The config file {path} cannot be read ({printable(why, 200)}); fix or remove it."
        ) from None
    ui = raw.get("ui", {})
    keys = raw.get("keys", {})
    if not isinstance(ui, dict) or not isinstance(keys, dict):
        raise ConfigError(f"In the config file {path}, [ui] and [keys] must be tables.")
    unknown = sorted(set(ui) - {"theme"})
    if unknown:
        raise ConfigError(
            f"The config file {path} has unknown [ui] setting(s): {', '.join(unknown)}; "
            "the known one is theme."
        )
    theme = ui.get("theme")
    if theme is not None and not isinstance(theme, str):
        raise ConfigError(f"In the config file {path}, [ui] theme must be a string (a name).")
    return UiPrefs(theme=theme, keys=keys)


def save_ui_theme(path: Path, theme: str) -> None:
    """Write ``[ui] theme = "..."`` into the config file at ``path`` (created if need be), keeping
    everything else in it as it was, comments included; the file stays 0600. A config file that
    is a symlink is written through (the link stays); when that fails, the error says where the
    link leads."""
    import tomlkit

    try:
        try:
            text = config_text(path)
        except FileNotFoundError:  # made now
            text = ""
        document = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            f"Cannot save the theme in {path} ({printable(why, 200)}); fix or remove the file."
        ) from None
    ui = document.get("ui")
    if ui is None:
        ui = tomlkit.table()
        document["ui"] = ui
    elif not isinstance(ui, dict):
        raise ConfigError(f"Cannot save the theme in {path}: its ui key is not a table.")
    ui["theme"] = theme
    try:
        write_private_file(path, tomlkit.dumps(document).encode("utf-8"))
    except OSError as exc:
        where = str(path)
        if path.is_symlink():  # written through: say where the link leads
            where += f", a link to {os.path.realpath(path)}"
        raise ConfigError(
            f"Cannot save the theme in {printable(where, 400)} ({exc.strerror or exc}); set "
            "[ui] theme there yourself, or choose one per run with --theme."
        ) from None
