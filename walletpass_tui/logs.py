"""The debug log a user can attach to a bug report: ``--log-file PATH`` or ``WALLETPASS_LOG``.

Every module logs through ``logging.getLogger(__name__)`` (under ``walletpass_tui``); nothing is
written anywhere unless a log file is asked for. Then the file is opened for appending, private
(0600, in directories made 0700) whatever the umask; it must be a regular file of the user's own,
never a device, a FIFO or another user's file. Every line passes through :class:`Redactor`
first, which removes what must never be written down:

* signing secrets (``whsec_...``), relay tokens (``wpr_...``), bearer credentials and the
  password part of a URL (``postgresql://user:****@host``), wherever they appear;
* any value registered with :func:`redact` (the API key, which has no recognisable shape).

Untrusted text (a sender's header, a relay's error) is logged with ``%r`` so control characters
stay escapes in the file, as they do on the screen.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from walletpass_tui.private_files import ensure_private_dir, not_regular, open_regular

ENV_LOG = "WALLETPASS_LOG"
PACKAGE = "walletpass_tui"
FORMAT = "%(asctime)s.%(msecs)03d %(levelname)-7s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"

# (pattern, replacement): the shapes of secrets, kept recognisable but never whole.
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"whsec_[A-Za-z0-9+/=_-]+"), "whsec_…"),
    (re.compile(r"wpr_[A-Za-z0-9_-]+"), "wpr_…"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"), r"\1 …"),
    # a credential by its name: "name: value", "name=value", ('name', 'value')
    (
        re.compile(
            r"(?i)\b(authorization|proxy-authorization|x-api-key|api[_-]key|password|token)"
            r"(['\"]?\s*(?:[:=]|,)\s*['\"]?)(?!bearer\b|basic\b|…)[^\s'\",;)]+"
        ),
        r"\1\2…",
    ),
    (re.compile(r"([a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@/\s]+@"), r"\1****@"),
)
_values: set[str] = set()


def redact(value: str | None) -> None:
    """Never write ``value`` to the log (an API key or a token whose shape is not known)."""
    if value and len(value) >= 6:
        _values.add(value)


def scrub(text: str) -> str:
    """``text`` with every secret shape and every registered value replaced."""
    for value in sorted(_values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "…")
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


class Redactor(logging.Formatter):
    """Formats a record as usual, then scrubs the whole line, traceback included."""

    def format(self, record: logging.LogRecord) -> str:
        return scrub(super().format(record))


def log_path(flag: str | None, env: dict[str, str] | None = None) -> Path | None:
    """Where to log: ``--log-file`` first, then ``WALLETPASS_LOG``; None for no log."""
    chosen = flag or (os.environ if env is None else env).get(ENV_LOG)
    return Path(chosen).expanduser() if chosen else None


def open_private(path: Path) -> int:
    """A descriptor to append to ``path``: a regular file of the user's own, created 0600 (and
    the directories it needs 0700) or tightened to 0600. Anything else, a device, a FIFO, a
    socket, another user's file, is refused untouched: never chmod-ed (as root, a
    0600 /dev/null would lock every other user out of it), never written to.

    Raises OSError when the file cannot be opened or is refused (its strerror says why)."""
    if os.path.exists(path):  # refused before its directories are made
        refused = not_regular(os.stat(path), own=True)
        if refused:
            raise OSError(errno.EINVAL, refused)
    ensure_private_dir(path.parent)
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, own=True)
    try:
        os.set_blocking(fd, True)
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


_configured: list[Path] = []  # the debug log's file, once configured


def configured_path() -> Path | None:
    """The file this process logs to (``configure``), if it does."""
    return _configured[-1] if _configured else None


def configure(path: Path, *, command: str) -> logging.Handler:
    """Send the package's debug log (and other libraries' warnings) to ``path``.

    Raises OSError when the file cannot be opened; the caller says so in one line."""
    stream = os.fdopen(open_private(path), "a", encoding="utf-8", errors="backslashreplace")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(Redactor(FORMAT, DATE_FORMAT))
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)  # other libraries: their warnings and errors only
    package = logging.getLogger(PACKAGE)
    package.setLevel(logging.DEBUG)
    logging.captureWarnings(True)
    package.info("log opened: %s, pid %d, python %s", command, os.getpid(), sys.version.split()[0])
    _configured.append(path.absolute())
    return handler


@contextlib.contextmanager
def suppressed(log: logging.Logger, what: str, *exceptions: type[BaseException]) -> Iterator[None]:
    """``contextlib.suppress`` (of ``Exception`` when none are named) that says on ``log``, at
    debug level, what failed and why, for the cleanups whose failure nobody can act on (closing
    a connection that is going away). ``what`` is a fixed phrase, never a secret."""
    caught: tuple[type[BaseException], ...] = exceptions or (Exception,)
    try:
        yield
    except caught as exc:
        log.debug("%s failed: %s: %s", what, type(exc).__name__, exc)
