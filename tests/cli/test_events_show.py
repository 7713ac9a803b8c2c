"""``events show`` and ``events replay`` name a message as people do: ``last``, or the start of its
webhook-id; ``show`` indents a JSON body on a terminal, ``--raw`` gives the body's bytes exactly
and ``--json`` the attempt as stored."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from walletpass_tui.cli import main
from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store

BODY = b'{"type":"pass.activated","data":{"passId":"pass_1","note":"\\u001b[2Jgotcha"}}'
DEADLINE_S = 60.0


def attempt(
    msg_id: str, body: bytes = BODY, *, note: str | None = None, age_s: float = 0
) -> Attempt:
    return Attempt(
        received_at_ms=int((time.time() - age_s) * 1000),
        method="POST",
        path="/webhooks",
        headers=(("content-type", "application/json"),),
        body=body,
        verdict=REJECTED if note else VERIFIED,
        reason="bad_signature" if note else "verified",
        status=401 if note else 200,
        webhook_id=msg_id,
        topic="pass.activated",
        note=note,
    )


@pytest.fixture
async def home(clean_env: Path) -> Path:
    """msg_2KWPaaa (older), msg_2KWPbbb, msg_zz9 (newest a sender posted), then a check request."""
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        await store.record(attempt("msg_2KWPaaa", age_s=30))
        await store.record(attempt("msg_2KWPbbb", b'{"type":"pass.deactivated"}', age_s=20))
        await store.record(attempt("msg_zz9", b"\xff\xfe not utf-8 \x1b]0;title\x07", age_s=10))
        await store.record(attempt("msg_check_1", note="check fail: a forgery was accepted"))
        await store.settled()
    return clean_env


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def shown_id(out: str) -> str:
    return str(json.loads(out)["webhook_id"])


async def test_last_is_the_newest_message_a_sender_posted(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = await run(capsys, "events", "show", "last", "--json")
    assert code == 0
    assert shown_id(out) == "msg_zz9"  # the check's request after it is not a delivery


async def test_the_start_of_one_id_names_it_and_a_whole_id_wins(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert shown_id((await run(capsys, "events", "show", "msg_2KWPb", "--json"))[1]) == (
        "msg_2KWPbbb"
    )
    assert shown_id((await run(capsys, "events", "show", "msg_z", "--json"))[1]) == "msg_zz9"
    assert shown_id((await run(capsys, "events", "show", "msg_2KWPaaa", "--json"))[1]) == (
        "msg_2KWPaaa"
    )


async def test_an_ambiguous_start_lists_the_candidates_exit_2(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await run(capsys, "events", "show", "msg_2KWP")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "walletpass-tui: error: 'msg_2KWP' starts 2 webhook-ids; give more of the one you mean:",
        "  msg_2KWPaaa",
        "  msg_2KWPbbb",
    ]


async def test_many_candidates_are_cut_at_ten(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        for n in range(25):
            await store.record(attempt(f"msg_{n:03d}"))
        await store.settled()
    code, _, err = await run(capsys, "events", "replay", "msg_0", "--to", "http://127.0.0.1:9/x")
    assert code == 2
    lines = err.splitlines()
    assert "starts more than 10 webhook-ids" in lines[0]
    assert lines[1:] == [f"  msg_{n:03d}" for n in range(10)] + ["  ... and more"]


@pytest.mark.parametrize(
    ("ref", "status", "fragment"),
    [
        ("msg_nothing", 1, "No message 'msg_nothing' in the history"),
        ("  ", 2, "Give a webhook-id, the start of one, or last."),
    ],
)
async def test_a_name_that_names_nothing(
    home: Path, capsys: pytest.CaptureFixture[str], ref: str, status: int, fragment: str
) -> None:
    code, _, err = await run(capsys, "events", "show", ref)
    assert code == status and fragment in err and err.count("\n") == 1


async def test_last_in_an_empty_history_says_how_to_get_one(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3"):
        pass
    code, _, err = await run(capsys, "events", "show", "last")
    assert code == 1 and "No delivery in the history yet" in err and "trigger" in err


async def test_replay_takes_last_and_a_start(
    home: Path, capsys: pytest.CaptureFixture[str], start_server: Any
) -> None:
    app = await start_server()
    app.answer("POST", "/hook", status=204)
    url = app.url + "/hook"
    code, out, err = await run(
        capsys, "events", "replay", "msg_2KWPa", "--to", url, "--mode", "original"
    )
    assert code == 0, err
    assert "Replayed msg_2KWPaaa" in out
    code, out, _ = await run(capsys, "events", "replay", "last", "--to", url, "--mode", "original")
    assert code == 0 and "Replayed msg_zz9" in out
    assert [r.body for r in app.requests] == [BODY, b"\xff\xfe not utf-8 \x1b]0;title\x07"]


# -- how the body is shown -------------------------------------------------------------------------


def _show(home: Path, *argv: str, tty: bool) -> bytes:
    """``events show ...`` as a process, its stdout on a terminal (``tty``) or a pipe."""
    env = {**os.environ, "WALLETPASS_HOME": str(home), "COLUMNS": "100"}
    command = [sys.executable, "-m", "walletpass_tui", "events", "show", *argv]
    if not tty:
        done = subprocess.run(command, env=env, capture_output=True, timeout=DEADLINE_S)
        assert done.returncode == 0, done.stderr
        return done.stdout
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(command, env=env, stdout=follower, stderr=subprocess.PIPE)
        os.close(follower)
        got = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            got += chunk
        assert proc.wait(timeout=DEADLINE_S) == 0
        return got.replace(b"\r\n", b"\n")
    finally:
        os.close(leader)


@pytest.mark.slow
def test_on_a_terminal_a_json_body_is_indented_and_escaped(home: Path) -> None:
    out = _show(home, "msg_2KWPa", tty=True).decode()
    assert f"body ({len(BODY)} bytes, JSON indented; --raw for the bytes):" in out
    assert '      "passId": "pass_1",' in out  # indented under its key
    assert "\x1b" not in out and '"note": "\\u001b[2Jgotcha"' in out  # JSON's own escape


@pytest.mark.slow
def test_piped_the_body_is_shown_as_received(home: Path) -> None:
    out = _show(home, "msg_2KWPa", tty=False).decode()
    assert f"body ({len(BODY)} bytes):" in out
    assert '    {"type":"pass.activated","data":{"passId":"pass_1"' in out
    assert "\x1b" not in out


@pytest.mark.slow
def test_raw_gives_the_bytes_exactly_and_never_drives_a_terminal(home: Path) -> None:
    assert _show(home, "msg_2KWPa", "--raw", tty=False) == BODY
    assert _show(home, "last", "--raw", tty=False) == b"\xff\xfe not utf-8 \x1b]0;title\x07"
    on_terminal = _show(home, "last", "--raw", tty=True)
    assert b"\x1b" not in on_terminal and b"\x07" not in on_terminal
    assert b"\\xff\\xfe not utf-8 \\x1b]0;title\\x07" in on_terminal


async def test_raw_and_json_are_one_or_the_other(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await run(capsys, "events", "show", "last", "--raw", "--json")
    assert code == 2 and "not allowed with argument" in err


async def test_events_list_says_a_verdict_once(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = await run(capsys, "events", "list")
    assert code == 0
    rows = {line.split()[1]: line.split() for line in out.splitlines()[1:]}
    assert rows["msg_zz9"][4:6] == ["verified", "-"]  # not "verified verified"
    assert rows["msg_check_1"][4:6] == ["rejected", "bad_signature"]
