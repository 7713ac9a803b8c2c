"""``events diff``: the body paths added, removed and changed between two attempts, and the
headers that differ, as text and as JSON; a message alone is its first attempt against its last."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import factories
import pytest
from query_helpers import body

from walletpass_tui.cli import main
from walletpass_tui.query.diff import diff
from walletpass_tui.webhooks.store import Store

FIRST = {"type": "pass.activated", "data": {"platform": "apple", "balance": 5, "tags": ["a"]}}
AGAIN = {
    "type": "pass.activated",
    "data": {"platform": "apple", "balance": 7, "tags": ["a", "b"], "tier": "gold\x1b[2J"},
}


def headers(ts: str) -> tuple[tuple[str, str], ...]:
    return (("Content-Type", "application/json"), ("webhook-timestamp", ts))


def test_paths_added_removed_and_changed_and_the_headers_that_differ() -> None:
    a = factories.attempt("msg_1", body(FIRST), headers=headers("100"))
    b = factories.attempt("msg_1", body(AGAIN), headers=headers("160"), attempt_no=2)
    found = diff(a, b)
    assert [(c.kind, c.name, c.was, c.now) for c in found.body] == [
        ("changed", "data.balance", ("5",), ("7",)),
        ("changed", "data.tags[]", ('"a"',), ('"a"', '"b"')),
        ("added", "data.tier", (), ('"gold\\u001b[2J"',)),
    ]
    assert [(c.name, c.was, c.now) for c in found.headers] == [
        ("webhook-timestamp", ("100",), ("160",))
    ]
    same = diff(a, factories.attempt("msg_1", json.dumps(FIRST, indent=2).encode()))
    assert not same.same_body and same.body == ()
    assert diff(factories.attempt("x", b"\xff"), factories.attempt("y", b"{}")).body[0].name == "$"


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_events_diff_on_the_command_line(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        await store.record(factories.attempt("msg_redo", body(FIRST), headers=headers("100")))
        await store.record(factories.attempt("msg_redo", body(AGAIN), headers=headers("160")))
        await store.record(factories.attempt("msg_other", body(FIRST), headers=headers("100")))
        await store.settled()

    code, out, err = await run(capsys, "events", "diff", "msg_re")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("--- msg_redo #1 ") and lines[1].startswith("+++ msg_redo #2 ")
    assert lines[2:] == [
        "body:",
        "  ~ data.balance: 5 -> 7",
        '  ~ data.tags[]: "a" -> "a", "b"',
        '  + data.tier: "gold\\u001b[2J"',
        "headers:",
        "  ~ webhook-timestamp: 100 -> 160",
    ]
    assert "\x1b" not in out

    code, out, _ = await run(capsys, "events", "diff", "msg_redo@1", "msg_other", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["a"]["attempt"] == 1 and doc["b"]["webhook_id"] == "msg_other"
    assert doc["body"] == {"same": True, "changes": []}
    assert doc["headers"] == []

    code, out, err = await run(capsys, "events", "diff", "msg_other")
    assert code == 2 and out == ""
    assert "msg_other has one attempt; name another" in err
    code, _, err = await run(capsys, "events", "diff", "msg_redo@9", "last")
    assert code == 1 and "msg_redo has no attempt #9 (it has 2)." in err
    code, _, err = await run(capsys, "events", "diff", "msg_redo@0", "last")
    assert code == 2 and "attempts are numbered from 1" in err


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """A real ``walletpass-tui`` process (the home: WALLETPASS_HOME, from clean_env)."""
    return subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        capture_output=True,
        text=True,
        timeout=60,  # "did not hang" only
    )


async def test_a_webhook_id_holding_an_at_sign_is_that_message(clean_env: Path) -> None:
    """A sender picks its webhook-ids: ``x@1`` is the message x@1, not attempt 1 of x; its
    attempt N is ``x@1@N``, and ``@N`` after an id no message has still names an attempt."""
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        for webhook_id, first, again in (("x@1", 1, 2), ("x", 3, 4)):
            for n in (first, again):
                raw = body({"type": "pass.activated", "data": {"a": n}})
                await store.record(factories.attempt(webhook_id, raw))
        await store.settled()

    alone = cli("events", "diff", "x@1")  # its first attempt against its last
    assert alone.returncode == 0, alone.stderr
    lines = alone.stdout.splitlines()
    assert lines[0].startswith("--- x@1 #1 ") and lines[1].startswith("+++ x@1 #2 ")
    assert "  ~ data.a: 1 -> 2" in lines

    both = cli("events", "diff", "x@1@2", "x@2", "--json")
    assert both.returncode == 0, both.stderr
    doc = json.loads(both.stdout)
    assert (doc["a"]["webhook_id"], doc["a"]["attempt"]) == ("x@1", 2)
    assert (doc["b"]["webhook_id"], doc["b"]["attempt"]) == ("x", 2)
    assert doc["body"]["changes"] == [
        {"kind": "changed", "name": "data.a", "was": ["2"], "now": ["4"]}
    ]

    missing = cli("events", "diff", "x@1@3")
    assert missing.returncode == 1 and "x@1 has no attempt #3 (it has 2)." in missing.stderr


def _body_lines(a: bytes, b: bytes) -> list[str]:
    from walletpass_tui.query.diff import diff_lines

    found = diff(factories.attempt("msg_n", a), factories.attempt("msg_n", b, attempt_no=2))
    return [line for kind, line in diff_lines(found) if kind not in ("a", "b")][:-1]


BIG = b'}, "pad": "' + b"x" * 70_000 + b'"}'  # past 64 KiB: read by the scanner, not json.loads


@pytest.mark.parametrize(
    ("was", "now", "shown"),
    [
        (b"1e999", b"2e999", "1e999 -> 2e999"),  # both infinite when read as numbers
        (b"100", b"1e2", "100 -> 1e2"),
        (b"-0", b"0", "-0 -> 0"),
        (b"1.0", b"1", "1.0 -> 1"),
        (b"NaN", b"-Infinity", "NaN -> -Infinity"),
    ],
)
@pytest.mark.parametrize("tail", [b"}}", BIG], ids=["small", "large"])
def test_a_changed_number_is_shown_as_each_body_wrote_it(
    was: bytes, now: bytes, shown: str, tail: bytes
) -> None:
    lines = _body_lines(
        b'{"data": {"balance": ' + was + tail, b'{"data": {"balance": ' + now + tail
    )
    assert lines == ["body:", f"  ~ data.balance: {shown}"]


def test_bodies_that_differ_only_in_writing_say_so_and_what_is_not_compared_is_named() -> None:
    same = "body: the same values as written (the bytes differ only in spacing, key order, "
    assert _body_lines(b'{"a": 1, "b": "A"}', b'{"b":"\\u0041","a":1}')[0].startswith(same)
    assert _body_lines(b'{"a": 1, "a": 2}', b'{"a": 2}')[0].startswith(same)  # the last one counts
    deep = [b"[" * 70 + n + b"]" * 70 for n in (b"1", b"2")]  # past the 64 levels read
    assert _body_lines(*deep) == [
        "body: the same values as far as they are read (the bytes differ; values nested deeper "
        "than 64 levels, under keys longer than 128 characters or past the first 4,096 are not "
        "compared)"
    ]


async def test_events_diff_names_a_changed_infinite_number(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await asyncio.to_thread(clean_env.mkdir, parents=True, exist_ok=True)
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        for balance in (b"1e999", b"2e999"):
            raw = b'{"type":"pass.activated","data":{"balance":' + balance + b"}}"
            await store.record(factories.attempt("msg_e", raw, headers=headers("100")))
        await store.settled()
    code, out, err = await run(capsys, "events", "diff", "msg_e")
    assert code == 0, err
    assert out.splitlines()[2:] == [
        "body:",
        "  ~ data.balance: 1e999 -> 2e999",
        "headers: the same",
    ]
    code, out, _ = await run(capsys, "events", "diff", "msg_e", "--json")
    assert json.loads(out)["body"]["changes"] == [
        {"kind": "changed", "name": "data.balance", "was": ["1e999"], "now": ["2e999"]}
    ]
