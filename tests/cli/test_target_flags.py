"""The flags that add headers and trust certificates, refused as usage errors before anything is
sent or bound (``listen``, the dashboard, ``events replay``, ``check``), and ``events replay``
against a real app on 127.0.0.1: the headers it adds, an https app with its own CA.

``main`` runs in this thread; the app serves on a thread of its own (tests/user_app.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from peers import LocalCA, local_ca_fixture  # noqa: F401  (the "local_ca" fixture)
from standardwebhooks.webhooks import Webhook
from user_app import UserApp, user_app_fixture  # noqa: F401  (the "user_app" fixture)

from walletpass_tui.cli import main
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import sign

SECRET = "whsec_" + base64.b64encode(b"r" * 32).decode()
TOKEN_VALUE = "app-token-5f2c9e0b7d41a8c3"
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_0001"}}'
StartApp = Callable[..., UserApp]

# Each command with where its header flag goes (a URL nothing listens on: nothing may be sent).
NOWHERE = "http://127.0.0.1:9/hook"
COMMANDS = {
    "listen": ["listen", "--port", "0", "--forward-to", NOWHERE, "--header"],
    "dashboard": ["--port", "0", "--forward-to", NOWHERE, "--header"],
    "replay": ["events", "replay", "msg_x", "--to", NOWHERE, "--header"],
    "check": ["check", NOWHERE, "--secret", SECRET, "--header"],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("webhook-signature: v1,Zm9yZ2VkLXNpZ25hdHVyZQ==", "delivery's own webhook-* headers"),
        ("Webhook-Id: msg_forged_elsewhere", "delivery's own webhook-* headers"),
        ("Content-Length: 99999", "written by the HTTP client"),
        ("Host: evil.example", "written by the HTTP client"),
        ("Transfer-Encoding: chunked", "written by the HTTP client"),
        ("Connection: upgrade", "written by the HTTP client"),
        ("X-Note: a\r\nX-Injected: smuggled", "CR, LF or NUL"),
        ("X-Note: a\nX-Injected: smuggled", "CR, LF or NUL"),
        ("X-Note: a\x00smuggled", "CR, LF or NUL"),
        ("X Note: smuggled", "is not a header name"),
        ("Bearer smuggled-token", "'Name: value'"),
    ],
)
def test_a_header_that_cannot_be_sent_is_a_usage_error(
    clean_env: Path, capsys: pytest.CaptureFixture[str], command: str, header: str, reason: str
) -> None:
    code, _, err = run(capsys, *COMMANDS[command], header)
    assert code == 2
    assert reason in err
    assert "argument -H/--header:" in err
    assert "smuggled" not in err and "forged" not in err and "evil" not in err  # never the value
    assert not (clean_env / "deliveries.sqlite3").exists()  # nothing ran


@pytest.mark.parametrize("command", ["listen", "dashboard"])
@pytest.mark.parametrize(
    "flags",
    [["--header", "Authorization: Bearer x"], ["--insecure"], ["--ca-bundle", "ca.pem"]],
)
def test_forwarding_flags_without_a_forward_to_are_a_usage_error(
    clean_env: Path, capsys: pytest.CaptureFixture[str], command: str, flags: list[str]
) -> None:
    argv = ["listen", "--port", "0"] if command == "listen" else ["--port", "0"]
    code, _, err = run(capsys, *argv, *flags)
    assert code == 2
    assert f"{flags[0]} applies to forwards: give a --forward-to URL too." in err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_ca_bundle_that_is_missing_or_not_pem_is_refused_at_start(
    clean_env: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    argv = COMMANDS[command][:-1]
    code, _, err = run(capsys, *argv, "--ca-bundle", str(tmp_path / "missing.pem"))
    assert (code, err.count("\n")) == (2, 1)
    assert f"--ca-bundle {tmp_path / 'missing.pem'}: no such file" in err
    not_pem = tmp_path / "key.pem"
    not_pem.write_text("-----BEGIN PRIVATE KEY-----\nMIGHAgEA\n-----END PRIVATE KEY-----\n")
    code, _, err = run(capsys, *argv, "--ca-bundle", str(not_pem))
    assert (code, err.count("\n")) == (2, 1)
    assert "holds no PEM certificate" in err
    code, _, err = run(capsys, *argv, "--ca-bundle", str(not_pem), "--insecure")
    assert code == 2 and "not allowed with argument" in err


# -- events replay against a real app ---------------------------------------------------------------


def seed(home: Path, msg_id: str) -> None:
    when = time.time() - 30
    headers = sign(SECRET, msg_id, BODY, datetime.fromtimestamp(when, UTC))
    headers["content-type"] = "application/json"
    attempt = Attempt(
        received_at_ms=int(when * 1000),
        method="POST",
        path="/webhooks",
        headers=tuple(headers.items()),
        body=BODY,
        verdict=VERIFIED,
        reason="verified",
        status=200,
        webhook_id=msg_id,
        topic="pass.activated",
    )

    async def record() -> None:
        async with await Store.open(home / "deliveries.sqlite3") as store:
            await store.record(attempt)
            await store.settled()

    home.mkdir(parents=True, exist_ok=True)
    asyncio.run(record())


def test_replay_adds_the_headers_and_shows_them_masked(
    clean_env: Path, capsys: pytest.CaptureFixture[str], user_app: StartApp
) -> None:
    seed(clean_env, "msg_replay")
    app = user_app(answers=[b"replayed fine"])
    code, out, err = run(
        capsys,
        *("events", "replay", "msg_replay", "--to", app.url, "--secret", SECRET, "--json"),
        *("--header", f"Authorization: Bearer {TOKEN_VALUE}"),
        *("--header", "X-Twice: one", "--header", "X-Twice: two"),
    )
    assert code == 0, err
    [seen] = app.seen
    assert seen.values("Authorization") == [f"Bearer {TOKEN_VALUE}"]
    assert seen.values("X-Twice") == ["one", "two"]
    assert seen.values("webhook-id") == ["msg_replay"]
    Webhook(SECRET).verify(seen.body, dict(seen.headers))
    shown = json.loads(out)
    assert shown["headers_added"] == [
        ["Authorization", "Bearer …a8c3"],
        ["X-Twice", "…"],
        ["X-Twice", "…"],
    ]
    assert shown["response_body"] == "replayed fine"
    assert TOKEN_VALUE not in out + err


@pytest.mark.parametrize("how", ["default", "ca-bundle", "insecure"])
def test_replay_to_an_https_app_with_its_own_ca(
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
    user_app: StartApp,
    local_ca: LocalCA,
    how: str,
) -> None:
    seed(clean_env, "msg_tls")
    app = user_app(tls=local_ca.leaf.server_context())
    flags = {
        "default": [],
        "ca-bundle": ["--ca-bundle", str(local_ca.ca)],
        "insecure": ["--insecure"],
    }
    code, out, err = run(
        capsys, "events", "replay", "msg_tls", "--to", app.url, "--secret", SECRET, *flags[how]
    )
    warnings = [line for line in err.splitlines() if "--insecure:" in line]
    if how == "default":
        assert code == 1 and app.seen == []
        assert err == (
            f"Replay of msg_tls to {app.url} failed: the certificate of 127.0.0.1 is not trusted "
            "(self-signed or unknown CA): pass --ca-bundle FILE with your CA, or --insecure\n"
        )
    else:
        assert code == 0, err
        assert out.startswith(f"Replayed msg_tls #1 (resign) to {app.url}: 200 in ")
        assert len(app.seen) == 1
    expected = [f"warning: --insecure: certificates are not verified for {app.url}"]
    assert warnings == (expected if how == "insecure" else [])


# -- the dashboard --------------------------------------------------------------------------------


def test_the_dashboards_flags_reach_its_forwards(
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    user_app: StartApp,
    local_ca: LocalCA,
) -> None:
    """``walletpass-tui --forward-to URL --header ... --ca-bundle ...``: the dashboard's own
    runtime forwards a delivery to an https app with its own CA, the header added. The screen is
    left out (its run is replaced by the forward); the screens are in tests/ui."""
    from walletpass_tui.runtime.local import DeliveryRuntime
    from walletpass_tui.ui.app import WalletPassApp

    app = user_app(tls=local_ca.leaf.server_context())

    async def headless(self: WalletPassApp, **_: object) -> None:
        runtime = self.parts.runtime
        assert isinstance(runtime, DeliveryRuntime)
        await runtime.serve()
        headers = sign(SECRET, "msg_dashboard", BODY, datetime.now(UTC))
        async with httpx.AsyncClient(trust_env=False) as client:
            answer = await client.post(str(runtime.url), content=BODY, headers=headers)
        assert answer.status_code == 200
        deadline = time.monotonic() + 30
        while not app.seen:
            assert time.monotonic() < deadline, "the forward did not arrive"
            await asyncio.sleep(0.02)

    monkeypatch.setattr(WalletPassApp, "run_async", headless)
    code, _, err = run(
        capsys,
        *("--port", "0", "--secret", SECRET, "--forward-to", app.url),
        *("--header", f"Authorization: Bearer {TOKEN_VALUE}"),
        *("--ca-bundle", str(local_ca.ca)),
    )
    assert code == 0, err
    [seen] = app.seen
    assert seen.values("Authorization") == [f"Bearer {TOKEN_VALUE}"]
    assert seen.values("webhook-id") == ["msg_dashboard"]


def test_the_dashboard_warns_once_before_it_starts_when_insecure(
    clean_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from walletpass_tui.ui.app import WalletPassApp

    async def headless(self: WalletPassApp, **_: object) -> None:
        return None

    monkeypatch.setattr(WalletPassApp, "run_async", headless)
    targets = (
        "https://127.0.0.1:9/a",
        "pass.activated=https://127.0.0.1:9/a",
        "http://127.0.0.1:9/b",
    )
    flags = [arg for target in targets for arg in ("--forward-to", target)]
    code, _, err = run(capsys, "--port", "0", *flags, "--insecure")
    assert code == 0, err
    assert err.splitlines() == [
        "warning: --insecure: certificates are not verified for https://127.0.0.1:9/a"
    ]
