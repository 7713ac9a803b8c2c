"""Private files and directories: 0600 and 0700 whatever the umask, written atomically; read
as hostile (a regular file, bounded, never waited on); never a device written over."""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from walletpass_tui.private_files import open_regular, read_private_file, write_private_file


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_write_private_file_is_0600_in_a_0700_directory(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "secrets.json"
    old_umask = os.umask(0)
    try:
        write_private_file(target, b"{}")
    finally:
        os.umask(old_umask)
    assert target.read_bytes() == b"{}"
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700 and mode(target.parent.parent) == 0o700
    assert list(target.parent.iterdir()) == [target], "no temporary file is left behind"


def test_write_private_file_tightens_a_loose_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "secrets.json"
    target.write_bytes(b"old")
    target.chmod(0o644)
    write_private_file(target, b"new")
    assert target.read_bytes() == b"new"
    assert mode(target) == 0o600


def test_write_private_file_cleans_up_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "secrets.json"
    target.write_bytes(b"keep me")

    def fail(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_private_file(target, b"new")
    assert target.read_bytes() == b"keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["secrets.json"]


def test_write_private_file_writes_through_a_chain_of_links(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "walletpass.toml"
    real.parent.mkdir()
    real.write_bytes(b"old")
    real.chmod(0o644)
    middle = tmp_path / "middle.toml"
    middle.symlink_to(real)
    link = tmp_path / "home" / "config.toml"
    link.parent.mkdir()
    link.symlink_to(middle)
    write_private_file(link, b"new")
    assert link.is_symlink() and middle.is_symlink()
    assert real.read_bytes() == b"new" and mode(real) == 0o600
    assert sorted(p.name for p in real.parent.iterdir()) == ["walletpass.toml"]


def test_a_link_to_a_file_not_made_yet_makes_it_there(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "walletpass.toml"
    real.parent.mkdir()
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    write_private_file(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new" and mode(real) == 0o600


def test_a_link_that_loops_is_an_error_and_stays_as_it_was(tmp_path: Path) -> None:
    link = tmp_path / "config.toml"
    link.symlink_to(tmp_path / "other.toml")
    (tmp_path / "other.toml").symlink_to(link)
    with pytest.raises(OSError):
        write_private_file(link, b"new")
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "other.toml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "other.toml"]


# -- reading and writing what is not a regular file ------------------------------------------------


@pytest.fixture
def null_copy(tmp_path: Path) -> Iterator[Path]:
    """A character device made like /dev/null (never the system's own)."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.stat(os.devnull).st_rdev)
    os.chmod(node, 0o666)  # noqa: S103 - as /dev/null is
    yield node


def finishes(call: Callable[[], object]) -> object:
    """What ``call`` returns or raises, from a thread; a call still blocked after a generous
    deadline fails the test (a FIFO nobody writes to would block it forever)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the test, which checks it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert outcome, "the call blocked (waiting on a FIFO)"
    return outcome[0]


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo, 0o600)
    link = tmp_path / "link.toml"
    link.symlink_to(fifo)
    for path in (fifo, link):
        raised = finishes(lambda path=path: read_private_file(path, 1024))
        assert isinstance(raised, OSError) and raised.strerror == "a FIFO, not a regular file"
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_device_is_refused_and_a_large_file_read_no_further_than_its_bound(
    tmp_path: Path,
) -> None:
    zero = tmp_path / "config.toml"
    zero.symlink_to("/dev/zero")  # read whole, it would fill the memory
    with pytest.raises(OSError, match="a character device, not a regular file"):
        read_private_file(zero, 1024 * 1024)
    huge = tmp_path / "huge.toml"
    with huge.open("wb") as fh:
        fh.truncate(8 * 1024**3)  # 8 GiB, sparse
    with pytest.raises(OSError) as raised:
        read_private_file(huge, 64 * 1024)
    assert raised.value.errno == errno.EFBIG and raised.value.strerror == "larger than 64 KiB"
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 1024)
    assert read_private_file(exact, 1024) == b"x" * 1024


def test_the_null_device_reads_as_nothing_through_a_link(tmp_path: Path) -> None:
    """``ln -s /dev/null config.toml`` says "no settings"."""
    link = tmp_path / "config.toml"
    link.symlink_to(os.devnull)
    assert read_private_file(link, 1024) == b""


def test_a_symlink_is_refused_where_links_are_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_bytes(b"{}")
    link = tmp_path / "receiver.json"
    link.symlink_to(real)
    with pytest.raises(OSError, match="a symlink, not a regular file"):
        read_private_file(link, 1024, follow_links=False)
    with pytest.raises(OSError, match="a symlink, not a regular file"):
        open_regular(link, os.O_RDWR | os.O_CREAT, follow_links=False)
    assert read_private_file(link, 1024) == b"{}"


def test_a_loose_file_is_tightened_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "endpoints.json"
    path.write_bytes(b"{}")
    path.chmod(0o644)
    assert read_private_file(path, 1024, tighten=True) == b"{}"
    assert mode(path) == 0o600


def test_writing_through_a_link_to_the_null_device_leaves_the_device(
    tmp_path: Path, null_copy: Path
) -> None:
    """As root, replacing it would leave the system's /dev/null a 0600 file nobody else opens."""
    before = os.stat(null_copy)
    config = tmp_path / "config.toml"
    config.symlink_to(null_copy)
    assert read_private_file(config, 1024) == b""
    with pytest.raises(OSError, match="a character device, not a regular file"):
        write_private_file(config, b'[ui]\ntheme = "nord"\n')
    after = os.stat(null_copy)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert stat.S_IMODE(after.st_mode) == 0o666
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "null"]


def test_writing_over_a_fifo_or_a_directory_is_refused_and_leaves_it(tmp_path: Path) -> None:
    fifo = tmp_path / "cursor"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(OSError, match="a FIFO, not a regular file"):
        write_private_file(fifo, b"1\n")
    link = tmp_path / "endpoints.json"
    link.symlink_to(tmp_path / "dir")
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError, match="a directory, not a regular file"):
        write_private_file(link, b"{}")
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and (tmp_path / "dir").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cursor", "dir", "endpoints.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_writing_over_another_users_file_is_refused_and_leaves_it(tmp_path: Path) -> None:
    theirs = tmp_path / "config.toml"
    theirs.write_bytes(b"# theirs\n")
    theirs.chmod(0o644)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(OSError, match="another user's file"):
        write_private_file(theirs, b"mine")
    assert theirs.read_bytes() == b"# theirs\n" and theirs.stat().st_uid == 65534
    assert mode(theirs) == 0o644


def test_a_temporary_name_taken_by_a_link_is_never_written_through(tmp_path: Path) -> None:
    """The temporary file is made new (O_EXCL, O_NOFOLLOW) under a name nobody can guess."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    planted = tmp_path / f".cursor.tmp-{os.getpid()}"  # the name a process id alone would give
    planted.symlink_to(victim)
    write_private_file(tmp_path / "cursor", b"7\n")
    assert (tmp_path / "cursor").read_bytes() == b"7\n" and not (tmp_path / "cursor").is_symlink()
    assert victim.read_bytes() == b"keep" and planted.is_symlink()
