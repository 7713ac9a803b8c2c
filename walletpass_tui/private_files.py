"""Files only the user may read, whatever the umask: the directories made for them and the whole
files written into them.

* :func:`ensure_private_dir` makes a directory and every parent it lacks, each 0700; a directory
  that exists already is left as it is (it may be shared, like ``~/.local``).
* :func:`write_private_file` replaces a file's content atomically, 0600 from the first byte;
  through a symlink, the file it leads to.
"""

from __future__ import annotations

import os
from pathlib import Path


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


def write_private_file(path: Path, data: bytes) -> None:
    """Write ``data`` atomically to ``path`` with mode 0600, never readable by others even briefly.

    A ``path`` that is a symlink (a config file kept with one's dotfiles) is written through: the
    file it leads to is replaced, the link stays. Raises OSError as the write does: the link's
    file in a directory that does not exist or cannot be written, a link that loops."""
    ensure_private_dir(path.parent)
    path = link_target(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
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
