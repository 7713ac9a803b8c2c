"""The dashboard's preferences from the config file: the theme (the saved one unless ``--theme``
chose one, saved again whenever the user picks another) and the keys remapped in ``[keys]``
(applied at once; whether each id names a binding is checked once the screens holding the
bindings have loaded). A problem with either is said in one notification and the defaults stay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.theme import Theme

from walletpass_tui.config.errors import ConfigError
from walletpass_tui.config.ui_prefs import UiPrefs, load_ui_prefs, save_ui_theme
from walletpass_tui.text import printable
from walletpass_tui.ui.lazily import Lazily

DARK_THEME = "textual-dark"
LIGHT_THEME = "textual-light"


class Preferences:
    """The theme and the keys of one app: ``load`` on mount, ``check_key_ids`` after the first
    frame, ``toggle_theme`` for the dark/light key."""

    def __init__(self, app: App[Any], theme: str | None) -> None:
        self._app = app
        self.theme_given = theme is not None  # --theme: the saved theme does not apply
        self.config_file: Path | None = None
        self._saved_theme: str | None = None
        self._keys_unchecked: dict[str, str] = {}
        theme = theme or DARK_THEME
        app.theme = theme
        chosen = app.get_theme(theme)
        self._dark_theme = theme if chosen is not None and chosen.dark else DARK_THEME

    def load(self, path: Path | None) -> None:
        """The saved theme (unless --theme chose one) and the keys remapped in ``[keys]``, read
        from ``path``; from now on a theme chosen is saved there."""
        app = self._app
        self.config_file = path
        try:
            prefs = load_ui_prefs(path)
        except ConfigError as exc:  # shown as a notification
            app.notify(str(exc), title="Preferences not read", severity="error", markup=False)
            prefs = UiPrefs()
        if prefs.theme and not self.theme_given:
            chosen = app.get_theme(prefs.theme)
            if chosen is not None:
                app.theme = prefs.theme
                if chosen.dark:
                    self._dark_theme = prefs.theme
            else:
                app.notify(
                    f"The config file {path} names the theme {printable(prefs.theme, 40)!r}, "
                    "which is not one of this version's (ctrl+p, then Theme, lists them).",
                    severity="warning",
                    markup=False,
                )
        # Only a theme chosen from now on is saved (not one given with --theme).
        self._saved_theme = app.theme
        if prefs.keys:
            from walletpass_tui.ui.keymap import check_keymap

            # Applied now; whether each id names a binding is checked after the first frame (the
            # screens that hold the bindings load then), see check_key_ids.
            checked = check_keymap(prefs.keys, prefs.keys, path)
            for problem in checked.problems:
                app.notify(problem, title="Keys", severity="error", timeout=20, markup=False)
            self._keys_unchecked = checked.keymap
            app.set_keymap(checked.keymap)
        app.theme_changed_signal.subscribe(app, self._theme_changed)

    @property
    def keys_unchecked(self) -> bool:
        """``[keys]`` remapped something whose id is not checked yet."""
        return bool(self._keys_unchecked)

    def check_key_ids(self, binding_ids: Callable[[], Iterable[str]]) -> None:
        """Entries of [keys] naming no binding are said (they do nothing) and left out."""
        keys, self._keys_unchecked = self._keys_unchecked, {}
        if not keys:
            return
        from walletpass_tui.ui.keymap import check_keymap

        checked = check_keymap(keys, binding_ids(), self.config_file)
        for problem in checked.problems:
            self._app.notify(problem, title="Keys", severity="error", timeout=20, markup=False)
        if len(checked.keymap) != len(keys):
            self._app.set_keymap(checked.keymap)

    def toggle_theme(self) -> None:
        """Dark to light, or back to the dark theme last used."""
        app = self._app
        current = app.get_theme(app.theme)
        if current is not None and current.dark:
            self._dark_theme = app.theme
            app.theme = LIGHT_THEME
        else:
            app.theme = self._dark_theme

    def _theme_changed(self, theme: Theme) -> None:
        """A theme chosen (the palette's picker, or d) is saved for the next run."""
        path = self.config_file
        if path is None or theme.name == self._saved_theme:
            return
        self._saved_theme = theme.name
        app = self._app

        async def save() -> None:
            try:
                await asyncio.to_thread(save_ui_theme, path, theme.name)
            except ConfigError as exc:  # shown as a notification
                app.notify(str(exc), title="Theme not saved", severity="error", markup=False)

        app.run_worker(Lazily(save), group="save-theme", exclusive=True, exit_on_error=False)
