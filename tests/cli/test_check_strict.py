"""``check --strict``: a receiver that only warns passes the check, and fails it when strict (CI)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from walletpass_tui.cli import main

SECRET = "whsec_" + base64.b64encode(b"k" * 24).decode()


async def checks_signatures_but_not_timestamps(request: web.Request) -> web.Response:
    """A receiver that verifies every v1 signature over the raw body, and never looks at how old
    the timestamp is: the check warns (old and future timestamps) and fails nothing."""
    body = await request.read()
    msg_id = request.headers.get("webhook-id")
    timestamp = request.headers.get("webhook-timestamp")
    signatures = request.headers.get("webhook-signature")
    if not (msg_id and timestamp and signatures):
        return web.Response(status=400, text="missing headers")
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    expected = "v1," + base64.b64encode(digest).decode()
    if any(hmac.compare_digest(entry, expected) for entry in signatures.split(" ")):
        return web.Response(status=204)
    return web.Response(status=401, text="bad signature")


async def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = await asyncio.to_thread(main, ["check", *argv, "--no-history"])
    return code, capsys.readouterr().out


async def test_warnings_pass_the_check_and_fail_it_when_strict(
    start_server: Any, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    server = await start_server()
    server.reply("POST", "/webhooks", checks_signatures_but_not_timestamps)
    url = server.url + "/webhooks"

    code, out = await check(capsys, url, "--secret", SECRET)
    assert code == 0
    assert "0 failed, 2 warnings: every must-pass case passed." in out

    code, out = await check(capsys, url, "--secret", SECRET, "--strict")
    assert code == 1
    assert "0 failed, 2 warnings: every must-pass case passed, but --strict fails" in out
    assert "warn old-timestamp" in out and "warn future-timestamp" in out

    code, out = await check(capsys, url, "--secret", SECRET, "--strict", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1 and doc["strict"] is True
    assert doc["passed"] is True and doc["counts"]["warn"] == 2 and doc["counts"]["fail"] == 0


async def test_strict_changes_nothing_for_a_receiver_without_warnings(
    start_server: Any, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    async def checks_timestamps_too(request: web.Request) -> web.Response:
        timestamp = request.headers.get("webhook-timestamp", "")
        if not timestamp.isdigit() or abs(int(timestamp) - time.time()) > 300:
            await request.read()
            return web.Response(status=400, text="stale")
        return await checks_signatures_but_not_timestamps(request)

    server = await start_server()
    server.reply("POST", "/webhooks", checks_timestamps_too)
    code, out = await check(capsys, server.url + "/webhooks", "--secret", SECRET, "--strict")
    assert code == 0, out
    assert "0 failed, 0 warnings: every must-pass case passed." in out
