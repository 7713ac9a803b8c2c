"""Preferences persist: the theme picked in the palette is saved to the config file (0600, its
other content and comments kept) and used on the next run unless ``--theme`` says otherwise; a
``[keys]`` table remaps bindings by id, ``?`` shows the keys as remapped, and a bad entry is said
in one line naming the file."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.cli import main
from walletpass_tui.config import load_settings
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.help import HelpScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.webhooks.store import Store

CONFIG = """\
# my receiver
[receiver]
port = 8787  # the port my tunnel points at

[keys]
"log.filter" = "ctrl+f"
"""


def notes(app: WalletPassApp) -> list[str]:
    return [n.message for n in app._notifications]


async def ready(app: WalletPassApp) -> EventLogPane:
    await wait_for(lambda: isinstance(app.screen, MainScreen))
    log = app.screen.query_one(EventLogPane)
    await wait_for(lambda: log.total is not None)
    return log


async def test_the_theme_and_a_remapped_key_survive_a_restart(
    make_app: Callable[..., WalletPassApp], store: Store, tmp_path: Path
) -> None:
    await record_all(store, [attempt(1)])
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    config.chmod(0o644)

    app = make_app(config_file=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app)
        assert app.theme == "textual-dark"
        # Textual's theme picker, from the command palette.
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"theme")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        await pilot.press(*"nord")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(lambda: app.theme == "nord")
        await wait_for(lambda: 'theme = "nord"' in config.read_text(), timeout=5)

    text = config.read_text()
    assert text.startswith(CONFIG)  # comments and the other settings kept as they were
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    settings = load_settings(config_file=config, env={})
    assert settings.receiver_port == 8787  # still a valid config file for everything else

    app = make_app(config_file=config)
    async with app.run_test(size=(120, 36)) as pilot:
        log = await ready(app)
        assert app.theme == "nord"
        await pilot.press("ctrl+f")  # the remapped key opens the filter
        await wait_for(lambda: log.filter_input.has_focus)
        await pilot.press("escape")
        await wait_for(lambda: not log.filter_input.display)
        await pilot.press("slash")  # the default key no longer does
        await pilot.pause(0.2)
        assert not log.filter_input.display
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen))
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = help_screen.key_rows(EventLogPane.BINDINGS)
        filter_row = next(row for row in rows if row[2] == "log.filter")
        assert filter_row[0] == "^f"
        assert not any(n for n in notes(app) if "config file" in n)


async def test_theme_flag_overrides_the_saved_theme_and_is_not_saved(
    make_app: Callable[..., WalletPassApp], tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[ui]\ntheme = "nord"\n')
    app = make_app(config_file=config, theme="dracula")
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app)
        assert app.theme == "dracula"
        await pilot.pause(0.3)
    assert config.read_text() == '[ui]\ntheme = "nord"\n'


async def test_saving_the_theme_writes_through_a_symlinked_config_file(
    make_app: Callable[..., WalletPassApp], tmp_path: Path
) -> None:
    """A config file kept with one's dotfiles (config.toml a link to it) gets the theme; the link
    stays a link."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    kept = dotfiles / "walletpass.toml"
    kept.write_text(CONFIG)
    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir()
    config.symlink_to(Path("..") / "dotfiles" / "walletpass.toml")
    app = make_app(config_file=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app)
        await pilot.press("d")
        await wait_for(lambda: 'theme = "textual-light"' in kept.read_text(), timeout=5)
    assert config.is_symlink() and config.read_text() == kept.read_text()
    assert kept.read_text().startswith(CONFIG)
    assert sorted(p.name for p in dotfiles.iterdir()) == ["walletpass.toml"]
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]


async def test_a_theme_that_cannot_be_saved_through_a_link_says_where_the_link_points(
    make_app: Callable[..., WalletPassApp], tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.symlink_to(tmp_path / "gone" / "walletpass.toml")  # its directory does not exist
    app = make_app(config_file=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app)
        await pilot.press("d")
        await wait_for(lambda: any("Cannot save the theme" in n for n in notes(app)), timeout=5)
    [note] = [n for n in notes(app) if "Cannot save the theme" in n]
    assert f"a link to {tmp_path / 'gone' / 'walletpass.toml'}" in note
    assert config.is_symlink() and not (tmp_path / "gone").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
async def test_a_config_file_linked_to_the_null_device_is_read_as_empty_and_never_replaced(
    make_app: Callable[..., WalletPassApp], tmp_path: Path
) -> None:
    """``ln -s /dev/null config.toml`` (here a node made like it): the dashboard starts with no
    settings, and ``d`` says the theme cannot be saved there instead of replacing the device (as
    root, the system's /dev/null would become a 0600 file no other user can open)."""
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.stat(os.devnull).st_rdev)
    os.chmod(null, 0o666)  # noqa: S103 - as /dev/null is
    config = tmp_path / "config.toml"
    config.symlink_to(null)
    app = make_app(config_file=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app)
        await pilot.press("d")
        await wait_for(lambda: any("Cannot save the theme" in n for n in notes(app)), timeout=5)
    [note] = [n for n in notes(app) if "Cannot save the theme" in n]
    assert f"a link to {null}" in note and "a character device, not a regular file" in note
    after = os.stat(null)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == os.stat(os.devnull).st_rdev
    assert stat.S_IMODE(after.st_mode) == 0o666
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".null")]  # no temporary file


async def test_bad_key_entries_are_said_in_one_line_naming_the_file(
    make_app: Callable[..., WalletPassApp], tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[keys]\n"no.such.binding" = "x"\n"log.follow" = "ctrl+"\n"app.help" = "hyperspace"\n'
        '"copy.curl" = "C"\n'
    )
    app = make_app(config_file=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app)
        await wait_for(lambda: sum(str(config) in n for n in notes(app)) == 3)
        said = [n for n in notes(app) if str(config) in n]
        assert all("\n" not in n for n in said)
        assert any("'no.such.binding'" in n and "no binding id" in n for n in said)
        assert any("log.follow" in n for n in said)
        assert any("app.help" in n and "'hyperspace' is not a key name" in n for n in said)
        # The good entry applies; the dashboard runs on.
        await pilot.press("C")
        await wait_for(
            lambda: bool(app.clipboard) or any("Select a delivery" in n for n in notes(app))
        )


def test_an_unknown_theme_is_a_usage_error_listing_the_themes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--theme", "no-such-theme"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "unknown theme 'no-such-theme'" in err and "nord" in err and "textual-light" in err


def test_every_binding_has_an_id_that_stands_for_one_action(
    make_app: Callable[..., WalletPassApp],
) -> None:
    from textual.binding import Binding

    app = make_app()
    actions: dict[str, set[str]] = {}
    for title, bindings in app.key_groups():
        for binding in Binding.make_bindings(bindings):
            assert binding.id, f"{title}: {binding.action} has no id"
            actions.setdefault(binding.id, set()).add(binding.action)
    # One id, one meaning: the forms' submit key is each form's own action, on purpose.
    shared = {i: a for i, a in actions.items() if len(a) > 1}
    assert shared == {"form.submit": {"create", "save", "send"}}
    assert {"copy.curl", "copy.body", "copy.headers", "main.stats", "main.toggle_left"} <= set(
        actions
    )
