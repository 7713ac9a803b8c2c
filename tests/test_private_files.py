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
