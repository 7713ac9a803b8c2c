"""``events list/export/tail --where``: field queries on the command line, against a history a
real ``listen`` writes (its field indexer and schema learner running), and in-process against
one made here."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import factories
import pytest
from process_helpers import DEADLINE_S, Proc, post, start_listen

from walletpass_tui.webhooks.store import Store

GOOGLE = b'{"type": "pass.activated", "data": {"platform": "google", "balance": 15}}'
APPLE = b'{"type": "pass.activated", "data": {"platform": "apple", "balance": 3}}'
TIERED = b'{"type": "pass.deactivated", "data": {"platform": "google", "loyaltyTier": "gold"}}'


@pytest.fixture
def procs(clean_env: Path) -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.kill()


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )


def listed(query: str) -> list[str]:
    done = run("events", "list", "--json", f"--where={query}")  # = : a query may start with -
    assert done.returncode == 0, done.stderr
    return [m["webhook_id"] for m in json.loads(done.stdout)]


def until_listed(query: str, expected: list[str]) -> None:
    """The field index follows listen's commits a moment later: poll (a "did not hang" bound)."""
    end = time.monotonic() + DEADLINE_S
    while (found := listed(query)) != expected:
        assert time.monotonic() < end, found
        time.sleep(0.1)


@pytest.mark.slow
def test_where_finds_fields_of_what_listen_stored_and_tail_prints_only_matches(
    procs: list[Proc], clean_env: Path
) -> None:
    listen, url = start_listen()
    procs.append(listen)
    tail = Proc("events", "tail", "--where", "data.platform:google")
    procs.append(tail)
    tail.err.until(lambda line: line.startswith("Following"))
    for msg_id, body in (("msg_g", GOOGLE), ("msg_a", APPLE), ("msg_t", TIERED)):
        assert post(url, msg_id, body) == 200
    # tail prints the two google deliveries, not the apple one
    assert "msg_g" in tail.out.next() and "msg_t" in tail.out.next()

    until_listed("data.platform:google", ["msg_t", "msg_g"])
    assert listed("data.balance>10") == ["msg_g"]
    assert listed("has:data.loyaltyTier") == ["msg_t"]
    assert listed("-has:data.loyaltyTier") == ["msg_a", "msg_g"]
    assert listed("data.platform:google -topic:deactivated") == ["msg_g"]
    assert listed("(data.balance<5 OR data.loyaltyTier:gold)") == ["msg_t", "msg_a"]

    done = run("events", "export", "--where", "data.platform:apple")
    assert done.returncode == 0, done.stderr
    exported = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["webhook_id"] for a in exported] == ["msg_a"]

    # A path no delivery has shown: exit 2, one line naming the nearest known ones.
    wrong = run("events", "list", "--where", "data.platfrom:google")
    assert wrong.returncode == 2
    assert wrong.stdout == ""
    assert wrong.stderr.splitlines() == [
        "walletpass-tui: error: --where: No delivery has shown a field data.platfrom; the "
        "nearest known: data.platform."
    ]
    assert "Traceback" not in wrong.stderr
    assert tail.interrupt() == 0


# Keys the schema prints with escapes (none with a space: the path is the first column).
ODD_KEYS = ["nl\nline", "ls\u2028sep", "pass\x1b[2Jid", 'q"uote', "back\\slash", "del\x7f"]
ODD_KEYS += ["\udc81", "\\u2028", "tab\tkey", "bidi\u202egnp.exe", "a.b"]


async def test_every_path_schema_show_prints_is_read_by_where(clean_env: Path) -> None:
    """Copied from ``schema show``, each path is the field it names: the command finds it (not
    "no delivery has shown a field"), with no other path standing in for it."""
    odd = json.dumps({"type": "pass.activated", "data": {k: n for n, k in enumerate(ODD_KEYS)}})
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        await store.record(factories.attempt("msg_odd", odd.encode(), topic="pass.activated"))
        plain = b'{"type": "pass.activated", "data": {"n": 1}}'
        await store.record(factories.attempt("msg_plain", plain, topic="pass.activated"))
    assert run("schema", "rebuild").returncode == 0
    shown = run("schema", "show", "activated")
    assert shown.returncode == 0, shown.stderr
    # Each with its example (the value seen, the key's own number), all at once.
    rows = [line.split() for line in shown.stdout.splitlines()]
    odd_terms = [f"{r[0]}:{r[3]}" for r in rows if r and r[0].startswith("data[")]
    assert sorted(int(t.rsplit(":", 1)[1]) for t in odd_terms) == list(range(len(ODD_KEYS)))
    assert listed(" ".join(odd_terms)) == ["msg_odd"]
