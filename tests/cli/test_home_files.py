"""A home's files that are not what they should be (a FIFO, a device, a huge file) are refused in
one line and never waited on, by real ``walletpass-tui`` processes: the config file every command
reads first, and the running receiver's state file every command that looks for it reads."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_helpers import DEADLINE_S, SECRET, Proc, free_port, post

from walletpass_tui.runtime import instance

BODY = b'{"type":"pass.activated","data":{"passId":"pass_1"}}'


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """``walletpass-tui ARGV``; a process still running at the deadline fails the test (it hangs,
    as it would on a FIFO nobody writes to)."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "walletpass_tui", *argv],
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"walletpass-tui {' '.join(argv)} hung") from None


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.kill()


def listen(procs: list[Proc]) -> tuple[Proc, str]:
    """A ``listen`` on a free port, stopped after the test whatever happens; (it, its URL)."""
    port = free_port()
    proc = Proc("listen", "--port", str(port), "--json", "--secret", SECRET)
    procs.append(proc)
    proc.err.until(lambda line: line.startswith("History:"))
    return proc, f"http://127.0.0.1:{port}/webhooks"


# -- the config file --------------------------------------------------------------------------------


def test_a_config_file_that_is_a_fifo_is_refused_at_once(clean_env: Path) -> None:
    clean_env.mkdir()
    os.mkfifo(clean_env / "config.toml", 0o600)
    done = run("config", "show")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"Cannot read the config file {clean_env / 'config.toml'} (a FIFO, not a regular " in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def test_a_config_file_linked_to_dev_zero_or_huge_is_read_no_further_than_its_bound(
    clean_env: Path,
) -> None:
    """Read whole, /dev/zero would fill the memory; a file of a few MiB is not a config file."""
    clean_env.mkdir()
    config = clean_env / "config.toml"
    config.symlink_to("/dev/zero")
    done = run("config", "show")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "(a character device, not a regular file); fix or remove it." in done.stderr
    config.unlink()
    with config.open("wb") as fh:
        fh.write(b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    done = run("config", "show")
    assert done.returncode == 1 and "(larger than 1 MiB); fix or remove it." in done.stderr


def test_a_config_file_linked_to_dev_null_means_no_settings(clean_env: Path) -> None:
    """``ln -s /dev/null config.toml``: the common way to say "no config"."""
    clean_env.mkdir()
    (clean_env / "config.toml").symlink_to(os.devnull)
    done = run("config", "show")
    assert done.returncode == 0, done.stderr
    assert "receiver_port" in done.stdout and "8787" in done.stdout


def test_a_config_file_saved_with_a_byte_order_mark_is_read(clean_env: Path) -> None:
    """Some editors start UTF-8 with an invisible byte order mark; TOML does not allow one."""
    clean_env.mkdir()
    (clean_env / "config.toml").write_bytes(b"\xef\xbb\xbf[receiver]\nport = 8899\n")
    done = run("config", "show")
    assert done.returncode == 0, done.stderr
    assert any("8899" in line and "receiver_port" in line for line in done.stdout.splitlines())


# -- the running receiver's state file --------------------------------------------------------------


def test_a_fifo_left_as_the_state_file_does_not_stop_listen(
    clean_env: Path, procs: list[Proc]
) -> None:
    """A leftover FIFO where a dead receiver's state was: listen starts, receives, stops on
    Ctrl-C (opening the FIFO would wait for a writer forever, Ctrl-C included)."""
    run_dir = clean_env / "run"
    run_dir.mkdir(parents=True, mode=0o700)
    os.mkfifo(run_dir / instance.STATE_NAME, 0o600)
    receiver, url = listen(procs)
    assert post(url, "msg_1", BODY) == 200
    assert (run_dir / instance.STATE_NAME).is_file()  # its own state, in place of the FIFO
    assert receiver.interrupt() == 0


def test_commands_that_look_for_the_receiver_report_a_fifo_state_file_and_never_wait(
    clean_env: Path, procs: list[Proc]
) -> None:
    receiver, url = listen(procs)
    state = clean_env / "run" / instance.STATE_NAME
    fifo = state.with_name("swapped-in")
    os.mkfifo(fifo, 0o600)
    os.replace(fifo, state)
    for argv in (
        ("attach",),
        ("web", "--port", "0"),
        ("listen", "--port", "0"),
        ("endpoints", "create", "--from-listener", "--topic", "pass.activated"),
    ):
        done = run(*argv)
        assert done.returncode in (1, 2) and done.stderr.count("\n") == 1, (argv, done.stderr)
        assert "Traceback" not in done.stderr
    assert post(url, "msg_still", BODY) == 200  # the receiver never noticed
    assert receiver.interrupt() == 0


def test_a_removed_state_file_gets_one_sentence_from_every_command_that_looks(
    clean_env: Path, procs: list[Proc]
) -> None:
    """The state file gone (a cleaner, a slip) while listen runs: every command that looks for
    the receiver says it runs and to restart it, never "no receiver runs: start one", which the
    next listen would refuse."""
    receiver, url = listen(procs)
    assert post(url, "msg_before", BODY) == 200
    (clean_env / "run" / instance.STATE_NAME).unlink()
    said = set()
    for argv in (("trigger", "activated"), ("events", "replay", "last"), ("attach",)):
        done = run(*argv)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, (argv, done.stderr)
        said.add(done.stderr.removesuffix(", or give --to URL.\n").removesuffix(".\n"))
    assert said == {
        f"walletpass-tui: error: A receiver holds {clean_env} but its state cannot be read (the "
        "file is missing); stop it and start it again"
    }
    again = run("listen", "--port", "0")
    assert again.returncode == 1 and "A receiver already runs on" in again.stderr
    assert post(url, "msg_still", BODY) == 200  # the receiver never noticed
    assert receiver.interrupt() == 0


# -- the endpoints' secrets ---------------------------------------------------------------------------


def test_an_endpoints_file_that_is_a_fifo_is_refused_in_one_line(clean_env: Path) -> None:
    clean_env.mkdir()
    os.mkfifo(clean_env / "endpoints.json", 0o600)
    for argv in (("endpoints", "list"), ("listen", "--port", "0")):
        done = run(*argv)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, (argv, done.stderr)
        assert "endpoints.json (a FIFO, not a regular file); restore it" in done.stderr


# -- the history and the files beside it ----------------------------------------------------------


def history_of_one(home: Path) -> None:
    """A history holding one verified delivery (made by ``trigger`` into a running listen)."""
    receiver, _ = listen_on(home)
    try:
        done = run("trigger", "activated", "--home", str(home))
        assert done.returncode == 0, done.stderr
    finally:
        assert receiver.interrupt() == 0


def listen_on(home: Path) -> tuple[Proc, str]:
    port = free_port()
    proc = Proc("listen", "--home", str(home), "--port", str(port), "--json")
    try:
        proc.err.until(lambda line: line.startswith("History:"))
    except BaseException:
        proc.kill()
        raise
    return proc, f"http://127.0.0.1:{port}/webhooks"


@pytest.mark.parametrize("name", ["deliveries.sqlite3", "deliveries.sqlite3-wal"])
def test_a_history_file_that_is_a_fifo_is_refused_by_every_command_never_waited_on(
    clean_env: Path, name: str
) -> None:
    history_of_one(clean_env)
    fifo = clean_env / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo, 0o600)
    for argv in (("events", "list"), ("events", "stats"), ("listen", "--port", "0")):
        done = run(*argv)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, (argv, done.stderr)
        assert f"({fifo} is a FIFO, not a regular file); move that file aside" in done.stderr
    done = run("schema", "rebuild")
    assert done.returncode == 1 and f"{fifo} is a FIFO, not a regular file" in done.stderr


@pytest.mark.parametrize("name", ["deliveries.sqlite3-search", "deliveries.sqlite3-fields"])
def test_an_index_that_is_a_fifo_is_not_used_and_the_history_still_read(
    clean_env: Path, name: str
) -> None:
    history_of_one(clean_env)
    (clean_env / name).unlink()
    os.mkfifo(clean_env / name, 0o600)
    done = run("events", "list", "--where", "has:data.passId")
    assert done.returncode == 0 and "pass.activated" in done.stdout, done.stderr
    done = run("events", "list", "--search", "pass")
    assert done.returncode == 0 and "pass.activated" in done.stdout, done.stderr


def test_a_schema_file_that_is_a_fifo_is_said_in_one_line(clean_env: Path) -> None:
    history_of_one(clean_env)
    schemas = clean_env / "deliveries.sqlite3-schemas"
    schemas.unlink()
    os.mkfifo(schemas, 0o600)
    for argv in (("schema", "list"), ("schema", "rebuild")):
        done = run(*argv)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, (argv, done.stderr)
        assert f"{schemas} is a FIFO, not a regular file" in done.stderr
