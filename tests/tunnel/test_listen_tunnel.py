"""``listen --tunnel``: a real listen process with a fake ``cloudflared`` on PATH (it prints what
the real one prints and forwards a port of its own, the "public side"). A signed delivery posted
to the public side is verified and stored; the tunnel's URL is shown and kept in the receiver's
state file; a tunnel that dies is said and started again while the receiver goes on; stopping
listen (SIGTERM or Ctrl-C) leaves no cloudflared behind, counted in /proc."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from tunnel_helpers import DEADLINE_S, FakeCloudflared, Listen, install_fake, signed_post

from walletpass_tui.runtime.instance import InstanceRecord
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

pytestmark = pytest.mark.slow

SECRET = "whsec_" + base64.b64encode(b"tunnel-secret-0123456789abcdef01").decode()
NEW_SECRET = "whsec_" + base64.b64encode(b"the-new-endpoints-secret-0123456").decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_tunnel"}}'


def public_side(fake: FakeCloudflared, start: int = -1) -> str:
    _, port, _ = fake.starts()[start]
    return f"http://127.0.0.1:{port}/webhooks"


def listen(*extra: str) -> Listen:
    return Listen("--port", "0", "--secret", SECRET, "--json", "--tunnel", "cloudflared", *extra)


def not_starting(line: str) -> bool:
    """A line about the tunnel that is its answer, not that it is starting."""
    return line.startswith("Tunnel:") and not line.startswith("Tunnel: starting")


# SIGHUP: the terminal listen runs in was closed.
@pytest.mark.parametrize("stop_with", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_delivery_through_the_tunnel_is_verified_and_stored_and_nothing_is_left(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_with: int
) -> None:
    fake = install_fake(tmp_path, monkeypatch)
    proc = listen()
    try:
        shown = proc.err.until(lambda line: line.startswith("Public URL:"))
        [(pid, _, host)] = fake.starts()
        assert shown == f"Public URL:  https://{host}/webhooks  (a cloudflared quick tunnel)"
        exposed = proc.err.until(lambda line: line.startswith("  "))
        assert "anyone who has it can post here" in exposed
        assert any(line.startswith("History:") for line in proc.err.seen)

        answer = signed_post(public_side(fake), "msg_through_tunnel", BODY, SECRET)
        assert answer.status_code == 200
        stored = json.loads(proc.out.until(lambda line: "msg_through_tunnel" in line))
        assert stored["verdict"] == "verified"
        # The tunnel connects from loopback and says who the client was.
        assert (stored["remote_addr"], stored["forwarded_for"]) == ("127.0.0.1", "203.0.113.7")

        # Another shell finds the public URL in the receiver's state file.
        state = (clean_env / "run" / "receiver.json").read_bytes()
        assert InstanceRecord.from_bytes(state).public_url == f"https://{host}/webhooks"
        assert fake.running() == [pid]

        assert proc.stop(stop_with) == 0
    finally:
        proc.kill()
    assert fake.running() == []
    assert "Stopped; every acknowledged delivery is in the history." in proc.err.rest()
    assert not (clean_env / "run" / "receiver.json").exists()


def test_a_slow_tunnel_never_holds_back_the_receivers_first_lines(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cloudflared without a network says nothing for a long time: listen says where it listens
    and that the tunnel is starting at once, and a delivery's line comes after those lines."""
    install_fake(tmp_path, monkeypatch, "silent")
    proc = Listen("--port", "0", "--secret", SECRET, "--tunnel", "cloudflared")  # one stream
    try:
        local = proc.out.until(lambda line: line.startswith("Listening on"))
        starting = proc.out.until(lambda line: line.startswith("Tunnel:"))
        assert starting == "Tunnel: starting a cloudflared quick tunnel; its public URL follows."
        proc.out.until(lambda line: line.startswith("History:"))
        url = local.removeprefix("Listening on ").strip()
        assert signed_post(url, "msg_while_starting", BODY, SECRET).status_code == 200
        proc.out.until(lambda line: "msg_while_starting" in line)
        assert proc.stop() == 0
    finally:
        proc.kill()
    assert not any(line.startswith("Public URL") for line in proc.out.rest())


def test_a_program_that_hands_off_to_a_child_is_said_down_and_the_child_stopped(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cloudflared gives its URL and exits while a child it started keeps its output open: the
    tunnel is said to be down (and tried again), the child stopped, nothing left at the end."""
    fake = install_fake(tmp_path, monkeypatch, "hands-off")
    proc = listen()
    try:
        proc.err.until(lambda line: line.startswith("Public URL:"))
        down = proc.err.until(lambda line: line.startswith("Tunnel down:"))
        assert down.startswith("Tunnel down: cloudflared exited (status 0: ")
        first, *_ = fake.starts()
        assert fake.in_group(first[0]) == []  # its child was stopped before "down" was said
        assert proc.stop() == 0
    finally:
        proc.kill()
    assert fake.running() == []


def test_a_tunnel_that_dies_is_said_and_started_again_while_the_receiver_goes_on(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "flaky")
    proc = listen()
    try:
        proc.err.until(lambda line: line.startswith("Public URL:"))
        down = proc.err.until(lambda line: line.startswith("Tunnel down:"))
        assert down.startswith("Tunnel down: cloudflared exited (status 1: ")
        assert down.endswith("; trying again in 1 s (the receiver goes on).")
        up = proc.err.until(lambda line: line.startswith("Tunnel up"))
        (_, _, first), (_, _, second) = fake.starts()
        assert up == (
            f"Tunnel up at a new URL: https://{second}/webhooks (it was https://{first}/webhooks)"
        )
        answer = signed_post(public_side(fake), "msg_after_restart", BODY, SECRET)
        assert answer.status_code == 200
        proc.out.until(lambda line: "msg_after_restart" in line)
        assert proc.stop() == 0
    finally:
        proc.kill()
    assert fake.running() == []


def test_without_cloudflared_one_line_says_so_and_the_receiver_runs_locally(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = Path(os.path.dirname(os.__file__)).parent.parent / "bin"  # python, no cloudflared
    monkeypatch.setenv("PATH", str(bin_dir))
    proc = listen()
    try:
        local = proc.err.until(lambda line: line.startswith("Listening on"))
        said = proc.err.until(not_starting)
        assert said == (
            "Tunnel: --tunnel cloudflared: the cloudflared program is not installed (or not on "
            "PATH); install it (https://developers.cloudflare.com/cloudflare-one/connections/"
            "connect-networks/downloads/) or use --tunnel ngrok. The receiver runs locally, "
            "without a public URL."
        )
        url = local.removeprefix("Listening on ").strip()
        assert signed_post(url, "msg_local", BODY, SECRET).status_code == 200
        proc.out.until(lambda line: "msg_local" in line)
        assert proc.stop() == 0
    finally:
        proc.kill()


def test_an_endpoint_at_an_earlier_tunnel_url_is_said_with_the_command_for_the_new_one(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch)
    registry = EndpointRegistry(clean_env / "endpoints.json")
    old = "https://old-words-here.trycloudflare.com/webhooks"
    registry.import_endpoint("ep_old", old, ["pass.activated"], SECRET)
    registry.import_endpoint(
        "ep_prod", "https://api.example.com/webhooks", ["pass.activated"], SECRET
    )
    proc = listen()
    try:
        proc.err.until(lambda line: line.startswith("Public URL:"))
        proc.err.until(lambda line: "anyone who has it" in line)
        notice = proc.err.until(lambda line: line.strip().startswith("Endpoint"))
        assert notice.strip() == (
            f"Endpoint ep_old still points at {old}; deliveries to it fail. Register this URL: "
            "walletpass-tui endpoints create --from-listener --topic pass.activated "
            f"--home {clean_env}"
        )
        assert not any("ep_prod still" in line for line in proc.err.seen)  # not a tunnel's
        assert fake.starts()
        assert proc.stop() == 0
    finally:
        proc.kill()


@pytest.fixture
def refusing_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ngrok_that_cannot_be_reached_is_said_and_the_receiver_runs_locally(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusing_port: int
) -> None:
    pytest.importorskip("ngrok")
    # ngrok's own configuration names an agent address on this machine where nothing listens.
    config = tmp_path / "xdg-config" / "ngrok" / "ngrok.yml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'version: "3"\nagent:\n  authtoken: tok_0123456789abcdef\n  connect_url: 127.0.0.1:{refusing_port}\n'
    )
    proc = Listen("--port", "0", "--secret", SECRET, "--tunnel", "ngrok")
    try:
        local = proc.out.until(lambda line: line.startswith("Listening on"))
        said = proc.out.until(not_starting)
        assert said.startswith("Tunnel: ngrok could not be reached (failed to connect session")
        assert said.endswith("; trying again in 1 s. The receiver runs locally meanwhile.")
        assert "tok_0123456789abcdef" not in "\n".join(proc.out.seen)
        url = local.removeprefix("Listening on ").strip()
        assert signed_post(url, "msg_local", BODY, SECRET).status_code == 200
        assert proc.stop() == 0
    finally:
        proc.kill()
    assert "tok_0123456789abcdef" not in "\n".join(proc.out.rest() + proc.err.rest())


def test_a_fifo_in_place_of_ngroks_configuration_is_refused_and_the_receiver_answers(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening it never waits for a writer on the receiver's event loop: one line says it is
    not a file, deliveries are answered, Ctrl-C stops listen."""
    monkeypatch.delenv("NGROK_AUTHTOKEN", raising=False)
    fifo = tmp_path / "xdg-config" / "ngrok" / "ngrok.yml"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    proc = Listen("--port", "0", "--secret", SECRET, "--tunnel", "ngrok")
    try:
        local = proc.out.until(lambda line: line.startswith("Listening on"))
        said = proc.out.until(not_starting)
        assert said == (
            f"Tunnel: The ngrok configuration {fifo} is a FIFO, not a regular file; fix it or set "
            "NGROK_AUTHTOKEN. The receiver runs locally, without a public URL."
        )
        url = local.removeprefix("Listening on ").strip()
        assert signed_post(url, "msg_beside_fifo", BODY, SECRET).status_code == 200
        proc.out.until(lambda line: "msg_beside_fifo" in line)
        assert proc.stop(signal.SIGINT) == 0
    finally:
        if proc.proc.poll() is None:  # stuck opening the FIFO: a writer lets it go
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        proc.kill()


def test_ngrok_without_an_authtoken_says_how_to_give_one(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.delenv("NGROK_AUTHTOKEN", raising=False)
    proc = Listen("--port", "0", "--secret", SECRET, "--tunnel", "ngrok")
    try:
        said = proc.out.until(not_starting)
        assert "needs your ngrok authtoken: set NGROK_AUTHTOKEN or run 'ngrok config" in said
        assert said.endswith("The receiver runs locally, without a public URL.")
        assert proc.stop() == 0
    finally:
        proc.kill()
    assert DEADLINE_S


async def test_endpoints_create_in_another_shell_registers_the_tunnels_url(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_server: Any
) -> None:
    """Two real processes: listen with its tunnel, then ``endpoints create --from-listener`` with
    no URL given; the endpoint the old tunnel left behind is marked stale."""
    fake = install_fake(tmp_path, monkeypatch)
    registry = EndpointRegistry(clean_env / "endpoints.json")
    old = "https://old-words-here.trycloudflare.com/webhooks"
    registry.import_endpoint("ep_old", old, ["pass.activated"], SECRET)
    service = await start_server()
    proc = listen()
    try:
        proc.err.until(lambda line: line.startswith("Public URL:"))
        [(_, _, host)] = fake.starts()
        url = f"https://{host}/webhooks"
        service.answer(
            "POST",
            "/v0/webhookEndpoints",
            status=201,
            json={
                "id": "ep_new",
                "secret": NEW_SECRET,
                "url": url,
                "enabledTopics": ["pass.activated"],
                "enabled": True,
                "createdAt": "2025-06-01T12:00:00.123Z",
            },
        )
        create = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "walletpass_tui", "endpoints", "create", "--from-listener",
            "--topic", "pass.activated",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={
                **os.environ,
                "WALLETPASS_REGISTRATION_URL": service.url,
                "WALLETPASS_API_KEY": "wp_live_Q7f3kLm9Xc2Vb8Nn1Zr5Tt0Yw4Hh6Jd",
            },
        )  # fmt: skip
        out, err = await asyncio.wait_for(create.communicate(), DEADLINE_S)
        assert create.returncode == 0, err.decode()
        [request] = service.requests_to("POST", "/v0/webhookEndpoints")
        assert request.json()["url"] == url
        assert (
            "Using the public URL of the receiver running on this home (listen, pid" in err.decode()
        )
        assert "Marked ep_old stale here" in err.decode()
        assert f"Created ep_new -> {url}" in out.decode()
        stored = {e.id: e for e in registry.load()}
        assert stored["ep_old"].stale and stored["ep_new"].tunnel
        # The new endpoint's secret verifies what comes through the tunnel.
        assert signed_post(public_side(fake), "msg_new", BODY, NEW_SECRET).status_code == 200
        stored_line = json.loads(proc.out.until(lambda line: "msg_new" in line))
        assert (stored_line["verdict"], stored_line["endpoint_id"]) == ("verified", "ep_new")
        assert proc.stop() == 0
    finally:
        proc.kill()
    assert fake.running() == []
