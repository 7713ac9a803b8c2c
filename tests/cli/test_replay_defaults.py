"""``events replay`` asks for nothing the history knows: it goes where the delivery was forwarded
(per topic), else where its topic last went, and re-signs with the secret that verified it, found
again among the known secrets by the signature the delivery came with (never stored)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from walletpass_tui.cli import main
from walletpass_tui.webhooks import home_secret
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import sign

ONE = "whsec_" + base64.b64encode(b"1" * 32).decode()
TWO = "whsec_" + base64.b64encode(b"2" * 32).decode()


def delivery(msg_id: str, topic: str, secret: str, age_s: float = 0) -> Attempt:
    body = json.dumps({"type": topic, "data": {"passId": msg_id}}).encode()
    when = time.time() - age_s
    headers = sign(secret, msg_id, body, datetime.fromtimestamp(when, UTC))
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
        topic=topic,
    )


async def seed(home: Path, *items: tuple[Attempt, tuple[str, ...]]) -> None:
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for attempt, forward_to in items:
            await store.record(attempt, forward_to=forward_to)
        await store.settled()


class App:
    """Your app: verifies with ``secret``, says which path got what."""

    def __init__(self, server: Any, secret: str) -> None:
        self.server = server
        self.got: list[tuple[str, str]] = []  # (path, "verified" | "forged")
        hook = Webhook(secret)

        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            try:
                hook.verify(body, {k.lower(): v for k, v in request.headers.items()})
            except WebhookVerificationError:
                self.got.append((request.path, "forged"))
                return web.Response(status=401)
            self.got.append((request.path, "verified"))
            return web.Response(status=204)

        for path in ("/a", "/b"):
            server.reply("POST", path, handle)

    def url(self, path: str) -> str:
        return str(self.server.url) + path


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_replay_goes_where_each_topic_was_forwarded_signed_as_it_came(
    clean_env: Path, capsys: pytest.CaptureFixture[str], start_server: Any
) -> None:
    test_secret = home_secret.load_or_create(clean_env)
    app = App(await start_server(), test_secret)
    await seed(
        clean_env,
        (delivery("msg_act", "pass.activated", test_secret, 20), (app.url("/a"),)),
        (delivery("msg_deact", "pass.deactivated", test_secret, 10), (app.url("/b"),)),
    )
    code, out, err = await run(capsys, "events", "replay", "msg_act")
    assert code == 0, err
    assert f"to {app.url('/a')}: 204" in out
    code, out, err = await run(capsys, "events", "replay", "last")
    assert code == 0, err
    assert app.got == [("/a", "verified"), ("/b", "verified")]
    assert test_secret not in out + err


async def test_without_a_forward_it_goes_where_its_topic_last_went(
    clean_env: Path, capsys: pytest.CaptureFixture[str], start_server: Any
) -> None:
    test_secret = home_secret.load_or_create(clean_env)
    app = App(await start_server(), test_secret)
    await seed(
        clean_env,
        (delivery("msg_1", "pass.activated", test_secret, 30), (app.url("/a"),)),
        (delivery("msg_2", "pass.deactivated", test_secret, 20), (app.url("/b"),)),
        (delivery("msg_3", "pass.activated", test_secret, 10), ()),  # received while not forwarding
    )
    code, out, err = await run(capsys, "events", "replay", "msg_3", "--json")
    assert code == 0, err
    assert json.loads(out)["target"] == app.url("/a")
    assert app.got == [("/a", "verified")]


async def test_the_secret_that_verified_it_is_found_among_several(
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
    start_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = App(await start_server(), TWO)
    await seed(clean_env, (delivery("msg_two", "pass.activated", TWO), (app.url("/a"),)))
    monkeypatch.setenv("WALLETPASS_SECRET", f"{ONE} {TWO}")  # the second signed it
    code, _, err = await run(capsys, "events", "replay", "last")
    assert code == 0, err
    assert app.got == [("/a", "verified")]


async def test_a_secret_given_as_a_flag_is_used_as_given(
    clean_env: Path, capsys: pytest.CaptureFixture[str], start_server: Any, tmp_path: Path
) -> None:
    """To see what your app does with a wrong signature: the flag wins over the one found."""
    app = App(await start_server(), TWO)
    await seed(clean_env, (delivery("msg_two", "pass.activated", TWO), (app.url("/a"),)))
    other = tmp_path / "other-secret"
    other.write_text(ONE)
    other.chmod(0o600)
    code, _, _ = await run(capsys, "events", "replay", "last", "--secret-file", str(other))
    assert code == 1
    assert app.got == [("/a", "forged")]


@pytest.mark.parametrize(
    ("forward_to", "fragment"),
    [
        ((), "Give --to URL: msg_x was not forwarded, no delivery of its topic was, and no"),
        (("http://127.0.0.1:9/a", "http://127.0.0.1:9/b"), "was forwarded to 2 targets"),
    ],
)
async def test_when_the_history_cannot_say_where_it_asks(
    clean_env: Path, capsys: pytest.CaptureFixture[str], forward_to: tuple[str, ...], fragment: str
) -> None:
    await seed(clean_env, (delivery("msg_x", "pass.activated", ONE), forward_to))
    code, _, err = await run(capsys, "events", "replay", "last")
    assert code == 2 and fragment in err and err.count("\n") == 1


async def test_no_known_secret_made_its_signature(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, (delivery("msg_x", "pass.activated", ONE), ("http://127.0.0.1:9/a",)))
    code, _, err = await run(capsys, "events", "replay", "last")
    assert code == 1
    assert "Re-signing msg_x #1 needs the secret that verified it" in err
    assert "--mode original" in err
