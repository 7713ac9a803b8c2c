"""``completion``: the scripts come from the real parser and work in real shells. Bash completes
by running the generated function with COMP_WORDS set, as bash does on TAB; fish answers
``complete -C``; zsh's script is syntax-checked and registered through compinit."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from walletpass_tui.cli import build_parser

BIN = Path(sys.executable).parent
TOPIC_WORDS = ["pass.activated", "pass.deactivated", "activated", "deactivated"]
SCHEMA_TOPIC_WORDS = [*TOPIC_WORDS, "templates", "unknown"]  # the schema commands' groups too


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def script(shell: str) -> str:
    """The script, from the installed command, as a user would get it."""
    exe = shutil.which("walletpass-tui", path=str(BIN))
    assert exe, "the walletpass-tui command is not installed next to this Python"
    done = subprocess.run(
        [exe, "completion", shell], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


# Runs the completion function registered for walletpass-tui as bash does on TAB: the words so far
# in COMP_WORDS, the one being completed last; prints each candidate, then a separator.
BASH_DRIVER = r"""
SOURCE
complete -p walletpass-tui
spec=$(complete -p walletpass-tui)
func=${spec##*-F }
func=${func%% *}
while IFS= read -r line; do
    eval "COMP_WORDS=($line)"
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    prev=""
    (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
    "$func" walletpass-tui "${COMP_WORDS[COMP_CWORD]}" "$prev"
    printf '%s\n' "${COMPREPLY[@]}"
    echo "<end>"
done
"""


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "walletpass-tui.bash"
    path.write_text(script("bash"))
    return path


def bash_complete(
    lines: list[str], source: str = "source <(walletpass-tui completion bash)"
) -> tuple[str, list[list[str]]]:
    """(``complete -p`` for walletpass-tui, the candidates for each command line), with the
    script loaded by ``source``."""
    done = subprocess.run(
        ["bash", "-c", BASH_DRIVER.replace("SOURCE", source)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    spec, _, rest = done.stdout.partition("\n")
    answers: list[list[str]] = [[]]
    for word in rest.splitlines():
        if word == "<end>":
            answers.append([])
        elif word:
            answers[-1].append(word)
    assert answers.pop() == []
    assert len(answers) == len(lines), done.stdout
    return spec, answers


def test_bash_completes_commands_actions_and_choices() -> None:
    cases = {
        "walletpass-tui ev": ["events"],
        "walletpass-tui events l": ["list"],
        "walletpass-tui events t": ["tail"],
        "walletpass-tui events list --topic ''": TOPIC_WORDS,
        "walletpass-tui events list --topic pass.d": ["pass.deactivated"],
        "walletpass-tui trigger ''": TOPIC_WORDS,  # a positional topic
        "walletpass-tui schema show ''": SCHEMA_TOPIC_WORDS,
        "walletpass-tui schema show t": ["templates"],
        "walletpass-tui schema export ''": SCHEMA_TOPIC_WORDS,
        "walletpass-tui schema drift --topic ''": SCHEMA_TOPIC_WORDS,
        "walletpass-tui events export --format ''": ["jsonl", "curl"],
        "walletpass-tui events replay msg_1 --mode ''": ["resign", "original"],
        "walletpass-tui events tail --verdict ''": ["verified", "rejected"],
        "walletpass-tui events stats --by ''": ["minute", "hour", "day"],
        "walletpass-tui listen --ack ''": ["stored", "target"],
        "walletpass-tui completion ''": ["bash", "zsh", "fish"],
    }
    spec, answers = bash_complete(list(cases))
    assert "-F _shtab_walletpass_tui walletpass-tui" in spec
    for (line, expected), got in zip(cases.items(), answers, strict=True):
        assert sorted(got) == sorted(expected), line


def test_bash_completes_file_names_where_a_file_is_asked(tmp_path: Path, bash_script: Path) -> None:
    (tmp_path / "fixture-one.json").write_text("[]")
    line = f"walletpass-tui trigger activated --body-file {tmp_path}/fixture-"
    _, (got,) = bash_complete([line], f"source {bash_script}")
    assert got == [f"{tmp_path}/fixture-one.json"]


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], list[str], list[str]]]:
    """(command path, its subcommands, its option strings) for every parser, from the parser."""
    subcommands: list[str] = []
    options: list[str] = []
    children: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subcommands.extend(action.choices)
            children.extend(action.choices.items())
        elif action.help != argparse.SUPPRESS:
            options.extend(o for o in action.option_strings if o.startswith("--"))
    yield path, subcommands, options
    for name, child in children:
        yield from walk(child, (*path, name))


def test_bash_covers_every_command_and_option_of_the_parser(bash_script: Path) -> None:
    """Built from the parser, as the script is: a command or option added later is checked too."""
    tree = list(walk(build_parser(None)))
    assert len(tree) > 30  # every module was registered, not only the chosen command's
    lines: list[str] = []
    for path, subcommands, _ in tree:
        if subcommands:
            lines.append(" ".join(("walletpass-tui", *path, "''")))
        lines.append(" ".join(("walletpass-tui", *path, "--")))
    _, answers = bash_complete(lines, f"source {bash_script}")
    got = iter(answers)
    for path, subcommands, options in tree:
        where = " ".join(path) or "(top level)"
        if subcommands:
            assert set(next(got)) >= set(subcommands), where
        assert set(next(got)) >= set(options), where


def test_the_top_level_lists_every_command(bash_script: Path) -> None:
    _, (got,) = bash_complete(["walletpass-tui ''"], f"source {bash_script}")
    for command in ("events", "listen", "sim", "trigger", "check", "relay", "completion"):
        assert command in got


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_script_parses_and_completes(tmp_path: Path) -> None:
    path = tmp_path / "walletpass-tui.fish"
    path.write_text(script("fish"))
    check = subprocess.run(["fish", "--no-config", "-n", str(path)], capture_output=True)
    assert check.returncode == 0, check.stderr
    program = (
        f"source {path}\n"
        "complete -C 'walletpass-tui ev'; echo '<end>'\n"
        "complete -C 'walletpass-tui events l'; echo '<end>'\n"
        "complete -C 'walletpass-tui events list --topic '; echo '<end>'\n"
        "complete -C 'walletpass-tui events export --format '; echo '<end>'\n"
        "complete -C 'walletpass-tui schema show '; echo '<end>'\n"
        "complete -C 'walletpass-tui schema export '; echo '<end>'\n"
        "complete -C 'walletpass-tui schema drift --topic '; echo '<end>'\n"
    )
    done = subprocess.run(
        ["fish", "--no-config", "-c", program],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    blocks = [
        sorted(line.split("\t")[0] for line in block.strip().splitlines())
        for block in done.stdout.split("<end>")[:-1]
    ]
    assert blocks == [
        ["events"],
        ["list"],
        sorted(TOPIC_WORDS),
        ["curl", "jsonl"],
        *[sorted(SCHEMA_TOPIC_WORDS)] * 3,
    ]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script_parses_and_registers_through_compinit(tmp_path: Path) -> None:
    functions = tmp_path / "zfunc"
    functions.mkdir()
    (functions / "_walletpass-tui").write_text(script("zsh"))
    check = subprocess.run(["zsh", "-n", str(functions / "_walletpass-tui")], capture_output=True)
    assert check.returncode == 0, check.stderr
    program = (
        f"fpath=({functions} $fpath); autoload -Uz compinit; "
        f"compinit -u -d {tmp_path}/zcompdump; print -r -- ${{_comps[walletpass-tui]}}; "
        'eval "$(walletpass-tui completion zsh)"; print -r -- ${_comps[walletpass-tui]}'
    )
    done = subprocess.run(
        ["zsh", "-f", "-c", program],
        capture_output=True,
        text=True,
        env={**env(), "HOME": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["_walletpass-tui", "_shtab_walletpass_tui"]
    assert done.stderr == ""


PROBE = """
import json, sys
from walletpass_tui.cli import main
code = main(sys.argv[2:])
heavy = sorted(m for m in ("shtab", "textual", "rich", "aiohttp", "httpx") if m in sys.modules)
with open(sys.argv[1], "w") as fh:
    json.dump({"code": code, "heavy": heavy}, fh)
"""


@pytest.fixture
async def history(clean_env: Path) -> Path:
    from walletpass_tui.webhooks.store import Store

    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3"):
        pass
    return clean_env


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "heavy"),
    [
        (["events", "list", "--json"], []),
        (["events", "stats", "--json"], []),
        (["events", "stats", "--since", "1h"], []),
        (["events", "tail", "--help"], []),
        (["--help"], []),
        (["completion", "bash"], ["aiohttp", "httpx", "shtab"]),  # the probe sees them
    ],
)
def test_the_new_light_commands_stay_light(
    history: Path, tmp_path: Path, argv: list[str], heavy: list[str]
) -> None:
    """The new light commands load neither shtab, the UI nor the HTTP stack; building the whole
    parser for a completion script does load the modules of every command."""
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *argv],
        capture_output=True,
        timeout=60,
        check=False,
        env=dict(os.environ),
    )
    result = json.loads(report.read_text())
    assert result["code"] == 0, argv
    if heavy:
        assert set(heavy) <= set(result["heavy"]), result
    else:
        assert result["heavy"] == [], result
