"""``completion``: a shell completion script generated from the real parser by shtab.

Every command, action, option and choice comes from the parser itself, built whole here (the
other commands build only their own part, to start fast): nothing is listed by hand. What argparse
cannot say on its own is added by rule, never per command: an argument typed as a topic completes
to the topic names (a schema command's TOPIC also to ``templates`` and ``unknown``), one whose
value is a file (``FILE``, ``PATH``) or a directory (``DIR``) to
names on disk. shtab is imported by this command only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from walletpass_tui.api.topics import TOPICS, short_topic
from walletpass_tui.cli.common import schema_topic_arg, topic_arg

SHELLS = ("bash", "zsh", "fish")
TOPIC_WORDS: tuple[str, ...] = (*TOPICS, *(short_topic(t) for t in TOPICS))
SCHEMA_TOPIC_WORDS: tuple[str, ...] = (*TOPIC_WORDS, "templates", "unknown")
FILE_METAVARS = frozenset({"FILE", "PATH"})
DIR_METAVARS = frozenset({"DIR"})

DESCRIPTION = """\
Print a completion script for your shell, generated from this version's commands: every command,
action, option and choice (topics, --format, --mode, --verdict...). Install it once; run it
again after an upgrade."""
EXAMPLES = """\
install (then open a new shell):
  bash: mkdir -p ~/.local/share/bash-completion/completions && walletpass-tui completion bash > ~/.local/share/bash-completion/completions/walletpass-tui
  zsh:  mkdir -p ~/.zfunc && walletpass-tui completion zsh > ~/.zfunc/_walletpass-tui
        (and in ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath))
  fish: mkdir -p ~/.config/fish/completions && walletpass-tui completion fish > ~/.config/fish/completions/walletpass-tui.fish

example (this bash only):
  source <(walletpass-tui completion bash)
"""


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "completion",
        parents=parents,
        help="print a shell completion script (bash, zsh or fish)",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(handler=cmd_completion)


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every parser under it, subcommands of subcommands included."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _parsers(child)


def completable(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with the completions argparse cannot infer added to its arguments."""
    import shtab

    for each in _parsers(parser):
        for action in each._actions:
            if action.type is topic_arg and not action.choices:
                # The parser is built for this script only; type conversion still runs first.
                action.choices = TOPIC_WORDS
            elif action.type is schema_topic_arg and not action.choices:
                action.choices = SCHEMA_TOPIC_WORDS  # as above; any learned topic is taken too
            elif action.metavar in FILE_METAVARS:
                # shtab reads an attribute argparse's Action does not declare.
                action.complete = shtab.FILE  # type: ignore[attr-defined]
            elif action.metavar in DIR_METAVARS:
                action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]  # as above
    return parser


def completion_script(shell: str) -> str:
    import shtab

    from walletpass_tui.cli import build_parser

    return shtab.complete(completable(build_parser(None)), shell=shell)


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.shell))
    sys.stdout.flush()
    return 0
