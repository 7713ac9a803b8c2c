"""This home's test secret: a signing secret made once per home, so the local loop needs nothing
restated (``listen`` in one shell, ``trigger activated`` in another: a verified delivery).

The receiver of the home (``listen``, the dashboard) verifies with it beside the endpoints' own
secrets; ``trigger``, ``sim deliver`` and ``check`` sign with it when they send to this home's
receiver and were given no secret. It lives in ``<home>/test-secret``, 0600 from its first byte,
made at most once however many processes start at the same moment (written aside, then linked
into place, which fails for all but one). Shown masked; ``listen --print-secret`` prints it whole,
as Stripe's CLI does, for an app of yours that verifies the local deliveries.

The file is read as hostile: a regular file of this user (a looser mode is tightened), at most
``MAX_BYTES``, one ``whsec_`` secret.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from walletpass_tui.config.errors import ConfigError
from walletpass_tui.private_files import ensure_private_dir, read_private_file

__all__ = ["FILE_NAME", "LABEL", "check_token", "load", "load_or_create", "path_of"]

FILE_NAME = "test-secret"
LABEL = "this home's test secret"
MAX_BYTES = 1024
KEY_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def check_token(secret: str) -> str:
    """What ``check`` puts in its requests to this home's receiver (``models.CHECK_HEADER``) so
    that the receiver keeps them as the check's, not as deliveries: derived from the test secret,
    which both know, and telling nothing of it. A sender without the secret cannot make it, so
    no post of theirs is left out of the counts that way."""
    mac = hmac.new(secret.encode(), b"walletpass-tui check request", hashlib.sha256)
    return mac.hexdigest()[:32]


def path_of(home: Path) -> Path:
    return Path(home) / FILE_NAME


def load(home: Path) -> str | None:
    """The home's test secret, or None when the home has none yet (no receiver ever ran on it)."""
    path = path_of(home)
    try:
        data = read_private_file(path, MAX_BYTES, follow_links=False, own=True, tighten=True)
    except FileNotFoundError:  # no secret yet: made by the first receiver
        return None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise _damaged(path) from None
        if exc.errno in (errno.EINVAL, errno.ELOOP):  # not a regular file of this user
            raise ConfigError(
                f"{path} is not a file of yours ({exc.strerror}); remove it and a new test "
                "secret is made."
            ) from None
        raise ConfigError(
            f"Cannot read this home's test secret {path} ({exc.strerror or exc}); remove the "
            "file and a new one is made."
        ) from None
    return _parsed(data, path)


def load_or_create(home: Path) -> str:
    """The home's test secret, made now (0600) when it has none."""
    found = load(home)
    if found is not None:
        return found
    path = path_of(home)
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode("ascii")
    try:
        ensure_private_dir(path.parent)
        aside = path.with_name(f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        try:
            os.write(fd, secret.encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(aside, path)  # fails if another process made it first: theirs is kept
        except FileExistsError:
            pass  # made meanwhile by another process: read below
        finally:
            aside.unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"Cannot write this home's test secret {path} ({exc.strerror or exc}); make the "
            "data directory writable or choose another with --home."
        ) from None
    made = load(home)
    if made is None:  # removed in the same instant: one more try would race again
        raise ConfigError(f"This home's test secret {path} vanished as it was made; start again.")
    return made


def _parsed(data: bytes, path: Path) -> str:
    from walletpass_tui.webhooks.verify import SecretError, parse_secret

    try:
        text = data.decode("ascii").strip()
        parse_secret(text)
    except (UnicodeDecodeError, SecretError):
        raise _damaged(path) from None
    return text


def _damaged(path: Path) -> ConfigError:
    return ConfigError(
        f"This home's test secret {path} is damaged; remove the file and a new one is made."
    )
