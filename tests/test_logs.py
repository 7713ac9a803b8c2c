"""``--log-file`` / WALLETPASS_LOG: a private debug log with no secret in it."""

from __future__ import annotations

import base64
import logging
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from walletpass_tui import logs
from walletpass_tui.cli import main
from walletpass_tui.logs import suppressed
from walletpass_tui.webhooks.verify import sign

SECRET = "whsec_" + base64.b64encode(b"log test signing secret 0123456").decode()
TOKEN = "wpr_" + "Tq9" * 14
API_KEY = "sk_live_no_shape_at_all_9f8e7d"
DB_URL = "postgresql://relay:hunter2-password@db.internal:5432/relay"


@pytest.fixture
def reset_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


@pytest.mark.parametrize(
    ("line", "kept", "gone"),
    [
        (f"verifying with {SECRET}", "whsec_", SECRET[6:]),
        (f"GET /channels/x/events Authorization: Bearer {TOKEN}", "Bearer", TOKEN[4:]),
        (f"token {TOKEN} refused", "wpr_", TOKEN[4:]),
        (f"connecting to {DB_URL}", "db.internal:5432", "hunter2"),
        ("headers [('X-Api-Key', 'abc123def456')]", "X-Api-Key", "abc123def456"),
        ("password=correct-horse-battery", "password=", "correct-horse"),
    ],
)
def test_every_secret_shape_is_scrubbed_from_a_log_line(line: str, kept: str, gone: str) -> None:
    shown = logs.scrub(line)
    assert kept in shown and gone not in shown, shown


def test_a_registered_value_is_scrubbed_whatever_its_shape() -> None:
    logs.redact(API_KEY)
    assert API_KEY not in logs.scrub(f"calling the API with key {API_KEY}!")


def test_the_log_is_private_and_appended(tmp_path: Path, reset_logging: None) -> None:
    path = tmp_path / "logs" / "walletpass.log"
    path.parent.mkdir()
    path.write_text("an earlier run\n")
    os.chmod(path, 0o644)  # left looser by something else: tightened
    logs.configure(path, command="listen")
    logging.getLogger("walletpass_tui.test").warning("delivery refused: %s", SECRET)
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = path.read_text()
    assert text.startswith("an earlier run\n") and "log opened: listen" in text
    assert "delivery refused: whsec_…" in text and SECRET not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_log_file_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, clean_env: Path, capsys: pytest.CaptureFixture[str], reset_logging: None
) -> None:
    (tmp_path / "a-file").write_text("")
    code = main(["--log-file", str(tmp_path / "a-file" / "log.txt"), "config", "show"])
    err = capsys.readouterr().err
    assert code == 2 and "Cannot write the log file" in err and err.count("\n") == 1


def test_a_log_file_that_is_a_fifo_is_refused_and_its_mode_left_alone(
    tmp_path: Path, clean_env: Path, capsys: pytest.CaptureFixture[str], reset_logging: None
) -> None:
    """Only a regular file is a log file: a FIFO (or a device: as root, /dev/null made 0600
    would lock every other user out of it) is never opened for writing nor chmod-ed."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o644)
    os.chmod(fifo, 0o644)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader: opening it would not block
    try:
        for named in (fifo, tmp_path / "link-to-fifo"):
            if named != fifo:
                named.symlink_to(fifo)
            code = main(["--log-file", str(named), "config", "show"])
            err = capsys.readouterr().err
            assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
            assert "(a FIFO, not a regular file)" in err
            assert stat.S_IMODE(fifo.stat().st_mode) == 0o644
            assert os.read(reader, 100) == b""  # nothing was written into it
    finally:
        os.close(reader)


@pytest.mark.slow
def test_a_fifo_nobody_reads_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", "--log-file", str(fifo), "config", "show"],
        capture_output=True,
        text=True,
        timeout=60,  # "did not hang": opening a FIFO without a reader for writing blocks forever
        env={**os.environ, "WALLETPASS_HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 2 and "(a FIFO, not a regular file)" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_log_file_of_another_user_is_refused_and_left_alone(
    tmp_path: Path, clean_env: Path, capsys: pytest.CaptureFixture[str], reset_logging: None
) -> None:
    theirs = tmp_path / "theirs.log"
    theirs.write_text("their lines\n")
    os.chmod(theirs, 0o644)
    os.chown(theirs, 65534, 65534)
    code = main(["--log-file", str(theirs), "config", "show"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "(another user's file)" in err
    assert theirs.read_text() == "their lines\n"
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o644 and theirs.stat().st_uid == 65534


def test_directories_the_log_file_needs_are_made_0700_whatever_the_umask(
    tmp_path: Path, reset_logging: None
) -> None:
    path = tmp_path / "made" / "for" / "the" / "log.txt"
    old = os.umask(0)
    try:
        logs.configure(path, command="listen")
    finally:
        os.umask(old)
    for directory in (path.parent, path.parent.parent, path.parent.parent.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_symlink_to_a_regular_file_of_ones_own_is_written_through(
    tmp_path: Path, reset_logging: None
) -> None:
    real = tmp_path / "real.log"
    real.write_text("")
    link = tmp_path / "link.log"
    link.symlink_to(real)
    logs.configure(link, command="listen")
    assert link.is_symlink() and "log opened: listen" in real.read_text()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_a_listen_run_with_a_secret_and_a_token_leaves_neither_in_its_log(
    tmp_path: Path, clean_env: Path
) -> None:
    """A real listen with a signing secret, an API key and a relay token (its relay refusing
    connections, so the link logs its retries) receives a delivery and a forgery; the log has
    the run and none of the three."""
    log = tmp_path / "debug.log"
    port, relay_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "WALLETPASS_HOME": str(clean_env),
        "WALLETPASS_RELAY_TOKEN": TOKEN,
        "WALLETPASS_API_KEY": API_KEY,
        "WALLETPASS_LOG": str(log),
    }
    argv = [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port)]
    argv += ["--secret", SECRET, "--relay", f"http://127.0.0.1:{relay_port}/channels/x/events"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/webhooks"
        deadline = time.monotonic() + 60  # did not hang: listen binds its port
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), 0.5):
                    break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "listen did not start"
                time.sleep(0.1)
        body = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'
        headers = sign(SECRET, "msg_log_1", body, datetime.now(UTC))
        assert httpx.post(url, content=body, headers=headers, timeout=30).status_code == 200
        forged = {**headers, "webhook-signature": "v1,AAAA"}
        assert httpx.post(url, content=body, headers=forged, timeout=30).status_code == 401
        # the error path: the relay refuses every connection, and the link logs each try
        unreached = f"The relay http://127.0.0.1:{relay_port}/channels/x/events is not reached"
        while unreached not in log.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.1)
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=60)
    text = log.read_text()
    assert "log opened: listen" in text
    for secret in (SECRET[6:], TOKEN[4:], API_KEY):
        assert secret not in text, f"a secret is in the log:\n{text}"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_suppressed_cleanup_failure_is_logged_not_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cleanup whose failure nobody can act on goes on, and the debug log says what failed."""
    logger = logging.getLogger("walletpass_tui.somewhere")
    with caplog.at_level(logging.DEBUG, logger="walletpass_tui"):
        with suppressed(logger, "closing the thing"):
            raise OSError("gone already")
        with pytest.raises(KeyError), suppressed(logger, "closing the other", OSError):
            raise KeyError("not suppressed")
    [record] = caplog.records
    assert record.name == "walletpass_tui.somewhere" and record.levelno == logging.DEBUG
    assert record.getMessage() == "closing the thing failed: OSError: gone already"
