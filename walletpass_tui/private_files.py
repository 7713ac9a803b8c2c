"""Files only the user may read, whatever the umask: the directories made for them, the whole
files written into them, and the one way every file of a home is opened.

* :func:`ensure_private_dir` makes a directory and every parent it lacks, each 0700; a directory
  that exists already is left as it is (it may be shared, like ``~/.local``).
* :func:`write_private_file` replaces a file's content atomically, 0600 from the first byte;
  through a symlink, the file it leads to; never a device, a FIFO or another user's file.
* :func:`read_private_file` reads a whole small file as hostile: a regular file (or the null
  device, which reads as nothing), at most a given number of bytes, never waiting on a FIFO.
* :func:`open_regular` is what both stand on: a descriptor on a regular file, or OSError saying
  what was found instead ("a FIFO, not a regular file"). Lock files are opened with it too.

A path is looked at before it is opened (a device's open can act: a tape rewinds, a modem
dials) and what was opened is looked at again (``fstat``), whatever was swapped in meanwhile;
the open itself is ``O_NONBLOCK``, so a FIFO put there in that instant is refused, not waited on.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)


def ensure_private_dir(path: Path) -> None:
    """Make ``path`` a directory if it is not one: it and each parent it lacks made 0700 (the
    umask can take no bit away, nor leave one); directories that exist are not touched. Raises
    OSError as ``mkdir`` does (a file in the way, no permission)."""
    missing: list[Path] = []
    current = path
    while not current.is_dir() and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            if directory.is_dir():  # made meanwhile by another process: not ours to change
                continue
            raise
        os.chmod(directory, 0o700)  # a umask such as 0o200 would leave it unusable


def not_regular(status: os.stat_result, *, own: bool = False) -> str | None:
    """Why a file with ``status`` cannot be used as one of the user's files ("a FIFO, not a
    regular file", "another user's file" when ``own``); None when it can."""
    if stat.S_ISREG(status.st_mode):
        if own and hasattr(os, "geteuid") and status.st_uid != os.geteuid():
            return "another user's file"
        return None
    kinds = {
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISSOCK: "a socket",
        stat.S_ISDIR: "a directory",
        stat.S_ISLNK: "a symlink",
    }
    kind = next((name for test, name in kinds.items() if test(status.st_mode)), "not a file")
    return f"{kind}, not a regular file"


def open_regular(
    path: Path | str,
    flags: int = os.O_RDONLY,
    *,
    follow_links: bool = True,
    own: bool = False,
    mode: int = 0o600,
) -> int:
    """A descriptor on ``path`` opened with ``flags`` (``O_CREAT`` makes it with ``mode``), which
    must be a regular file (of this user when ``own``). ``follow_links=False``: a symlink is
    refused, never followed (``O_NOFOLLOW``). The descriptor is close-on-exec and non-blocking
    (which a regular file ignores).

    Raises FileNotFoundError when there is none (and no ``O_CREAT``), OSError whose strerror
    says what was found otherwise; nothing is opened, chmod-ed or written then."""
    try:
        found = os.stat(path) if follow_links else os.lstat(path)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    else:
        refused = not_regular(found, own=own)
        if refused:
            raise OSError(errno.EINVAL, refused)
    flags |= _NONBLOCK | _NOCTTY | _CLOEXEC | (0 if follow_links else _NOFOLLOW)
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:  # a symlink put there meanwhile
            raise OSError(errno.ELOOP, "a symlink, not a regular file") from None
        raise
    try:
        refused = not_regular(os.fstat(fd), own=own)  # what was opened, whatever was swapped in
        if refused:
            raise OSError(errno.EINVAL, refused)
    except BaseException:
        os.close(fd)
        raise
    return fd


def is_null_device(status: os.stat_result) -> bool:
    """Whether ``status`` is the system's null device (``/dev/null``, or a node made like it)."""
    if not stat.S_ISCHR(status.st_mode):
        return False
    try:
        return os.stat(os.devnull).st_rdev == status.st_rdev
    except OSError:  # no /dev/null to compare with: not it
        return False


def size_text(limit: int) -> str:
    """``64 KiB``, ``1 MiB``, ``16384 bytes``: a bound as messages say it."""
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def read_private_file(
    path: Path | str,
    limit: int,
    *,
    follow_links: bool = True,
    own: bool = False,
    tighten: bool = False,
) -> bytes:
    """The whole content of ``path``, at most ``limit`` bytes, read as hostile.

    It must be a regular file (of this user when ``own``; never through a symlink when
    ``follow_links`` is False); the null device reads as nothing (``ln -s /dev/null config.toml``
    says "no settings") and is not even opened. ``tighten``: a file readable by others is made
    0600 (it holds secrets). Raises FileNotFoundError when there is none; OSError whose strerror
    says why otherwise: what was found instead of a file, or ``larger than 64 KiB`` (errno
    EFBIG), having read ``limit + 1`` bytes at most."""
    if follow_links:
        try:
            if is_null_device(os.stat(path)):
                return b""
        except FileNotFoundError:
            raise
        except OSError:  # a link that loops, no permission: the open below says so
            pass
    fd = open_regular(path, follow_links=follow_links, own=own)
    try:
        if tighten and os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {size_text(limit)}")
    return data


def write_private_file(path: Path, data: bytes) -> None:
    """Write ``data`` atomically to ``path`` with mode 0600, never readable by others even briefly.

    A ``path`` that is a symlink (a config file kept with one's dotfiles) is written through: the
    file it leads to is replaced, the link stays. What is there must be a regular file of this
    user: a device (``/dev/null``), a FIFO, a directory or another user's file is refused and left
    as it was. Raises OSError as the write does (its strerror says what was found when refused):
    the link's file in a directory that does not exist or cannot be written, a link that loops."""
    ensure_private_dir(path.parent)
    path = link_target(path)
    try:
        refused = not_regular(os.lstat(path), own=True)
    except FileNotFoundError:  # made below
        refused = None
    if refused:
        raise OSError(errno.EINVAL, refused)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def link_target(path: Path) -> Path:
    """The file a write to ``path`` reaches: ``path`` itself, or where its chain of symlinks
    ends (a file not made yet included). Raises OSError for a link that loops."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:  # a link to a file not made yet: it is made there
        return Path(os.path.realpath(path))
