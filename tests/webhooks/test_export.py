"""Exports: curl commands run with bash against a local server reproduce the exact bytes; JSON Lines."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from typing import Any

import pytest

from walletpass_tui.webhooks.export import to_curl, to_jsonl
from walletpass_tui.webhooks.models import VERIFIED, Attempt

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")

HEADERS = (
    ("Host", "example.test"),
    ("Content-Length", "999"),
    ("webhook-id", "msg_'quoted'"),
    ("webhook-timestamp", "1700000000"),
    ("webhook-signature", "v1,abc+/= v1,$(touch pwned)"),
    ("content-type", "application/json; charset=utf-8"),
    ("X-Note", "it's `here` & $HOME"),
    ("Accept-Encoding", "gzip"),
)

BODIES = {
    "json": b'{"type": "pass.activated", "data": {"passId": "pass_0001"}}',
    "non_utf8": b"\xff\xfe\x00\x01binary \x80\xc3(",
    "single_quotes": b"{\"note\": \"it's Bob's pass ''\"}",
    "newlines": b'{\n  "a": 1,\r\n  "b": "two\\nlines"\n}\n\n',
    "shell": b'{"x": "$(touch pwned)", "y": "`touch pwned`", "z": "${HOME} \\\\ !! \\" %s %n"}',
    "nul_in_utf8": b'{"a": "\x00"}',
    "leading_at": b"@/etc/hostname",
    "leading_dash": b"-X GET",
    "unicode": '{"name": "Zoë 🎟"}'.encode(),
    "empty": b"",
    "terminal_escapes": '{"a": "\x1b[2J\x1b]0;pwned\x07", "b": "\u202e\u200b\r"}'.encode(),
}

# What must never reach a terminal that prints the exported commands.
UNSAFE = ["\x1b", "\x07", "\r", "\u202e", "\u200b", "\x00"]


def attempt(body: bytes, headers: tuple[tuple[str, str], ...] = HEADERS) -> Attempt:
    return Attempt(
        received_at_ms=1_700_000_000_000,
        method="POST",
        path="/webhooks",
        headers=headers,
        body=body,
        verdict=VERIFIED,
        reason="verified",
        status=200,
        webhook_id="msg_1",
        topic="pass.activated",
        id=7,
        attempt_no=1,
    )


async def run_bash(command: str, cwd: Any) -> tuple[int, bytes, bytes]:
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=10)
    assert proc.returncode is not None
    return proc.returncode, out, err


@pytest.mark.parametrize("name", list(BODIES))
async def test_curl_command_reproduces_the_exact_bytes_and_headers(
    name: str, start_server: Any, tmp_path: Any
) -> None:
    server = await start_server()
    server.answer("POST", "/in", status=204)
    body = BODIES[name]
    command = to_curl(attempt(body), server.url + "/in")
    assert not [ch for ch in UNSAFE if ch in command], "the command is safe to print"
    code, _, err = await run_bash(command, tmp_path)
    assert code == 0, err
    [got] = server.requests
    assert got.method == "POST" and got.path == "/in"
    assert got.body == body
    assert got.headers["webhook-id"] == "msg_'quoted'"
    assert got.headers["webhook-timestamp"] == "1700000000"
    assert got.headers["webhook-signature"] == "v1,abc+/= v1,$(touch pwned)"
    assert got.headers.getall("content-type") == ["application/json; charset=utf-8"]
    assert got.headers["X-Note"] == "it's `here` & $HOME"
    assert got.headers["Host"] != "example.test"  # transport headers are curl's own
    assert got.headers["Content-Length"] == str(len(body))
    assert not (tmp_path / "pwned").exists()


async def test_header_values_with_control_characters_travel_as_base64(
    start_server: Any, tmp_path: Any
) -> None:
    server = await start_server()
    server.answer("POST", "/in", status=204)
    headers = (("webhook-id", "msg_\u202ered"), ("webhook-timestamp", "1"))
    command = to_curl(attempt(b"{}", headers), server.url + "/in")
    assert "\u202e" not in command
    assert "\x1b" not in to_curl(attempt(b"{}", (("x-odd", "a\x1b[2Jb"),)), server.url)
    code, _, err = await run_bash(command, tmp_path)
    assert code == 0, err
    [got] = server.requests
    assert "red" in got.headers["webhook-id"] and got.headers["webhook-timestamp"] == "1"


async def test_curl_without_content_type_sends_none(start_server: Any, tmp_path: Any) -> None:
    server = await start_server()
    server.answer("POST", "/in", status=200)
    headers = (("webhook-id", "msg_2"), ("X-Empty", ""))
    code, _, err = await run_bash(
        to_curl(attempt(b"a=1&b=2", headers), server.url + "/in"), tmp_path
    )
    assert code == 0, err
    [got] = server.requests
    assert got.body == b"a=1&b=2"
    assert "content-type" not in got.headers  # curl must not invent a form type
    assert got.headers["webhook-id"] == "msg_2"
    assert got.headers.get("X-Empty") == ""  # an empty header is sent, not dropped


def test_jsonl_has_body_text_when_utf8_else_base64() -> None:
    text = json.loads(to_jsonl(attempt(BODIES["unicode"])))
    assert text["body"] == '{"name": "Zoë 🎟"}'
    assert base64.b64decode(text["body_base64"]) == BODIES["unicode"]
    assert text["webhook_id"] == "msg_1" and text["id"] == 7 and text["attempt"] == 1
    assert text["topic"] == "pass.activated" and text["verdict"] == VERIFIED
    assert ["webhook-id", "msg_'quoted'"] in text["headers"]
    assert text["body_truncated"] is False

    binary = json.loads(to_jsonl(attempt(BODIES["non_utf8"])))
    assert binary["body"] is None
    assert base64.b64decode(binary["body_base64"]) == BODIES["non_utf8"]

    line = to_jsonl(attempt(BODIES["newlines"]))
    assert "\n" not in line  # one record per line
    assert json.loads(line)["body"].encode() == BODIES["newlines"]
