"""``events replay|export|prune|pending`` through ``main([...])`` on a history made here.

``main`` runs its own event loop, so it runs in a thread while the target app serves on this one.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from walletpass_tui.cli import main
from walletpass_tui.webhooks.models import DONE, GIVEN_UP, PENDING, REPLAY, VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import sign

SECRET = "whsec_" + base64.b64encode(b"c" * 32).decode()
HOUR_MS = 3600 * 1000


def body_for(pass_id: str) -> bytes:
    return f'{{"type": "pass.activated", "data": {{"passId": "{pass_id}"}}}}'.encode()


def make_attempt(msg_id: str, body: bytes, age_s: float = 0.0) -> Attempt:
    when = time.time() - age_s
    headers = sign(SECRET, msg_id, body, datetime.fromtimestamp(when, UTC))
    headers["content-type"] = "application/json"
    return Attempt(
        received_at_ms=int(when * 1000),
        method="POST",
        path="/webhooks",
        headers=tuple(headers.items()),
        body=body,
        verdict=VERIFIED,
        reason="verified",
        status=200,
        webhook_id=msg_id,
        topic="pass.activated",
    )


async def seed(home: Path, *attempts: Attempt, forward_to: tuple[str, ...] = ()) -> None:
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for a in attempts:
            await store.record(a, forward_to=forward_to)
        await store.settled()


async def history(home: Path, msg_id: str) -> list[Any]:
    async with await Store.open(home / "deliveries.sqlite3") as store:
        return await store.forwards_for_message(msg_id)


async def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def verifying_target(start_server: Any) -> Any:
    """The user's app: 200 when standardwebhooks verifies the request, else 400."""
    server = await start_server()

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            Webhook(SECRET).verify(body, dict(request.headers))
        except WebhookVerificationError as exc:
            return web.Response(status=400, text=f"rejected: {exc}")
        return web.Response(status=200, text="app says ok")

    server.reply("POST", "/hook", handle)
    return server


@pytest.fixture
def home(clean_env: Path) -> Path:
    return clean_env


async def test_replay_resign_is_verified_and_recorded(
    home: Path, start_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(home, make_attempt("msg_r", body_for("p1"), age_s=1000))
    app = await verifying_target(start_server)
    code, out, err = await cli(
        capsys, "events", "replay", "msg_r", "--to", app.url + "/hook", "--secret", SECRET
    )
    assert code == 0, err
    assert f"Replayed msg_r #1 (resign) to {app.url}/hook: 200" in out
    assert "app says ok" in out
    [got] = app.requests
    assert got.body == body_for("p1") and got.headers["webhook-id"] == "msg_r"
    assert abs(int(got.headers["webhook-timestamp"]) - time.time()) < 5
    [row] = await history(home, "msg_r")
    assert (row.kind, row.mode, row.status, row.state) == (REPLAY, "resign", 200, DONE)


async def test_replay_original_keeps_the_old_timestamp_and_fails_at_the_app(
    home: Path, start_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = make_attempt("msg_o", body_for("p2"), age_s=1000)
    await seed(home, stored)
    app = await verifying_target(start_server)
    code, out, _ = await cli(
        capsys, "events", "replay", "msg_o", "--to", app.url + "/hook", "--mode", "original",
        "--json",
    )  # fmt: skip
    assert code == 1  # the app refused the old timestamp
    data = json.loads(out)
    assert data["status"] == 400 and data["mode"] == "original"
    assert "too old" in data["response_body"].lower()
    [got] = app.requests
    assert got.body == stored.body
    assert got.headers["webhook-timestamp"] == stored.header("webhook-timestamp")


async def test_replay_edited_body_is_resigned(
    home: Path, start_server: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    await seed(home, make_attempt("msg_e", body_for("p3")))
    app = await verifying_target(start_server)
    edited = tmp_path / "edited.json"
    edited.write_bytes(body_for("EDITED"))
    code, out, err = await cli(
        capsys, "events", "replay", "msg_e", "--to", app.url + "/hook", "--secret", SECRET,
        "--body-file", str(edited),
    )  # fmt: skip
    assert code == 0, err
    assert "(edited, re-signed)" in out
    assert app.requests[0].body == body_for("EDITED")
    [row] = await history(home, "msg_e")
    assert row.mode == "edited" and row.request_body == body_for("EDITED")


async def test_replay_errors_exit_1_with_one_line(
    home: Path, start_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(home, make_attempt("msg_x", body_for("p4")))
    app = await verifying_target(start_server)
    code, _, err = await cli(capsys, "events", "replay", "msg_nope", "--to", app.url + "/hook")
    assert code == 1 and "No message 'msg_nope'" in err
    code, _, err = await cli(capsys, "events", "replay", "msg_x", "--to", app.url + "/hook")
    assert code == 1 and "secret" in err  # resign without a known secret
    code, _, err = await cli(
        capsys, "events", "replay", "msg_x", "--to", app.url + "/hook", "--attempt", "5"
    )
    assert code == 1 and "no attempt #5" in err
    assert app.requests == []
    code, _, err = await cli(capsys, "events", "replay", "msg_x")
    assert code == 2 and "--to" in err


async def test_export_jsonl_and_curl(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = make_attempt("msg_bin", b"\xff\xfe not utf-8")
    await seed(home, make_attempt("msg_1", body_for("a")), binary, make_attempt("msg_2", b"{}"))
    code, out, err = await cli(capsys, "events", "export")
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["webhook_id"] for r in records] == ["msg_1", "msg_bin", "msg_2"]  # oldest first
    assert records[0]["body"] == body_for("a").decode()
    assert base64.b64decode(records[1]["body_base64"]) == b"\xff\xfe not utf-8"

    code, out, _ = await cli(capsys, "events", "export", "--limit", "2")
    assert [json.loads(line)["webhook_id"] for line in out.splitlines()] == ["msg_bin", "msg_2"]

    code, out, _ = await cli(
        capsys, "events", "export", "--format", "curl", "--webhook-id", "msg_1", "--to",
        "http://127.0.0.1:9/hook",
    )  # fmt: skip
    assert code == 0
    [line] = out.splitlines()
    assert line.startswith("curl ") and "http://127.0.0.1:9/hook" in line
    assert "webhook-id: msg_1" in line

    code, out, err = await cli(capsys, "events", "export", "--webhook-id", "msg_none")
    assert code == 0 and out == "" and "No attempts match" in err


async def test_prune_older_than(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await seed(
        home,
        make_attempt("msg_old", b"{}", age_s=3 * 3600),
        make_attempt("msg_new", b"{}"),
        forward_to=("http://127.0.0.1:9/hook",),
    )
    code, out, err = await cli(capsys, "events", "prune", "--older-than", "2h")
    assert code == 0, err
    assert "Removed 1 attempt(s) older than 2 h." in out
    async with await Store.open(home / "deliveries.sqlite3") as store:
        assert await store.message_attempts("msg_old") == []
        assert len(await store.message_attempts("msg_new")) == 1
        assert await store.forwards_for_message("msg_old") == []  # its forward went with it
        assert await store.pending_forward_count() == 1

    code, _, err = await cli(capsys, "events", "prune", "--older-than", "soon")
    assert code == 2 and "neither a duration nor" in err


async def test_list_on_a_fresh_home_is_an_empty_history(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script reading ``events list --json`` before anything arrived gets [] and exit 0."""
    code, out, err = await cli(capsys, "events", "list", "--json")
    assert (code, json.loads(out), err) == (0, [], "")
    code, out, err = await cli(capsys, "events", "list", "--verdict", "rejected", "--json")
    assert (code, json.loads(out)) == (0, [])
    code, out, err = await cli(capsys, "events", "list")
    assert (code, out, err) == (0, "No deliveries yet.\n", "")
    assert not (home / "deliveries.sqlite3").exists()  # listing creates no history
    await seed(home, make_attempt("msg_one", body_for("pass_1")))
    code, out, _ = await cli(capsys, "events", "list", "--search", "nothing-like-it")
    assert (code, out) == (0, "No messages match.\n")


async def test_prune_without_history_says_so(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await cli(capsys, "events", "prune", "--older-than", "1d")
    assert code == 1 and "No history yet" in err


async def test_pending_lists_and_gives_up(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await seed(
        home,
        make_attempt("msg_p1", b"{}"),
        make_attempt("msg_p2", b"{}"),
        forward_to=("http://127.0.0.1:9/hook", "http://127.0.0.1:10/other"),
    )
    code, out, _ = await cli(capsys, "events", "pending")
    assert code == 0
    assert "4 forward(s) pending:" in out
    assert "2  http://127.0.0.1:9/hook" in out and "2  http://127.0.0.1:10/other" in out

    code, out, _ = await cli(capsys, "events", "pending", "--target", "http://127.0.0.1:10/other")
    assert code == 0 and "2 forward(s) pending:" in out and "9/hook" not in out
    code, out, _ = await cli(capsys, "events", "pending", "--target", "http://elsewhere/")
    assert code == 0 and "No forwards pending to http://elsewhere/." in out

    code, out, _ = await cli(
        capsys, "events", "pending", "--give-up", "--target", "http://127.0.0.1:10/other"
    )
    assert code == 0 and "Gave up on 2 pending forward(s)" in out

    code, out, _ = await cli(capsys, "events", "pending", "--give-up")
    assert code == 0 and "Gave up on 2 pending forward(s)" in out
    [row, _] = await history(home, "msg_p1")
    assert row.state == GIVEN_UP and row.state != PENDING

    code, out, _ = await cli(capsys, "events", "pending")
    assert code == 0 and "No forwards pending." in out


def start_listen() -> subprocess.Popen[str]:
    """A real ``listen`` on this test's home, once it is ready."""
    listen = subprocess.Popen(
        [sys.executable, "-m", "walletpass_tui", "listen", "--port", "0", "--json"],
        env=os.environ.copy(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert listen.stderr is not None
    while not listen.stderr.readline().startswith("History:"):
        if listen.poll() is not None:
            raise AssertionError("listen ended")
    return listen


async def test_pending_beside_a_running_receiver_says_it_runs(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "they go out when listen runs" while one does: it says the receiver running here
    retries them if it forwards."""
    await seed(home, make_attempt("msg_p1", b"{}"), forward_to=("http://127.0.0.1:9/hook",))
    code, out, _ = await cli(capsys, "events", "pending")
    assert code == 0 and "They go out when 'walletpass-tui listen --forward-to" in out
    listen = await asyncio.to_thread(start_listen)
    try:
        code, out, _ = await cli(capsys, "events", "pending")
    finally:
        listen.kill()
        await asyncio.to_thread(listen.wait, 30)
    assert code == 0 and "1 forward(s) pending:" in out
    assert "A receiver runs on this home: it is retrying them if it was started with" in out
    assert "They go out when" not in out


async def test_events_show_escapes_bidi_zero_width_and_escapes(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = '{"type": "pass.activated", "note": "pay\u202eusd\u200b\x1b[2J\u2028end"}'.encode()
    await seed(home, make_attempt("msg_bidi", body))
    code, out, err = await cli(capsys, "events", "show", "msg_bidi")
    assert code == 0, err
    assert "pay\\u202eusd\\u200b\\x1b[2J\\u2028end" in out
    for raw in ("\u202e", "\u200b", "\x1b", "\u2028"):
        assert raw not in out


async def test_events_show_says_the_verdict_once_and_json_has_the_one_attempt_shape(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(home, make_attempt("msg_once", body_for("p9")))
    code, out, err = await cli(capsys, "events", "show", "msg_once")
    assert code == 0, err
    [line] = [line for line in out.splitlines() if "verdict:" in line]
    assert line.split() == ["verdict:", "verified"]  # not "verified: verified"
    code, out, _ = await cli(capsys, "events", "show", "msg_once", "--json")
    [shown] = json.loads(out)["attempts"]
    code, out, _ = await cli(capsys, "events", "export", "--webhook-id", "msg_once")
    exported = json.loads(out)
    # One shape, whichever command prints it; events show adds the drift the schema learner
    # found in each attempt (none here: nothing was learned).
    assert shown.pop("drift") == []
    assert shown == exported
    assert shown["body_differs"] is False and shown["topic"] == "pass.activated"
