"""Private files and directories: 0600 and 0700 whatever the umask, written atomically."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from walletpass_tui.private_files import write_private_file


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
