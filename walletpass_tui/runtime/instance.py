"""How a running receiver is found: at most one per home, known by a lock and a state file.

``listen``, the dashboard and the demo claim their home when their receiver starts; ``attach``
and a second dashboard look for it. Everything lives in one private directory::

    <home>/run/            0700, owned by this user (checked; never followed through a symlink)
      receiver.lock        flock(LOCK_EX) held from the receiver's start to its exit: the kernel
                           drops it when the process ends, however it ends (SIGKILL included), so
                           "the lock can be taken" means "no receiver runs". Never deleted: a
                           lock file removed while held would let two receivers hold two files.
      receiver.json        0600, written atomically once the port is bound: pid, kind, address,
                           start time; removed at a clean stop. Found while the lock is free, it
                           is stale: a receiver died without cleaning up.
      control.sock         the control channel (control.py), 0600
      draw.sock            dashboards drawn beside the receiver (draw_beside.py), 0600

Looking takes a shared lock for an instant; a receiver starting in that instant waits it out
(``CLAIM_WAIT_S``) instead of taking the looker for a receiver.

The state file is read as hostile: at most ``MAX_STATE_BYTES``, a regular file of this user, a
JSON object whose every field is checked (``InstanceRecord.from_bytes``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from walletpass_tui import __version__
from walletpass_tui.config.receiver_path import MAX_RECEIVER_PATH
from walletpass_tui.errors import WalletpassError
from walletpass_tui.private_files import open_regular, read_private_file, size_text

try:
    import fcntl
except ImportError:  # pragma: no cover - no advisory locks (Windows): nothing is ever found
    fcntl = None  # type: ignore[assignment]

RUN_DIR = "run"
LOCK_NAME = "receiver.lock"
STATE_NAME = "receiver.json"
SOCKET_NAME = "control.sock"
MAX_STATE_BYTES = 16384  # three URLs of MAX_URL characters (JSON-escaped) and the rest
KINDS = ("listen", "dashboard", "demo")
# A URL in the state file: the receiver's own (http://, a host name of at most 253 characters
# or an IPv6 address in brackets, :65535, and its path, which config bounds) or the relay's, cut
# to this length when it is longer.
MAX_URL = MAX_RECEIVER_PATH + 300
CLAIM_WAIT_S = 0.5  # a looker holds its shared lock for microseconds; wait out such a moment
STATE_WAIT_S = 1.0  # the lock is taken before the state file is written: wait for it this long
_POLL_S = 0.01
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class InstanceError(WalletpassError):
    """The run directory cannot be used (not ours, not a directory); the message says what to do."""


@dataclass(frozen=True)
class InstanceRecord:
    """What the state file says about the receiver that runs on a home."""

    pid: int
    kind: str  # listen, dashboard or demo
    url: str | None  # where it receives (http://127.0.0.1:8787/webhooks), None: no port
    started_at_ms: int
    control: bool = True  # it serves the control channel at <run>/control.sock
    relay: str | None = None  # the relay channel it follows, when it follows one
    version: str = __version__
    # Where the service should post while its tunnel is up (https://host/path): what
    # `endpoints create --from-listener` offers from another shell. Rewritten as it changes.
    public_url: str | None = None

    @property
    def address(self) -> str | None:
        """``host:port/path``, as the header shows it."""
        return self.url.removeprefix("http://") if self.url else None

    def describe(self) -> str:
        """``listen, pid 4242, 127.0.0.1:8787/webhooks``."""
        parts = [self.kind, f"pid {self.pid}"]
        if self.address:
            parts.append(self.address)
        return ", ".join(parts)

    def to_bytes(self) -> bytes:
        text = json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False)
        return text.encode() + b"\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> InstanceRecord:
        """The record in ``data``; ValueError saying what is wrong with it."""
        if len(data) > MAX_STATE_BYTES:
            raise ValueError(f"larger than {size_text(MAX_STATE_BYTES)}")
        try:
            raw = json.loads(data)
        except (UnicodeDecodeError, ValueError):
            raise ValueError("not JSON") from None
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> InstanceRecord:
        pid = raw.get("pid")
        if type(pid) is not int or not 0 < pid < 2**31:
            raise ValueError("no valid pid")
        kind = raw.get("kind")
        if kind not in KINDS:
            raise ValueError("no known kind")
        started = raw.get("started_at_ms")
        if type(started) is not int or not 0 <= started < 2**53:
            raise ValueError("no valid start time")
        control = raw.get("control", False)
        if type(control) is not bool:
            raise ValueError("control is not true or false")
        version = raw.get("version", "")
        if not isinstance(version, str) or len(version) > 40:
            raise ValueError("no valid version")
        return cls(
            pid=pid,
            kind=str(kind),
            url=_checked_url(raw.get("url"), "url"),
            started_at_ms=started,
            control=control,
            relay=_checked_url(raw.get("relay"), "relay"),
            version=version,
            public_url=_checked_url(raw.get("public_url"), "public_url", schemes=("https",)),
        )


def _checked_url(
    value: object, name: str, schemes: tuple[str, ...] = ("http", "https")
) -> str | None:
    """A URL of ``schemes`` in printable text, at most MAX_URL characters, or None. Text beyond
    ASCII is allowed: a relay's host or path may have it (it is only ever shown, through
    ``text``)."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or len(value) > MAX_URL
        or not value.isprintable()
        or urlsplit(value).scheme not in schemes
    ):
        raise ValueError(f"{name} is not an {' or '.join(schemes)} URL")
    return value


def public_url_kept(url: str | None) -> str | None:
    """The public URL the state file keeps: the whole URL or none (a cut one would be registered
    wrong by `endpoints create --from-listener`)."""
    return url if url is not None and len(url) <= MAX_URL else None


def shown_url(url: str | None) -> str | None:
    """``url`` as the state file carries it, so the reading side accepts whatever a receiver
    writes: cut to MAX_URL characters (the relay's URL is only shown; the receiver's own is
    never that long)."""
    if url is None or len(url) <= MAX_URL:
        return url
    return url[: MAX_URL - 1] + "…"


@dataclass(frozen=True)
class Running:
    """A receiver holds the home. ``record`` is None when its state file cannot be read
    (``problem`` says why) or was not written yet."""

    record: InstanceRecord | None
    problem: str | None = None

    def unreadable(self, home: Path, instead: str = "") -> str:
        """One sentence for a receiver whose state cannot be used: that it runs, what is wrong
        with its file, and what to do (``instead``: another way out, for one command); every
        command that looks for it says the same."""
        other = f", or {instead}" if instead else ""
        return (
            f"A receiver holds {home} but its state cannot be read "
            f"({self.problem or 'the file is missing'}); stop it and start it again{other}."
        )


@dataclass(frozen=True)
class Stale:
    """No receiver runs, but one that died left its state file (``record``: what it said)."""

    record: InstanceRecord | None


@dataclass(frozen=True)
class NotRunning:
    """No receiver runs on the home."""


Found = Running | Stale | NotRunning


def run_dir(home: Path) -> Path:
    return Path(home) / RUN_DIR


def socket_path(home: Path) -> Path:
    return run_dir(home) / SOCKET_NAME


# -- looking ---------------------------------------------------------------------------------------


def find(home: Path, *, wait_s: float = STATE_WAIT_S) -> Found:
    """Whether a receiver runs on ``home``. Never creates anything and never blocks a receiver
    for longer than an instant. InstanceError when the run directory is not this user's."""
    directory = run_dir(home)
    if fcntl is None or not _checked_dir(directory, create=False):
        return NotRunning()
    deadline = time.monotonic() + wait_s
    while True:
        held = _lock_held(directory / LOCK_NAME)
        record, problem = _read_state(directory / STATE_NAME)
        if not held:
            return Stale(record) if record is not None or problem else NotRunning()
        if record is not None or time.monotonic() >= deadline:
            return Running(record, problem)
        time.sleep(_POLL_S)  # its state file comes right after its lock


def _lock_held(path: Path) -> bool:
    try:
        fd = open_regular(path, follow_links=False)
    except FileNotFoundError:  # no lock file: nobody holds it
        return False
    except OSError as exc:
        raise InstanceError(f"Cannot open {path} ({exc.strerror}); remove it.") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return True
        raise
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _read_state(path: Path) -> tuple[InstanceRecord | None, str | None]:
    """(record, None), (None, why it cannot be read) or (None, None) when there is none."""
    try:
        data = read_private_file(path, MAX_STATE_BYTES, follow_links=False, own=True)
    except FileNotFoundError:  # no record: no receiver
        return None, None
    except OSError as exc:  # returned as the reason
        return None, f"{path} cannot be read ({exc.strerror or exc})"
    try:
        return InstanceRecord.from_bytes(data), None
    except ValueError as exc:  # returned as the reason
        return None, f"{path} is not a receiver's state ({exc})"


def _checked_dir(directory: Path, *, create: bool) -> bool:
    """Whether the run directory exists (made 0700 when ``create``); InstanceError when it is a
    symlink, not a directory or another user's. Group or other bits found are removed."""
    if create:
        Path(directory).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):  # there already: checked below
            os.mkdir(directory, 0o700)
    try:
        st = os.lstat(directory)
    except FileNotFoundError:  # no run directory: False, as documented
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise InstanceError(
            f"{directory} is not a directory (a link or a file); remove it and start again."
        )
    if st.st_uid != os.geteuid():
        raise InstanceError(
            f"{directory} belongs to another user; remove it (or use another --home)."
        )
    if st.st_mode & 0o077 and create:
        os.chmod(directory, 0o700)
    return True


# -- claiming --------------------------------------------------------------------------------------


class AlreadyRunning(InstanceError):
    """Another receiver holds the home."""

    def __init__(self, home: Path, found: Running) -> None:
        self.found = found
        who = found.record.describe() if found.record else "another process"
        super().__init__(
            f"A receiver already runs on {home} ({who}). Watch it with `walletpass-tui attach"
            f"{home_flag(home)}`, stop it first, or give this one another --home."
        )


class Claim:
    """This process holds the home: the lock until ``release()``, the state file from
    ``publish()`` until ``withdraw()``. ``previous``: the stale record a dead receiver left."""

    def __init__(self, home: Path, fd: int, previous: InstanceRecord | None) -> None:
        self.home = Path(home)
        self.directory = run_dir(home)
        self.previous = previous
        self._fd: int | None = fd
        self._published = False

    @property
    def socket_path(self) -> Path:
        return self.directory / SOCKET_NAME

    @property
    def state_path(self) -> Path:
        return self.directory / STATE_NAME

    def publish(self, record: InstanceRecord) -> None:
        """Write the state file atomically (0600, never readable by others, even briefly)."""
        if self._fd is None:
            raise RuntimeError("The claim was released.")
        temp = self.directory / f".{STATE_NAME}.{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):  # no leftover
            os.unlink(temp)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        try:
            os.write(fd, record.to_bytes())
        finally:
            os.close(fd)
        os.replace(temp, self.state_path)
        self._published = True

    def withdraw(self) -> None:
        """Remove the state file: from now on lookers see no receiver (the lock stays held
        until ``release()``, so none can start in the middle of this one's stop)."""
        if self._published:
            self._published = False
            with contextlib.suppress(FileNotFoundError):  # already gone
                os.unlink(self.state_path)

    def release(self) -> None:
        """Withdraw and let go of the lock. Safe to call twice."""
        self.withdraw()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # the lock goes with the descriptor


def claim(home: Path, *, wait_s: float = CLAIM_WAIT_S) -> Claim:
    """Hold ``home`` for this process's receiver. AlreadyRunning when another holds it;
    InstanceError when the run directory cannot be used."""
    directory = run_dir(home)
    _checked_dir(directory, create=True)
    path = directory / LOCK_NAME
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, follow_links=False, own=True)
    except OSError as exc:
        raise InstanceError(
            f"Cannot open {path} ({exc.strerror}); remove it and start again."
        ) from None
    if fcntl is None:  # pragma: no cover
        return Claim(home, fd, None)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
        if time.monotonic() >= deadline:
            os.close(fd)
            record, problem = _read_state(directory / STATE_NAME)
            raise AlreadyRunning(Path(home), Running(record, problem))
        time.sleep(_POLL_S)
    previous, _ = _read_state(directory / STATE_NAME)
    with contextlib.suppress(FileNotFoundError):  # already gone
        os.unlink(directory / STATE_NAME)  # whatever it said, its receiver is gone
    return Claim(home, fd, previous)


def home_flag(home: Path) -> str:
    """`` --home DIR`` when ``home`` is not the platform's default one, else ``""``: what a person
    types in another shell (where WALLETPASS_HOME may not be set) to reach the same home."""
    import shlex

    from walletpass_tui.config import default_data_dir

    if Path(home).expanduser().resolve() == default_data_dir().resolve():
        return ""
    return f" --home {shlex.quote(str(home))}"
