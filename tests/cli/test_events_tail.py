"""``events tail`` follows the history another process writes: real ``listen`` processes, real
signed posts, a real ``events tail`` process, Ctrl-C."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_helpers import STRANGER, Proc, post, start_listen

BODY = b'{"type": "pass.activated", "data": {"passId": "pass_7"}}'
OTHER = b'{"type": "pass.deactivated", "data": {"passId": "pass_8"}}'


@pytest.fixture
def procs(clean_env: Path) -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.kill()


@pytest.mark.slow
def test_tail_prints_each_new_attempt_as_listen_does_and_ctrl_c_ends_it_with_0(
    procs: list[Proc], clean_env: Path
) -> None:
    # Without learning: listen --json then adds no "drift" array (see test_listen_drift.py).
    listen, url = start_listen("--no-schemas")
    procs.append(listen)
    assert post(url, "msg_before", BODY) == 200  # stored before tail starts: not printed
    listen.out.until(lambda line: "msg_before" in line)

    tail = Proc("events", "tail", "--json")
    procs.append(tail)
    tail.err.until(lambda line: line.startswith("Following"))
    sent = [
        ("msg_a", BODY, None),
        ("msg_a", BODY, None),  # a redelivery
        ("msg_b", OTHER, None),
        ("msg_forged", BODY, STRANGER),
    ]
    for msg_id, body, secret in sent:
        post(url, msg_id, body, secret) if secret else post(url, msg_id, body)
    printed_by_listen = [listen.out.next() for _ in sent]
    printed_by_tail = [tail.out.next() for _ in sent]
    # The same JSON object, character for character, as listen printed for each attempt.
    assert printed_by_tail == printed_by_listen
    got = [json.loads(line) for line in printed_by_tail]
    assert [(a["webhook_id"], a["attempt"], a["verdict"]) for a in got] == [
        ("msg_a", 1, "verified"),
        ("msg_a", 2, "verified"),
        ("msg_b", 1, "verified"),
        ("msg_forged", 1, "rejected"),
    ]
    assert got[2]["topic"] == "pass.deactivated" and got[2]["body"] == OTHER.decode()

    assert tail.interrupt() == 0
    assert tail.out.rest() == []  # msg_before was never printed
    assert "Traceback" not in "\n".join(tail.err.seen + tail.err.rest())


@pytest.mark.slow
def test_tail_filters_and_prints_listens_line_without_json(
    procs: list[Proc], clean_env: Path
) -> None:
    listen, url = start_listen()
    procs.append(listen)
    tail = Proc("events", "tail", "--verdict", "rejected", "--topic", "activated")
    procs.append(tail)
    tail.err.until(lambda line: line.startswith("Following"))
    post(url, "msg_ok", BODY)
    post(url, "msg_bad_topic", OTHER, STRANGER)
    post(url, "msg_bad", BODY, STRANGER)
    line = tail.out.next()
    assert "msg_bad " in line and "pass.activated" in line and "REJECTED" in line
    assert " 401 " in line and "no signature matches" in line
    assert tail.interrupt() == 0
    assert tail.out.rest() == []  # neither the verified one nor the other topic


@pytest.mark.slow
def test_tail_waits_for_a_history_that_does_not_exist_and_never_creates_it(
    procs: list[Proc], clean_env: Path
) -> None:
    database = clean_env / "deliveries.sqlite3"
    tail = Proc("events", "tail", "--json")
    procs.append(tail)
    said = tail.err.next()
    assert said.startswith(f"No history yet at {database}; start `walletpass-tui listen`")
    assert tail.proc.poll() is None  # waiting, as tail -F does
    assert not database.exists() and not clean_env.exists()

    listen, url = start_listen()
    procs.append(listen)
    post(url, "msg_first", BODY)
    assert json.loads(tail.out.next())["webhook_id"] == "msg_first"
    assert tail.interrupt() == 0


@pytest.mark.slow
def test_tail_survives_a_prune_and_the_history_replaced_under_it(
    procs: list[Proc], clean_env: Path
) -> None:
    database = clean_env / "deliveries.sqlite3"
    listen, url = start_listen()
    procs.append(listen)
    tail = Proc("events", "tail", "--json")
    procs.append(tail)
    tail.err.until(lambda line: line.startswith("Following"))
    post(url, "msg_1", BODY)
    assert json.loads(tail.out.next())["webhook_id"] == "msg_1"

    pruned = Proc("events", "prune", "--older-than", "0", "--yes")
    assert pruned.proc.wait(timeout=60) == 0, pruned.err.rest()
    post(url, "msg_2", BODY)
    assert json.loads(tail.out.next())["webhook_id"] == "msg_2"

    # Another history takes the path: the receiver stops, the file is moved aside, a new
    # receiver creates a new one (its row ids start again from 1).
    assert listen.interrupt() == 0
    for suffix in ("", "-wal", "-shm"):
        old = database.with_name(database.name + suffix)
        if old.exists():
            os.replace(old, clean_env / f"old{suffix}")
    listen, url = start_listen()
    procs.append(listen)
    post(url, "msg_3", BODY)
    assert json.loads(tail.out.next())["webhook_id"] == "msg_3"
    assert tail.proc.poll() is None
    assert tail.interrupt() == 0
