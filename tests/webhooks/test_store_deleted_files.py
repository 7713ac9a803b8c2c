"""History files deleted (or moved) under a running store: no delivery is acknowledged from a file
that is gone. The main file, or its directory, gone: a new, private history is started at the path
and the delivery stored there; the log alone gone: every row in it is kept."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import factories
import httpx
import pytest

from walletpass_tui.webhooks.models import PENDING, Attempt, ForwardResult, evolve
from walletpass_tui.webhooks.store import Store

T0 = 1_795_000_000_000
DELETED = "was deleted (or moved) while in use; a new, empty history was started in its place."
LOG_DELETED = "was deleted while in use; every delivery in it was copied into"


def make(webhook_id: str) -> Attempt:
    headers = (("webhook-id", webhook_id),)
    return factories.attempt(
        webhook_id, b'{"note": "harbour"}', headers=headers, topic="pass.activated"
    )


def stored_ids(path: Path) -> list[str]:
    """What the file at ``path`` holds, read by another connection (as the next run would)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return [str(r[0]) for r in db.execute("SELECT webhook_id FROM attempts ORDER BY id")]


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def companions(path: Path) -> list[Path]:
    return [path.with_name(path.name + s) for s in ("-wal", "-shm")]


@pytest.mark.parametrize("which", ["main file", "main file, log and -shm"])
async def test_a_deleted_history_is_started_anew_and_the_delivery_stored_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    path = tmp_path / "home" / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        heard: list[str | None] = []
        store.on_health(heard.append)
        await store.record(make("msg_before"))
        os.unlink(path)
        if which != "main file":
            for file in companions(path):
                os.unlink(file)
        after = await store.record(make("msg_before"))  # the same message, in a new history
        assert after.attempt_no == 1
        assert (await store.record(make("msg_later"))).attempt_no == 1
        assert [a.webhook_id for a in await store.message_attempts("msg_before")] == ["msg_before"]
        assert await store.count() == 2
        # Said once, where listen's health line goes and to the dashboard; then writes work.
        err = capsys.readouterr().err
        assert err == f"walletpass-tui: The history database {path} {DELETED}\n"
        assert heard == [f"The history database {path} {DELETED}", None]
        assert store.health.problem is None
        assert mode(path) == 0o600 and all(mode(f) == 0o600 for f in companions(path))
    assert stored_ids(path) == ["msg_before", "msg_later"]


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
async def test_a_deleted_log_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    path = tmp_path / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        for i in range(5):
            await store.record(make(f"msg_{i}"))  # in the log only: no checkpoint yet
        os.unlink(f"{path}{suffix}")
        await store.record(make("msg_after"))
        await store.record(make("msg_later"))
        assert await store.count() == 7
        assert LOG_DELETED in capsys.readouterr().err
        # Another program sees every row now, through the new log.
        assert stored_ids(path) == [*(f"msg_{i}" for i in range(5)), "msg_after", "msg_later"]
    assert stored_ids(path) == [*(f"msg_{i}" for i in range(5)), "msg_after", "msg_later"]


async def test_a_renamed_data_directory_leaves_the_old_history_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    path = home / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        await store.record(make("msg_before"))
        home.rename(tmp_path / "moved")
        await store.record(make("msg_after"))
        assert DELETED in capsys.readouterr().err
    assert stored_ids(path) == ["msg_after"]
    assert stored_ids(tmp_path / "moved" / "deliveries.sqlite3")[0] == "msg_before"


async def test_a_removed_data_directory_is_made_again_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = home / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        await store.record(make("msg_before"))
        shutil.rmtree(home)
        await store.record(make("msg_after"))
    assert stored_ids(path) == ["msg_after"]
    assert mode(home) == 0o700 and mode(path) == 0o600


async def test_a_history_that_cannot_be_started_again_answers_no_delivery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The directory cannot be made again (a file stands in its way): every delivery fails, with
    a sentence saying what happened, until it can; then the history starts over."""
    home = tmp_path / "home"
    path = home / "deliveries.sqlite3"
    async with await Store.open(path) as store:
        await store.record(make("msg_before"))
        shutil.rmtree(home)
        home.write_text("not a directory")
        for _ in range(2):
            with pytest.raises(Exception, match="was deleted while in use") as failed:
                await store.record(make("msg_refused"))
            assert "Traceback" not in str(failed.value)
        assert capsys.readouterr().err.count("walletpass-tui: ") == 2  # one line per failure
        home.unlink()
        assert (await store.record(make("msg_after"))).attempt_no == 1
    assert stored_ids(path) == ["msg_after"]


async def test_a_forward_read_before_the_history_was_deleted_updates_nothing_after(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries.sqlite3"
    target = "http://127.0.0.1:9/hook"
    async with await Store.open(path) as store:
        await store.record(make("msg_old"), forward_to=[target])
        old = await store.next_pending_forward(target)
        assert old is not None
        os.unlink(path)
        later = evolve(make("msg_new"), received_at_ms=T0 + 1)
        await store.record(later, forward_to=[target])
        new = await store.next_pending_forward(target)
        assert new is not None and new.id == old.id  # the same row id, another forward
        await store.update_forward(old, ForwardResult(200, 1.0), next_try_at_ms=None)
        [still] = await store.forwards_for_message("msg_new")
        assert still.state == PENDING and still.tries == 0


# -- listen, as a process ---------------------------------------------------------------------

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_7"}}'


def signed(msg_id: str) -> dict[str, str]:
    ts = str(int(time.time()))
    key = base64.b64decode(SECRET.split("_", 1)[1])
    digest = hmac.new(key, f"{msg_id}.{ts}.".encode() + BODY, hashlib.sha256).digest()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
    }


@pytest.fixture
def listen(clean_env: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port), "--secret", SECRET],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"listen exited: {proc.communicate()}")
            if line.startswith("History:"):
                break
        yield proc, f"http://127.0.0.1:{port}/webhooks"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_listen_stores_every_acknowledged_delivery_after_the_history_is_deleted(
    clean_env: Path, listen: tuple[subprocess.Popen[str], str]
) -> None:
    proc, url = listen
    path = clean_env / "deliveries.sqlite3"
    with httpx.Client(timeout=30) as client:
        assert client.post(url, content=BODY, headers=signed("msg_before")).status_code == 200
        os.unlink(path)
        answers = {
            f"msg_after_{i}": client.post(url, content=BODY, headers=signed(f"msg_after_{i}"))
            for i in range(5)
        }
    acknowledged = [m for m, a in answers.items() if 200 <= a.status_code < 300]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert acknowledged == list(answers)
    assert stored_ids(path) == acknowledged  # every 2xx is in the history at the path
    assert f"walletpass-tui: The history database {path} {DELETED}" in err.splitlines()
