"""Every ``--help`` shows the command's own options first and the settings every command shares
once, in one line saying where to read more; ``walletpass-tui --help`` describes those settings in
full. One name for the header flag everywhere (``-H``/``--header``), the old one still working."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from walletpass_tui.cli import build_parser
from walletpass_tui.cli.common import SETTINGS_TITLE

SETTING_HELP = "read settings from this TOML file"  # the --config flag's description


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


COMMANDS = [(path, parser) for path, parser in _parsers(build_parser()) if path]


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")


def test_events_show_help_is_its_own_options_and_one_line_of_settings() -> None:
    text = dict(COMMANDS)[("events", "show")].format_help()
    body = text.split("\nexamples:")[0].strip().splitlines()
    assert (
        body[0] == "usage: walletpass-tui events show [-h] [--json | --raw] [--attempt N] MESSAGE"
    )
    assert len(body) <= 20, text  # it was 30 lines for one argument
    assert "--home DIR" not in text and SETTING_HELP not in text
    assert (
        "settings every command takes: --config, --home, --base-url, --registration-url, "
        "--api-key, --log-file, --allow-http; 'walletpass-tui --help' says what each does"
    ) in " ".join(text.split())


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_every_command_shows_its_own_options_before_the_shared_settings(
    path: tuple[str, ...],
) -> None:
    parser = dict(COMMANDS)[path]
    text = parser.format_help()
    assert SETTING_HELP not in text and SETTINGS_TITLE not in text
    usage = text.split("\n\n")[0]
    assert "--config" not in usage and "--api-key" not in usage
    if any(a.option_strings == ["--home"] for a in parser._actions):
        own = [
            a.option_strings[-1]
            for a in parser._actions
            if a.option_strings and a.dest not in {"help", "config", "home", "base_url",
                                                     "registration_url", "api_key", "log_file",
                                                     "allow_http"}
            and a.help != argparse.SUPPRESS
        ]  # fmt: skip
        settings_at = text.index("settings every command takes:")
        for flag in own:
            assert text.index(flag) < settings_at, (flag, text)


def test_the_top_level_help_describes_the_settings_in_full_once() -> None:
    text = build_parser().format_help()
    assert text.count(SETTING_HELP) == 1
    assert text.count(SETTINGS_TITLE) == 1
    assert text.index("--theme") < text.index(SETTINGS_TITLE)  # its own options first


@pytest.mark.parametrize(
    "command",
    [["listen"], ["events", "replay"], ["check"], []],
    ids=["listen", "replay", "check", "dashboard"],
)
def test_the_header_flag_has_one_name_everywhere(command: list[str]) -> None:
    parser = build_parser(command or None)
    for name in command:
        parser = next(
            a.choices[name] for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )
    text = parser.format_help()
    assert "-H, --header 'NAME: VALUE'" in text
    assert "--forward-header" not in text  # the old name works, unshown
    argv = ["-H", "A: 1", "--header", "B: 2"]
    if command in (["listen"], []):
        argv += ["--forward-header", "C: 3"]
    tail = {
        "listen": [],
        "events": ["msg_1", "--to", "http://127.0.0.1:9/"],
        "check": ["http://127.0.0.1:9/"],
    }
    args = parser.parse_args([*tail.get(command[0] if command else "", []), *argv])
    assert args.header[:2] == ["A: 1", "B: 2"] and len(args.header) == len(argv) // 2
