"""How every ``--help`` reads: the command's own arguments and options first, then one line
naming the settings every command shares (``--home``, ``--config``...), which the top-level
``walletpass-tui --help`` describes in full, then the examples exactly as written.

Descriptions are re-flowed to the terminal's width, paragraph by paragraph; an option with
several names shows its value once (``-H, --header 'NAME: VALUE'``).
"""

from __future__ import annotations

import argparse
import textwrap

from walletpass_tui.cli.common import PROG, SETTINGS_TITLE

__all__ = ["HelpFormatter", "format_help", "format_usage"]


class HelpFormatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = (" ".join(p.split()) for p in text.split("\n\n"))
        return "\n\n".join(
            textwrap.fill(
                p,
                width,
                initial_indent=indent,
                subsequent_indent=indent,
                break_on_hyphens=False,  # never --log- / file
                break_long_words=False,
            )
            for p in paragraphs
            if p
        )

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        value = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {value}"


def _settings(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for g in parser._action_groups if g.title == SETTINGS_TITLE for a in g._group_actions]


def _own(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    shared = {id(a) for a in _settings(parser)}
    return [a for a in parser._actions if id(a) not in shared]


def format_usage(parser: argparse.ArgumentParser) -> str:
    """The usage line: the command's own arguments (the shared settings go without saying)."""
    formatter = parser._get_formatter()
    formatter.add_usage(parser.usage, _own(parser), parser._mutually_exclusive_groups)
    return formatter.format_help()


def format_help(parser: argparse.ArgumentParser) -> str:
    """The help of ``parser`` without its epilog (the caller adds it as written)."""
    root = parser.prog == PROG
    settings = _settings(parser)
    formatter = parser._get_formatter()
    formatter.add_usage(parser.usage, _own(parser), parser._mutually_exclusive_groups)
    formatter.add_text(parser.description)
    groups = [g for g in parser._action_groups if g.title != SETTINGS_TITLE]
    for group in groups:
        actions = [a for a in group._group_actions if root or a.dest != "help"]
        if not actions:
            continue
        formatter.start_section(group.title)
        formatter.add_text(group.description)
        formatter.add_arguments(actions)
        formatter.end_section()
    if root and settings:
        formatter.start_section(SETTINGS_TITLE)
        formatter.add_arguments(settings)
        formatter.end_section()
    elif settings:
        names = ", ".join(a.option_strings[0] for a in settings)
        formatter.add_text(
            f"settings every command takes: {names}; '{PROG} --help' says what each does, "
            "docs/configuration.md where they come from."
        )
    return formatter.format_help()
