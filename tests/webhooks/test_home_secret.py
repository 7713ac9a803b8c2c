"""This home's test secret: made once (however many processes start together), 0600 from its
first byte whatever the umask, and read as hostile (a link, a FIFO, another shape of content)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from walletpass_tui.config.errors import ConfigError
from walletpass_tui.webhooks import home_secret
from walletpass_tui.webhooks.verify import parse_secret


def test_made_once_private_and_valid(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        secret = home_secret.load_or_create(tmp_path / "home")
    finally:
        os.umask(old)
    path = home_secret.path_of(tmp_path / "home")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(parse_secret(secret)) == home_secret.KEY_BYTES
    assert (
        home_secret.load_or_create(tmp_path / "home")
        == secret
        == home_secret.load(tmp_path / "home")
    )
    assert [p.name for p in path.parent.iterdir()] == ["test-secret"]  # nothing left aside


def test_many_processes_starting_at_once_get_one_secret(tmp_path: Path) -> None:
    found: list[str] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait()
        found.append(home_secret.load_or_create(tmp_path))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 8 and len(set(found)) == 1


def test_no_secret_yet_is_none(tmp_path: Path) -> None:
    assert home_secret.load(tmp_path) is None


def test_a_loose_mode_is_tightened(tmp_path: Path) -> None:
    secret = home_secret.load_or_create(tmp_path)
    home_secret.path_of(tmp_path).chmod(0o644)
    assert home_secret.load(tmp_path) == secret
    assert stat.S_IMODE(home_secret.path_of(tmp_path).stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: p.write_bytes(b"not a secret\n"), "is damaged"),
        (lambda p: p.write_bytes(b"whsec_" + b"A" * 2000), "is damaged"),
        (lambda p: p.write_bytes(b"\xff\xfe"), "is damaged"),
        (lambda p: os.mkfifo(p, 0o600), "not a file of yours"),  # never waited on
        (lambda p: p.mkdir(), "not a file of yours"),
        (lambda p: p.symlink_to(p.with_name("elsewhere")), "a symlink, not a regular file"),
        (lambda p: p.symlink_to(os.devnull), "a symlink, not a regular file"),
    ],
)
def test_a_file_that_is_not_one_is_one_sentence(
    tmp_path: Path, make: object, fragment: str
) -> None:
    make(home_secret.path_of(tmp_path))  # type: ignore[operator]
    with pytest.raises(ConfigError, match=fragment) as raised:
        home_secret.load_or_create(tmp_path)
    assert "remove" in str(raised.value)
