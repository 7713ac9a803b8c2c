"""How a running receiver is found: the lock held for a process's lifetime, the state file read as
hostile, a dead receiver's state recognised as stale, the run directory kept private."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from walletpass_tui.config.receiver_path import MAX_RECEIVER_PATH, receiver_path_problem
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.instance import (
    AlreadyRunning,
    InstanceError,
    InstanceRecord,
    NotRunning,
    Running,
    Stale,
)
from walletpass_tui.webhooks.listening import ReceiverOptions, receiver_url

DEADLINE_S = 60.0  # "did not hang" guard
RELAY = "https://rélay.example/channels/team/events"
PRINTABLE = st.characters(exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))


def record(pid: int = 4242, **changes: object) -> InstanceRecord:
    fields: dict[str, object] = {
        "pid": pid,
        "kind": "listen",
        "url": "http://127.0.0.1:8787/webhooks",
        "started_at_ms": 1_795_442_400_000,
    }
    fields.update(changes)
    return InstanceRecord(**fields)  # type: ignore[arg-type]


def test_nothing_is_found_on_a_home_where_nothing_ever_ran_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert instance.find(home) == NotRunning()
    assert not home.exists()  # looking never creates the home, the run directory or a lock


def test_a_claimed_home_is_found_with_its_record_until_released(tmp_path: Path) -> None:
    claim = instance.claim(tmp_path)
    assert instance.find(tmp_path, wait_s=0) == Running(None)  # locked, state not written yet
    claim.publish(record())
    assert instance.find(tmp_path) == Running(record())
    claim.withdraw()  # stopping: the state goes first, the lock stays
    assert instance.find(tmp_path, wait_s=0) == Running(None)
    claim.release()
    assert instance.find(tmp_path) == NotRunning()
    claim.release()  # twice is harmless


def test_a_second_receiver_on_the_home_is_refused_naming_the_first_and_how_to_attach(
    tmp_path: Path,
) -> None:
    first = instance.claim(tmp_path)
    first.publish(record(pid=99))
    try:
        with pytest.raises(AlreadyRunning) as refused:
            instance.claim(tmp_path, wait_s=0.05)
        said = str(refused.value)
        assert "listen, pid 99, 127.0.0.1:8787/webhooks" in said
        assert f"walletpass-tui attach --home {tmp_path}" in said
        assert refused.value.found.record == record(pid=99)
    finally:
        first.release()
    instance.claim(tmp_path).release()  # free again once the first let go


def test_files_are_private_and_a_loosened_run_directory_is_tightened(tmp_path: Path) -> None:
    run = instance.run_dir(tmp_path)
    run.mkdir(parents=True, mode=0o755)
    os.chmod(run, 0o755)  # noqa: S103  loosened on purpose: the claim tightens it
    claim = instance.claim(tmp_path)
    try:
        claim.publish(record())
        assert stat.S_IMODE(os.stat(run).st_mode) == 0o700
        for name in (instance.LOCK_NAME, instance.STATE_NAME):
            assert stat.S_IMODE(os.stat(run / name).st_mode) == 0o600, name
    finally:
        claim.release()


def test_a_run_directory_that_is_a_symlink_is_refused_and_never_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / instance.RUN_DIR).symlink_to(elsewhere)
    with pytest.raises(InstanceError, match="not a directory"):
        instance.claim(home)
    with pytest.raises(InstanceError, match="not a directory"):
        instance.find(home)
    assert list(elsewhere.iterdir()) == []


def test_a_state_file_that_is_a_symlink_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_bytes(record(pid=7).to_bytes())
    run = instance.run_dir(tmp_path)
    run.mkdir(mode=0o700)
    (run / instance.STATE_NAME).symlink_to(secret)
    found = instance.find(tmp_path)
    assert isinstance(found, Stale) and found.record is None


def test_a_lock_file_that_is_a_fifo_or_a_link_is_refused_and_never_waited_on(
    tmp_path: Path,
) -> None:
    """Opening a FIFO to read waits for a writer forever; a link could lead anywhere."""
    run = instance.run_dir(tmp_path)
    run.mkdir(mode=0o700)
    lock = run / instance.LOCK_NAME
    os.mkfifo(lock, 0o600)
    with pytest.raises(InstanceError, match=r"\(a FIFO, not a regular file\); remove it"):
        instance.find(tmp_path)
    with pytest.raises(InstanceError, match=r"\(a FIFO, not a regular file\); remove it"):
        instance.claim(tmp_path)
    lock.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"keep")
    lock.symlink_to(elsewhere)
    with pytest.raises(InstanceError, match=r"\(a symlink, not a regular file\)"):
        instance.claim(tmp_path)
    assert elsewhere.read_bytes() == b"keep"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\x00\xff garbage", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"{" + b" " * 17000 + b"}", "larger than 16 KiB"),
        (json.dumps({**json.loads(record().to_bytes()), "pid": -1}).encode(), "no valid pid"),
        (json.dumps({**json.loads(record().to_bytes()), "pid": "42"}).encode(), "no valid pid"),
        (json.dumps({**json.loads(record().to_bytes()), "kind": "evil"}).encode(), "known kind"),
        (
            json.dumps({**json.loads(record().to_bytes()), "url": "http://x/\x1b[2J"}).encode(),
            "url is not an http or https URL",
        ),
        (
            json.dumps({**json.loads(record().to_bytes()), "url": "file:///etc/passwd"}).encode(),
            "url is not an http or https URL",
        ),
        (
            json.dumps(
                {**json.loads(record().to_bytes()), "public_url": "http://x.example"}
            ).encode(),
            "public_url is not an https URL",
        ),
        (
            json.dumps(
                {**json.loads(record().to_bytes()), "public_url": "https://x/\u202e"}
            ).encode(),
            "public_url is not an https URL",
        ),
        (
            json.dumps(
                {**json.loads(record().to_bytes()), "url": "http://" + "a" * instance.MAX_URL}
            ).encode(),
            "url is not an http or https URL",
        ),
    ],
)
def test_a_hostile_state_file_is_reported_never_trusted(
    tmp_path: Path, content: bytes, why: str
) -> None:
    claim = instance.claim(tmp_path)
    try:
        (claim.state_path).write_bytes(content)
        found = instance.find(tmp_path, wait_s=0)
        assert isinstance(found, Running) and found.record is None
        assert found.problem is not None and why in found.problem
        with pytest.raises(ValueError, match=why.split(" ")[0]):
            InstanceRecord.from_bytes(content)
    finally:
        claim.release()


@settings(max_examples=300, deadline=None)
@given(path=st.text(PRINTABLE, max_size=300).map(lambda t: "/" + t))
@example(path="/wébhooks")
@example(path="/hooks?x=1#frag 100%")
@example(path="/" + "a" * (MAX_RECEIVER_PATH - 1))  # at the bound
@example(path="/" + "\U0001f600" * ((MAX_RECEIVER_PATH - 1) // 12))  # 4 bytes, 12 characters
@example(path="/a/..b/.c/...")  # dots that are not dot segments
def test_any_path_the_receiver_accepts_gives_a_state_file_attach_accepts(path: str) -> None:
    """Whatever the configuration lets a receiver serve, the state file it writes is read back
    whole: its URL printable ASCII, within the bounds, and decoding to the path it serves, which
    is the path an HTTP client posts to (no dot segment for it to remove)."""
    assume(receiver_path_problem(path) is None)
    options = ReceiverOptions(path=path)
    url = receiver_url(options, ("fe80::1%" + "e" * 15, 65535))
    written = record(url=instance.shown_url(url), relay=instance.shown_url(RELAY + path))
    read = InstanceRecord.from_bytes(written.to_bytes())
    assert read == written and read.url == url
    assert url.isascii() and url.isprintable()
    assert unquote(urlsplit(url).path) == path
    assert httpx.URL(url).raw_path.split(b"?")[0].decode() == urlsplit(url).path


def test_a_relay_url_of_any_length_or_text_is_carried_cut_to_the_bound() -> None:
    long = RELAY + "é" * 3000
    written = record(relay=instance.shown_url(long))
    assert written.relay is not None and len(written.relay) == instance.MAX_URL
    assert InstanceRecord.from_bytes(written.to_bytes()) == written


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from walletpass_tui.runtime import instance
    claim = instance.claim(Path(sys.argv[1]))
    claim.publish(instance.InstanceRecord(
        pid=__import__("os").getpid(), kind="listen",
        url="http://127.0.0.1:8787/webhooks", started_at_ms=1))
    print("ready", flush=True)
    time.sleep(600)
    """
)


def test_a_sigkilled_receivers_state_is_recognised_as_stale_and_replaced_by_the_next(
    tmp_path: Path,
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        found = instance.find(tmp_path)
        assert isinstance(found, Running) and found.record is not None
        assert found.record.pid == child.pid
        child.send_signal(signal.SIGKILL)  # no chance to clean up
        child.wait(timeout=DEADLINE_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert (instance.run_dir(tmp_path) / instance.STATE_NAME).exists()  # left behind
    found = instance.find(tmp_path)
    assert isinstance(found, Stale) and found.record is not None
    assert found.record.pid == child.pid
    claim = instance.claim(tmp_path)  # the next start takes the home and says what it replaced
    try:
        assert claim.previous is not None and claim.previous.pid == child.pid
        assert isinstance(instance.find(tmp_path, wait_s=0), Running)
    finally:
        claim.release()
    assert instance.find(tmp_path) == NotRunning()


def test_looking_while_a_receiver_starts_never_makes_it_think_the_home_is_taken(
    tmp_path: Path,
) -> None:
    """A looker holds a shared lock for an instant; a receiver starting then waits it out."""
    instance.claim(tmp_path).release()  # the lock file exists, as after any earlier run
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            instance.find(tmp_path, wait_s=0)

    lookers = [threading.Thread(target=look) for _ in range(2)]
    for thread in lookers:
        thread.start()
    try:
        for _ in range(50):
            instance.claim(tmp_path).release()
    finally:
        stop.set()
        for thread in lookers:
            thread.join(timeout=DEADLINE_S)


def test_the_record_describes_the_receiver_as_the_header_shows_it() -> None:
    assert record().describe() == "listen, pid 4242, 127.0.0.1:8787/webhooks"
    assert record(url=None).describe() == "listen, pid 4242"
    assert InstanceRecord.from_bytes(record(relay="https://r.example/c/x/events").to_bytes()) == (
        record(relay="https://r.example/c/x/events")
    )


def test_home_flag_names_a_home_that_is_not_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from walletpass_tui import config

    monkeypatch.setattr(config, "default_data_dir", lambda: tmp_path / "default")
    assert instance.home_flag(tmp_path / "default") == ""
    assert instance.home_flag(tmp_path / "my home") == f" --home '{tmp_path / 'my home'}'"
