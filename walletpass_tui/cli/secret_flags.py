"""Where a command's signing secrets come from, so none has to travel on the command line.

In order of precedence (the first that gives any wins, as for every setting):

* ``--secret whsec_...``: works, but shows in ``ps`` and the shell history (the help says so);
* ``--secret -``: read from standard input (typed without echo on a terminal, else piped in:
  ``pass show app/webhook | walletpass-tui listen --secret -``);
* ``--secret-file PATH``: one secret per line (blank lines and ``#`` comments skipped), refused
  unless the file is a regular file of this user that nobody else may read (mode 0600 or 0400);
* ``$WALLETPASS_SECRET``: one or more, separated by white space.

Each secret is checked (``whsec_`` + base64) and only ever shown masked. What is read is bounded:
at most :data:`MAX_SECRETS` secrets and :data:`MAX_SOURCE_BYTES` from a file or standard input,
and standard input that stays silent for :data:`STDIN_WAIT_S` is given up on. A command that signs
with one secret (``trigger``, ``check``, ``events replay``...) takes the first; more than one
``--secret`` flag is refused there.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from walletpass_tui.cli.common import CommandError
from walletpass_tui.config import ENV_SECRET
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.config.secrets import mask_secret
from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable

__all__ = [
    "GivenSecret",
    "add_secret_flags",
    "given_secrets",
    "one_secret",
]

MAX_SECRETS = 64
MAX_SOURCE_BYTES = 64 * 1024
ASCII_SPACE = " \t\n\r\f\v"  # what separates secrets; any other space is part of one
STDIN_WAIT_S = 30.0
FLAG_ADVICE = (
    "prefer $WALLETPASS_SECRET, --secret-file or --secret -, a flag shows up in your shell "
    "history and the process list"
)


@dataclass(frozen=True)
class GivenSecret:
    """One signing secret and where it came from (``--secret``, ``$WALLETPASS_SECRET``...)."""

    value: str = field(repr=False)
    source: str

    @property
    def masked(self) -> str:
        return mask_secret(self.value)


def add_secret_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, what: str, many: bool
) -> None:
    """``--secret WHSEC|-`` and ``--secret-file PATH``. ``what``: what the secret is for."""
    several = " (repeatable)" if many else ""
    parser.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="WHSEC|-",
        help=f"{what}{several}; '-' reads it from standard input; {FLAG_ADVICE}",
    )
    parser.add_argument(
        "--secret-file",
        metavar="PATH",
        default=None,
        help=f"read {'the secrets' if many else 'the secret'} from PATH, one per line (a file "
        f"only you can read: chmod 600); else ${ENV_SECRET} (white space between several)",
    )


def given_secrets(
    args: argparse.Namespace, env: Mapping[str, str] | None = None
) -> list[GivenSecret]:
    """Every secret given, from the first source that gives any; checked, at most MAX_SECRETS."""
    env = os.environ if env is None else env
    flags: list[str] = list(getattr(args, "secret", None) or [])
    path: str | None = getattr(args, "secret_file", None)
    found: list[GivenSecret] = []
    if flags.count("-") > 1:
        raise UsageError("Give --secret - once: standard input is read once.")
    for value in flags:
        if value == "-":
            found += _read_stdin()
        else:
            found.append(GivenSecret(value.strip(ASCII_SPACE), "--secret"))
    if path is not None:
        found += _read_file(path)
    if not flags and path is None and _ascii_words(env.get(ENV_SECRET, "")):
        found = [GivenSecret(word, f"${ENV_SECRET}") for word in _ascii_words(env[ENV_SECRET])]
    if len(found) > MAX_SECRETS:
        # As every other problem of a secret: exit 2 for flags, 1 for a file, stdin or $VAR.
        sources = ", ".join(dict.fromkeys(given.source for given in found))
        error = UsageError if all(g.source == "--secret" for g in found) else ConfigError
        raise error(
            f"Give at most {MAX_SECRETS} signing secrets, not {len(found)} (from {sources})."
        )
    for given in found:
        _check(given)
    return found


def one_secret(
    args: argparse.Namespace, env: Mapping[str, str] | None = None
) -> GivenSecret | None:
    """The one secret a command signs with (the first given), or None when none is."""
    if len([v for v in getattr(args, "secret", None) or [] if v != "-"]) > 1:
        raise UsageError("Give one --secret: this command signs with one secret.")
    found = given_secrets(args, env)
    return found[0] if found else None


def stdin_conflict(args: argparse.Namespace, *names: str) -> None:
    """Refuse ``--secret -`` together with another flag that reads standard input (``-``)."""
    if "-" not in (getattr(args, "secret", None) or []):
        return
    for name in names:
        if getattr(args, name, None) == "-":
            flag = "--" + name.replace("_", "-")
            raise UsageError(
                f"--secret - and {flag} - both read standard input; give one of them a file."
            )


def _check(given: GivenSecret) -> None:
    from walletpass_tui.webhooks.verify import SecretError, parse_secret

    try:
        parse_secret(given.value)
    except SecretError as exc:
        error = UsageError if given.source == "--secret" else ConfigError
        shown = printable(given.masked)  # a refused one may hold control or invisible characters
        raise error(f"The signing secret {shown} from {given.source}: {exc}") from None


def _words(text: str, source: str) -> list[GivenSecret]:
    """One secret per line; blank lines and ``#`` comments skipped."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.strip(ASCII_SPACE)
        if not line or line.startswith("#"):
            continue
        if len(_ascii_words(line)) > 1:
            raise ConfigError(
                f"Line {number} of {source} holds more than one word; give one secret a line."
            )
        found.append(GivenSecret(line, source))
    return found


def _ascii_words(text: str) -> list[str]:
    """``text`` split at ASCII white space only: a no-break space or a line separator copied
    into a secret stays in it, to be named by its code point, never taken as two secrets."""
    return [word for word in re.split(f"[{ASCII_SPACE}]+", text) if word]


def _decode(data: bytes, source: str) -> str:
    if len(data) > MAX_SOURCE_BYTES:
        raise ConfigError(
            f"{source} holds more than {MAX_SOURCE_BYTES // 1024} KiB; give only the secrets."
        )
    try:
        # "utf-8-sig": a byte order mark that some editors write first is not part of a secret.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{source} is not UTF-8 text; give the secrets as whsec_... lines."
        ) from None


def _read_file(path: str) -> list[GivenSecret]:
    shown = printable(path, 200)
    source = f"--secret-file {shown}"
    try:
        # O_NONBLOCK: a FIFO named here is refused below instead of blocking the open.
        fd = os.open(os.path.expanduser(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise ConfigError(f"Cannot read the secret file {shown} ({exc.strerror or exc}).") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"The secret file {shown} is not a regular file; to pipe a secret in, use --secret -."
            )
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise ConfigError(
                f"The secret file {shown} belongs to another user; keep your secrets in a file of "
                "your own (chmod 600)."
            )
        if info.st_mode & 0o077:
            raise ConfigError(
                f"The secret file {shown} can be read by others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); make it private: chmod 600 {shown}"
            )
        data = os.read(fd, MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"Cannot read the secret file {shown} ({exc.strerror or exc}).") from None
    finally:
        os.close(fd)
    found = _words(_decode(data, f"The secret file {shown}"), source)
    if not found:
        raise ConfigError(f"The secret file {shown} holds no secret; put one whsec_... per line.")
    return found


def _read_stdin() -> list[GivenSecret]:
    source = "standard input"
    stream = sys.stdin
    if stream is None:
        raise UsageError("--secret - reads standard input, and there is none.")
    if stream.isatty():
        import getpass

        try:
            text = getpass.getpass("Signing secret (whsec_..., not shown): ")
        except EOFError:  # Ctrl-D at the prompt: no secret, said just below
            text = ""
    else:
        text = _decode(_read_bounded(stream.buffer.fileno()), "Standard input")
    found = _words(text, source)
    if not found:
        raise UsageError("--secret - read no secret from standard input; pipe one in (whsec_...).")
    return found


def _read_bounded(fd: int) -> bytes:
    """Standard input up to its end, at most MAX_SOURCE_BYTES + 1 bytes, given up on when it says
    nothing for STDIN_WAIT_S."""
    import selectors

    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):  # a regular file (or a platform without it): read plainly
            return os.read(fd, MAX_SOURCE_BYTES + 1)
        while size <= MAX_SOURCE_BYTES:
            if not selector.select(STDIN_WAIT_S):
                raise CommandError(
                    f"Nothing arrived on standard input for {STDIN_WAIT_S:g} s; pipe the secret in "
                    "(printf '%s' \"$SECRET\" | walletpass-tui ... --secret -)."
                )
            chunk = os.read(fd, MAX_SOURCE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)
