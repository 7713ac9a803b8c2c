"""What forwards and replays carry beyond the delivery: headers the user adds (after the
delivery's own, never replacing one; given twice, sent twice) and the certificates an https app may
present (its own CA, or none verified). A real app on 127.0.0.1 records what it received; the
https one has a certificate signed by a CA the test made.

The flags that build these options, the masking and the warning are in
tests/cli/test_forward_flags.py.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from forward_helpers import (
    SECRET,
    Env,
    body_for,
    eventually,
    forward_env,  # noqa: F401  (the "env" fixture)
    signed,
)
from peers import LocalCA, local_ca_fixture  # noqa: F401  (the "local_ca" fixture)
from standardwebhooks.webhooks import Webhook
from user_app import UserApp, user_app_fixture  # noqa: F401  (the "user_app" fixture)

from walletpass_tui.errors import UsageError, WalletpassError
from walletpass_tui.webhooks.forward import Forwarder, Route, parse_route, replay
from walletpass_tui.webhooks.models import DONE, ORIGINAL, RESIGN, VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.target_options import (
    CA_BUNDLE_MAX,
    HeaderError,
    TargetOptions,
    Trust,
    masked_value,
    parse_header,
    read_ca_bundle,
    shown,
)

TOKEN = "Bearer app-token-5f2c9e0b7d41a8c3"
ADDED = (
    ("Authorization", TOKEN),
    ("X-Twice", "one"),
    ("X-Twice", "two"),
    ("User-Agent", "my-tests/1.0"),
)
KEPT = ("webhook-id", "webhook-timestamp", "webhook-signature", "content-type")
UNTRUSTED = (
    "the certificate of 127.0.0.1 is not trusted (self-signed or unknown CA): "
    "pass --ca-bundle FILE with your CA, or --insecure"
)
StartApp = Callable[..., UserApp]


async def _forward_one(env: Env, route: Route, msg_id: str) -> tuple[dict[str, str], bytes]:
    """Post a signed delivery to a receiver forwarding along ``route``; (its headers, body) once
    the forward is answered or has failed at least once."""
    receiver = await env.receiver([route])
    body = body_for("pass.activated")
    headers = signed(msg_id, body)
    answer = await env.client.post(receiver.url, content=body, headers=headers)
    assert answer.status_code == 200

    async def tried() -> bool:
        rows = await env.store.forwards_for_message(msg_id)
        return bool(rows) and (rows[0].state == DONE or rows[0].tries > 0)

    await eventually(tried, timeout=30)
    return headers, body


# -- headers ---------------------------------------------------------------------------------------


async def test_a_forward_carries_the_added_headers_after_the_deliverys_own(
    env: Env, user_app: StartApp
) -> None:
    app = user_app()
    route = parse_route(app.url, TargetOptions(headers=ADDED))
    headers, body = await _forward_one(env, route, "msg_added")
    [seen] = await asyncio.to_thread(app.wait_for, 1)
    assert seen.values("Authorization") == [TOKEN]
    assert seen.values("X-Twice") == ["one", "two"]  # given twice, sent twice, in order
    assert seen.values("User-Agent") == ["my-tests/1.0"]  # replaces walletpass-tui's own
    for name in KEPT:  # the delivery's own, each once and unchanged
        assert seen.values(name) == [headers[name]], name
    assert seen.body == body
    Webhook(SECRET).verify(seen.body, dict(seen.headers))  # the app still verifies it
    names = [n.lower() for n, _ in seen.headers]
    assert names.index("authorization") > names.index("webhook-signature")


async def test_a_target_only_an_earlier_run_queued_gets_no_added_header(
    env: Env, user_app: StartApp
) -> None:
    """Headers are given for the targets named now: a forward another run left queued for another
    target goes there without them (it may be someone else's app)."""
    named, other = user_app(), user_app(status=503)
    await _forward_one(env, Route(other.url), "msg_queued")
    await env.shutdown()  # the earlier run ends with the forward still pending
    other.status = 200
    forwarder = Forwarder(env.store, [parse_route(named.url, TargetOptions(headers=ADDED))])
    env.forwarders.append(forwarder)
    await forwarder.start()

    async def delivered() -> bool:
        rows = await env.store.forwards_for_message("msg_queued")
        return rows[0].state == DONE

    await eventually(delivered, timeout=30)
    assert all(not s.values("Authorization") for s in other.seen)
    assert other.seen[-1].values("webhook-id") == ["msg_queued"]


async def _stored(store: Store, msg_id: str) -> Attempt:
    body = body_for("pass.activated", "pass_0042")
    headers = signed(msg_id, body, ts=datetime.fromtimestamp(time.time() - 60, UTC))
    return await store.record(
        Attempt(
            received_at_ms=int((time.time() - 60) * 1000),
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
    )


@pytest.mark.parametrize("mode", [RESIGN, ORIGINAL])
async def test_a_replay_carries_the_added_headers(env: Env, user_app: StartApp, mode: str) -> None:
    app = user_app()
    attempt = await _stored(env.store, f"msg_replay_{mode}")
    result = await replay(
        env.store, attempt, app.url, mode=mode, secret=SECRET, options=TargetOptions(ADDED)
    )
    assert result.status == 200
    [seen] = app.seen
    assert seen.values("Authorization") == [TOKEN]
    assert seen.values("X-Twice") == ["one", "two"]
    assert seen.values("webhook-id") == [attempt.webhook_id]
    assert len(seen.values("webhook-signature")) == 1
    Webhook(SECRET).verify(seen.body, dict(seen.headers))


@pytest.mark.parametrize(
    "text",
    [
        "webhook-signature: v1,Zm9yZ2Vk",
        "Webhook-Id: msg_other",
        "WEBHOOK-TIMESTAMP: 1",
        "Content-Length: 0",
        "Host: evil.example",
        "Transfer-Encoding: chunked",
        "Connection: close",
        "Content-Type: text/plain",
    ],
)
def test_a_header_that_would_replace_the_requests_own_is_refused(text: str) -> None:
    name, _, value = text.partition(": ")
    with pytest.raises(HeaderError) as info:
        parse_header(text)
    assert name in str(info.value)
    assert value not in str(info.value)  # the value is never repeated


@pytest.mark.parametrize(
    "text",
    [
        "X-A: one\r\nX-Injected: two",
        "X-A: one\nX-Injected: two",
        "X-A: one\rtwo",
        "X-A: one\x00two",
        "X-A: bell\x07",
        "Bad Name: x",
        "Bad:Name: x",  # the first colon ends the name: 'Bad' is valid, the value is 'Name: x'
        ": no name",
        "Authorization Bearer s3cret-without-a-colon",
        "X-A: caf\u00e9",
        "X-" + "n" * 255 + ": a name longer than 256 characters",
    ],
)
def test_a_header_that_cannot_be_sent_as_given_is_refused(text: str) -> None:
    if text == "Bad:Name: x":
        assert parse_header(text) == ("Bad", "Name: x")
        return
    with pytest.raises(HeaderError) as info:
        parse_header(text)
    message = str(info.value)
    assert "\r" not in message and "\n" not in message and "\x00" not in message
    assert "s3cret" not in message


def test_a_tab_inside_a_value_is_sent_as_rfc_9110_allows() -> None:
    assert parse_header("X-A: \tone\ttwo \t") == ("X-A", "one\ttwo")
    assert parse_header("X-" + "n" * 254 + ": v")[0] == "X-" + "n" * 254


def test_a_header_value_is_shown_masked() -> None:
    assert masked_value(TOKEN) == "Bearer …a8c3"
    assert masked_value("short") == "…"
    assert masked_value("") == ""
    said = shown(ADDED)
    assert "app-token-5f2c9e0b7d41a8c3" not in said
    assert said.startswith("Authorization: Bearer …a8c3, X-Twice: …")


# -- certificates ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["default", "ca-bundle", "insecure"])
async def test_a_forward_to_an_https_app_with_its_own_ca(
    env: Env, user_app: StartApp, local_ca: LocalCA, how: str
) -> None:
    app = user_app(tls=local_ca.leaf.server_context())
    trust = {
        "default": Trust(),
        "ca-bundle": read_ca_bundle(str(local_ca.ca)),
        "insecure": Trust(insecure=True),
    }[how]
    msg_id = f"msg_tls_{how.replace('-', '_')}"
    await _forward_one(env, parse_route(app.url, TargetOptions(trust=trust)), msg_id)
    [row] = await env.store.forwards_for_message(msg_id)
    if how == "default":
        assert (row.status, row.error) == (None, UNTRUSTED)
        assert app.seen == []
    else:
        assert (row.state, row.status, row.error) == (DONE, 200, None)
        assert app.seen[0].values("webhook-id") == [msg_id]


@pytest.mark.parametrize("how", ["default", "ca-bundle", "insecure"])
async def test_a_replay_to_an_https_app_with_its_own_ca(
    env: Env, user_app: StartApp, local_ca: LocalCA, how: str
) -> None:
    app = user_app(tls=local_ca.leaf.server_context())
    trust = {
        "default": Trust(),
        "ca-bundle": read_ca_bundle(str(local_ca.ca)),
        "insecure": Trust(insecure=True),
    }[how]
    attempt = await _stored(env.store, f"msg_tls_replay_{how.replace('-', '_')}")
    result = await replay(
        env.store, attempt, app.url, secret=SECRET, options=TargetOptions(trust=trust)
    )
    if how == "default":
        assert (result.status, result.error) == (None, UNTRUSTED)
    else:
        assert result.status == 200 and len(app.seen) == 1


async def test_the_ca_bundle_adds_to_the_public_roots_and_trusts_only_what_it_holds(
    env: Env, user_app: StartApp, local_ca: LocalCA, tmp_path: Path
) -> None:
    """Another CA's bundle does not make the app's certificate trusted."""
    from peers import local_ca as make_ca

    stranger = make_ca(tmp_path)
    app = user_app(tls=local_ca.leaf.server_context())
    trust = read_ca_bundle(str(stranger.ca))
    await _forward_one(env, parse_route(app.url, TargetOptions(trust=trust)), "msg_stranger")
    [row] = await env.store.forwards_for_message("msg_stranger")
    assert (row.status, row.error) == (None, UNTRUSTED)


def test_the_ca_bundle_is_read_once_at_start(local_ca: LocalCA, tmp_path: Path) -> None:
    """A file removed afterwards changes nothing: its certificates were read when it was given."""
    copy = tmp_path / "ca.pem"
    copy.write_bytes(b"# my CA\n" + local_ca.ca.read_bytes())
    trust = read_ca_bundle(str(copy))
    copy.unlink()
    assert trust.verify() is not True and trust.ca_file == str(copy)
    assert trust.ca_pem is not None and trust.ca_pem.startswith("-----BEGIN CERTIFICATE-----")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "no such file"),
        (b"", "holds no PEM certificate"),
        (b"-----BEGIN PRIVATE KEY-----\nMIGHAgEA\n-----END PRIVATE KEY-----\n", "no PEM cert"),
        (
            b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
            "cannot be read",
        ),
        (b"\x1b[2J" * 10, "holds no PEM certificate"),
        (b"-" * (CA_BUNDLE_MAX + 1), "larger than"),
    ],
    ids=["missing", "empty", "a-key", "not-a-certificate", "escapes", "too-large"],
)
def test_a_ca_bundle_that_is_not_one_is_a_usage_error(
    tmp_path: Path, content: bytes | None, said: str
) -> None:
    path = tmp_path / "bundle\x1b[31m.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UsageError) as info:
        read_ca_bundle(str(path))
    assert said in str(info.value)
    assert "\x1b" not in str(info.value)  # the file's name is shown escaped


def test_a_ca_bundle_that_never_ends_is_read_no_further_than_the_limit() -> None:
    with pytest.raises(UsageError, match="larger than 4 MiB"):
        read_ca_bundle("/dev/zero")


def test_a_ca_bundle_of_many_unterminated_blocks_is_refused(tmp_path: Path) -> None:
    """The certificate pattern scans each block once, up to the next dash: a bundle of unended
    blocks costs one pass over the file."""
    path = tmp_path / "unended.pem"
    block = b"-----BEGIN CERTIFICATE-----\n" + b"QUFB" * 1000 + b"\n"
    path.write_bytes(block * ((CA_BUNDLE_MAX - 1) // len(block)))
    with pytest.raises(UsageError, match="holds no PEM certificate"):
        read_ca_bundle(str(path))


def test_a_directory_or_an_unreadable_ca_bundle(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        read_ca_bundle(str(tmp_path))
    # A name the system refuses to open: a failure to read (exit 1), not a usage error.
    with pytest.raises(WalletpassError) as info:
        read_ca_bundle(str(tmp_path / ("x" * 300)))
    assert not isinstance(info.value, UsageError) and "Cannot read" in str(info.value)
    locked = tmp_path / "locked.pem"
    locked.write_text("x")
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads it all the same
        pytest.skip("running as root: a file's permissions do not stop it being read")
    with pytest.raises(WalletpassError) as info:
        read_ca_bundle(str(locked))
    assert not isinstance(info.value, UsageError) and "Cannot read" in str(info.value)
