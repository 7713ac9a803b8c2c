"""The ngrok provider: the authtoken from NGROK_AUTHTOKEN or ngrok's own configuration file, the
real SDK's failure answers (pointed at 127.0.0.1: no network here), and its success path through
the one seam the provider asks (``connect``)."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import Secret
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.tunnel.ngrok_config import (
    NgrokCredentials,
    config_paths,
    ngrok_credentials,
    read_agent_settings,
)
from walletpass_tui.tunnel.ngrok_sdk import Ngrok, NgrokRequest, failure_text, sdk_connect
from walletpass_tui.tunnel.provider import TunnelFailed, TunnelUnavailable
from walletpass_tui.tunnel.watch import Backoff, TunnelWatcher
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.verify import SigningKey, sign

TOKEN = "2abcDEFghiJKLmno_3pqrSTUvwxYZ0123456789"
DEADLINE_S = 30.0


def env_with(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), **extra}


def write_config(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "xdg" / "ngrok" / "ngrok.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# -- the authtoken ---------------------------------------------------------------------------------


def test_the_token_comes_from_the_environment_first(tmp_path: Path) -> None:
    write_config(tmp_path, "version: 2\nauthtoken: from_the_file_1234567\n")
    found = ngrok_credentials(env_with(tmp_path, NGROK_AUTHTOKEN=TOKEN))
    assert found.authtoken.reveal() == TOKEN
    assert found.source == "$NGROK_AUTHTOKEN"


def test_the_token_from_a_version_3_configuration(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "# written by ngrok config add-authtoken\n"
        'version: "3"\n'
        "agent:\n"
        f'    authtoken: "{TOKEN}"\n'
        "    connect_url: connect.example.com:443\n"
        "endpoints:\n"
        "  - name: web\n"
        "    authtoken: not_this_one\n",
    )
    found = ngrok_credentials(env_with(tmp_path))
    assert found == NgrokCredentials(Secret(TOKEN), str(path), "connect.example.com:443")


def test_the_token_from_a_version_2_configuration(tmp_path: Path) -> None:
    legacy = tmp_path / "home" / ".ngrok2" / "ngrok.yml"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(f"authtoken: {TOKEN}  # mine\nserver_addr: 127.0.0.1:4443\nregion: eu\n")
    found = ngrok_credentials(env_with(tmp_path))
    assert found.authtoken.reveal() == TOKEN
    assert found.connect_url == "127.0.0.1:4443"
    assert found.source == str(legacy)


def test_no_token_says_how_to_give_one(tmp_path: Path) -> None:
    with pytest.raises(TunnelUnavailable) as caught:
        ngrok_credentials(env_with(tmp_path))
    assert "set NGROK_AUTHTOKEN or run 'ngrok config add-authtoken TOKEN'" in str(caught.value)


def test_the_linux_configuration_is_looked_for_first(tmp_path: Path) -> None:
    paths = config_paths(env_with(tmp_path))
    assert paths[0] == tmp_path / "xdg" / "ngrok" / "ngrok.yml"
    assert paths[-1] == tmp_path / "home" / ".ngrok2" / "ngrok.yml"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"authtoken: " + b"x" * 70000, "larger than 64 KiB"),
        (b"authtoken: \xff\xfe\n", "not UTF-8 text"),
        (b"authtoken: abc\x1b]8;;x\n", "is not plain text"),
        (b"authtoken: two words\n", "is not a valid value"),
        (b"agent:\n  authtoken: a\n  connect_url: http://evil/path\n", "is not a valid value"),
    ],
)
def test_a_hostile_configuration_is_refused_whole(
    tmp_path: Path, content: bytes, said: str
) -> None:
    path = write_config(tmp_path, content)
    with pytest.raises(TunnelUnavailable) as caught:
        read_agent_settings(path)
    assert said in str(caught.value)
    assert str(path) in str(caught.value)
    assert "\x1b" not in str(caught.value)


def test_a_directory_in_place_of_the_configuration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "xdg" / "ngrok" / "ngrok.yml"
    path.mkdir(parents=True)
    with pytest.raises(TunnelUnavailable, match="is a directory, not a regular file"):
        ngrok_credentials(env_with(tmp_path))


def test_a_fifo_in_place_of_the_configuration_is_refused_without_waiting(tmp_path: Path) -> None:
    """Read on the receiver's event loop: opening a FIFO must not wait for a writer. A guard
    writer lets a stuck open go after the deadline, and is counted: it must not be needed."""
    path = tmp_path / "xdg" / "ngrok" / "ngrok.yml"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    released: list[bool] = []

    def release() -> None:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # only while a reader waits
        except OSError:  # no reader waiting: nothing to release
            return
        released.append(True)

    guard = threading.Timer(DEADLINE_S, release)
    guard.start()
    try:
        with pytest.raises(TunnelUnavailable) as caught:
            ngrok_credentials(env_with(tmp_path))
    finally:
        guard.cancel()
    assert released == []
    assert str(caught.value) == (
        f"The ngrok configuration {path} is a FIFO, not a regular file; fix it or set "
        "NGROK_AUTHTOKEN."
    )


def test_a_token_in_the_environment_with_control_characters_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TunnelUnavailable, match="NGROK_AUTHTOKEN contains spaces") as caught:
        ngrok_credentials(env_with(tmp_path, NGROK_AUTHTOKEN="abc\ndef"))
    assert "abc" not in str(caught.value)


# -- the real SDK, failing: nothing reaches the network ------------------------------------------


@pytest.fixture
def refusing_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]  # bound, never listening: connections are refused


def credentials(connect_url: str) -> NgrokCredentials:
    return NgrokCredentials(Secret(TOKEN), "$NGROK_AUTHTOKEN", connect_url)


async def test_the_sdk_that_cannot_reach_ngrok_is_a_failed_try(refusing_port: int) -> None:
    pytest.importorskip("ngrok")
    request = NgrokRequest("http://127.0.0.1:8787", credentials(f"127.0.0.1:{refusing_port}"))
    with pytest.raises(TunnelFailed) as caught:
        await asyncio.wait_for(sdk_connect(request), DEADLINE_S)
    message = str(caught.value)
    assert message.startswith("ngrok could not be reached (failed to connect session")
    assert TOKEN not in message


async def test_the_sdk_that_meets_no_ngrok_server_is_a_failed_try() -> None:
    """Something listens, but it is not ngrok: it closes every connection at once."""
    pytest.importorskip("ngrok")

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        request = NgrokRequest("http://127.0.0.1:8787", credentials(f"127.0.0.1:{port}"))
        with pytest.raises(TunnelFailed, match=r"^ngrok could not be reached \("):
            await asyncio.wait_for(sdk_connect(request), DEADLINE_S)
    finally:
        server.close()
        await server.wait_closed()


async def test_without_the_sdk_the_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ngrok", None)  # as if not installed
    request = NgrokRequest("http://127.0.0.1:8787", credentials("127.0.0.1:9"))
    with pytest.raises(TunnelUnavailable) as caught:
        await sdk_connect(request)
    assert "pipx inject walletpass-tui ngrok" in str(caught.value)
    assert "pip install '.[ngrok]'" in str(caught.value)


def test_what_the_sdk_says_is_one_line_without_the_token() -> None:
    exc = ValueError(
        "failed to connect session", f"authentication failed: token {TOKEN}\nbad\x1b[2J"
    )
    text = failure_text(exc, credentials("x:1"))
    assert TOKEN not in text
    assert "\n" not in text and "\x1b" not in text
    assert text.startswith("failed to connect session: authentication failed: token …")


# -- the success path, through the seam -----------------------------------------------------------


class FakeSession:
    """What the seam answers in these tests: an SDK session with one listener."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lost: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.closed = 0

    async def disconnected(self) -> str:
        return await self.lost

    async def close(self) -> None:
        self.closed += 1


class FakeSdk:
    def __init__(self, *urls: str) -> None:
        self.urls = list(urls)
        self.requests: list[NgrokRequest] = []
        self.sessions: list[FakeSession] = []

    async def __call__(self, request: NgrokRequest) -> FakeSession:
        self.requests.append(request)
        session = FakeSession(self.urls.pop(0) if len(self.urls) > 1 else self.urls[0])
        self.sessions.append(session)
        return session


def given_token() -> NgrokCredentials:
    return credentials("127.0.0.1:9")


async def test_the_seam_is_asked_for_the_local_address_and_domain() -> None:
    sdk = FakeSdk("https://hooks.ngrok.app")
    provider = Ngrok("hooks.ngrok.app", connect=sdk, credentials=given_token)
    tunnel = await provider.open("http://127.0.0.1:8787")
    assert tunnel.public_url == "https://hooks.ngrok.app"
    [request] = sdk.requests
    assert (request.local_url, request.domain) == ("http://127.0.0.1:8787", "hooks.ngrok.app")
    assert request.credentials.authtoken.reveal() == TOKEN
    await tunnel.close()
    await tunnel.close()
    assert sdk.sessions[0].closed == 1


@pytest.mark.parametrize(
    "hostile",
    [
        "http://abc.ngrok-free.app",
        "https://abc.ngrok-free.app/x",
        "https://u@abc.ngrok.app",
        "tcp://1.2.3.4:5",
    ],
)
async def test_an_sdk_url_that_is_not_plain_https_is_refused(hostile: str) -> None:
    sdk = FakeSdk(hostile)
    with pytest.raises(TunnelUnavailable, match="not a plain https:// host name"):
        await Ngrok(connect=sdk, credentials=given_token).open("http://127.0.0.1:8787")
    assert sdk.sessions[0].closed == 1


async def test_a_lost_connection_is_said_and_the_session_opened_again() -> None:
    sdk = FakeSdk("https://one.ngrok-free.app", "https://two.ngrok-free.app")
    watcher = TunnelWatcher(
        Ngrok(connect=sdk, credentials=given_token), backoff=Backoff(first_s=0.01)
    )
    states: list[tuple[str, str | None]] = []
    watcher.subscribe(lambda s: states.append((s.phase, s.public_url or s.detail)))
    watcher.start("http://127.0.0.1:8787")
    assert (await watcher.first_answer()).public_url == "https://one.ngrok-free.app"
    sdk.sessions[0].lost.set_result("ngrok lost its connection (heartbeat timeout)")
    for _ in range(500):
        if ("up", "https://two.ngrok-free.app") in states:
            break
        await asyncio.sleep(0.01)
    await watcher.stop()
    assert states[:5] == [
        ("starting", None),
        ("up", "https://one.ngrok-free.app"),
        ("down", "ngrok lost its connection (heartbeat timeout)"),
        ("starting", None),
        ("up", "https://two.ngrok-free.app"),
    ]
    assert [s.closed for s in sdk.sessions] == [1, 1]


async def test_a_missing_token_is_said_before_the_sdk_is_asked(tmp_path: Path) -> None:
    sdk = FakeSdk("https://one.ngrok-free.app")
    provider = Ngrok(connect=sdk, credentials=lambda: ngrok_credentials(env_with(tmp_path)))
    with pytest.raises(TunnelUnavailable, match="NGROK_AUTHTOKEN"):
        await provider.open("http://127.0.0.1:8787")
    assert sdk.requests == []


class ForwardingSdk:
    """The seam answering as the SDK would, forwarding for real: a port on 127.0.0.1 (ngrok's
    edge, here) whose connections reach the local address the seam was asked for."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.port = 0

    async def __call__(self, request: NgrokRequest) -> FakeSession:
        target = request.local_url.removeprefix("http://")
        host, _, port = target.rpartition(":")

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            finally:
                writer.close()

        async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        self.server = await asyncio.start_server(forward, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        session = FakeSession("https://abcd-203-0-113-7.ngrok-free.app")

        async def close() -> None:
            assert self.server is not None
            self.server.close()
            session.closed += 1

        session.close = close  # type: ignore[method-assign]
        return session


async def test_a_signed_delivery_through_an_ngrok_tunnel_is_verified_and_stored(
    tmp_path: Path,
) -> None:
    secret = "whsec_" + base64.b64encode(b"ngrok-tunnel-secret-0123456789ab").decode()
    body = b'{"type": "pass.activated", "data": {"passId": "pass_ngrok"}}'
    sdk = ForwardingSdk()
    setup = DeliverySetup(
        options=ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(secret)]),
        tunnel=Ngrok(connect=sdk, credentials=given_token),
    )
    settings = Settings(home=tmp_path / "home", receiver_port=0)
    seen: list[Attempt] = []
    async with DeliveryRuntime(settings, setup) as runtime:
        runtime.subscribe(seen.extend)
        await runtime.serve()
        assert runtime.tunnel is not None
        assert (await runtime.tunnel.first_answer()).phase == "up"
        assert runtime.public_url == "https://abcd-203-0-113-7.ngrok-free.app/webhooks"
        headers = {
            **sign(secret, "msg_ngrok", body, datetime.now(UTC)),
            "content-type": "application/json",
        }
        async with httpx.AsyncClient(trust_env=False, timeout=DEADLINE_S) as client:
            answer = await client.post(
                f"http://127.0.0.1:{sdk.port}/webhooks", content=body, headers=headers
            )
        assert answer.status_code == 200
        for _ in range(500):
            if seen:
                break
            await asyncio.sleep(0.01)
        [stored] = seen
        assert (stored.webhook_id, stored.verdict) == ("msg_ngrok", "verified")
    assert runtime.tunnel is None  # closed with the runtime
