"""``listen`` as a real process (signed posts, Ctrl-C, port released), then ``events`` on its history."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from walletpass_tui.cli import main
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.store import Store

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
EP_SECRET = "whsec_" + base64.b64encode(b"e" * 32).decode()
STRANGER = "whsec_" + base64.b64encode(b"x" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_7"}}'


def signed(msg_id: str, body: bytes = BODY, secret: str = SECRET) -> dict[str, str]:
    ts = str(int(time.time()))
    key = base64.b64decode(secret.split("_", 1)[1])
    digest = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Listener:
    def __init__(self, proc: subprocess.Popen[str], port: int, banner: list[str]) -> None:
        self.proc = proc
        self.port = port
        self.banner = banner
        self.url = f"http://127.0.0.1:{port}/webhooks"

    def stop(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=15)
        return self.proc.returncode, out, err


@pytest.fixture
def listen(clean_env: Path) -> Iterator[object]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> Listener:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        procs.append(proc)
        stream = proc.stderr if "--json" in args else proc.stdout
        assert stream is not None
        banner: list[str] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = stream.readline()
            if not line:
                raise AssertionError(f"listen exited: {proc.communicate()}")
            banner.append(line)
            if line.startswith("History:"):
                return Listener(proc, port, banner)
        raise AssertionError(f"listen did not start: {banner}")

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_listen_end_to_end_then_events(
    listen: object, clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    EndpointRegistry(clean_env / "endpoints.json").import_endpoint(
        "ep_local", "https://example.com/wh", ["pass.activated"], EP_SECRET
    )
    server = listen("--secret", SECRET)  # type: ignore[operator]
    banner = "".join(server.banner)
    assert f"Listening on http://127.0.0.1:{server.port}/webhooks" in banner
    assert "whsec_…" in banner and SECRET[-4:] in banner and "ep_local" in banner
    assert SECRET not in banner and EP_SECRET not in banner  # masked, never in clear
    assert str(clean_env / "deliveries.sqlite3") in banner

    binary = b"\xff\xfe raw \x00 bytes"
    with httpx.Client(timeout=10) as client:
        answers = [
            client.post(server.url, content=BODY, headers=signed("msg_one")),
            client.post(server.url, content=BODY, headers=signed("msg_one")),  # redelivery
            client.post(server.url, content=BODY, headers=signed("msg_ep", secret=EP_SECRET)),
            client.post(server.url, content=binary, headers=signed("msg_bin", binary)),
            client.post(server.url, content=BODY, headers=signed("msg_bad", secret=STRANGER)),
            client.post(server.url, content=BODY, headers={"webhook-id": "msg_hdr"}),
            client.get(server.url),
        ]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 401, 400, 405]
    assert "no signature matches" in answers[4].text
    assert "missing header(s)" in answers[5].text

    code, out, err = server.stop()
    assert code == 0, err
    assert "Stopped; every acknowledged delivery is in the history." in out
    # The banner was read already; what is left is one line per attempt, then the goodbye,
    # and how far learning each topic's payloads got, if the learner looked before the stop.
    learning = [ln for ln in out.splitlines() if ln.startswith("schema ")]
    assert all(" learning, " in ln and ln.endswith(" of 20") for ln in learning), learning
    lines = [ln for ln in out.splitlines() if ln and not ln.startswith(("Stopped", "schema "))]
    assert len(lines) == 7, lines
    first, second, by_ep, binary_line, bad, hdr, get = lines
    assert "msg_one" in first and "pass.activated" in first and "#1" in first
    assert first.endswith("  verified  200")  # the word said once
    assert "#2" in second and second.endswith("  200")
    assert "REJECTED" in bad and " 401 " in bad and "no signature matches" in bad
    assert "REJECTED" in hdr and " 400 " in hdr and "missing header(s)" in hdr
    assert " 405 " in get and "method not allowed" in get
    assert "msg_bin" in binary_line and "verified" in binary_line
    assert "msg_ep" in by_ep

    with socket.socket() as s:  # the port was released
        s.bind(("127.0.0.1", server.port))

    code, out, _ = run(capsys, "events", "list", "--json")
    assert code == 0
    messages = {m["webhook_id"]: m for m in json.loads(out)}
    assert set(messages) == {"msg_one", "msg_ep", "msg_bin", "msg_bad", "msg_hdr"}
    one = messages["msg_one"]
    required = {"webhook_id", "topic", "verdict", "reason", "attempts", "first_received_at"}
    assert required | {"last_received_at", "endpoint_id"} <= set(one)
    assert (one["topic"], one["verdict"], one["reason"], one["attempts"]) == (
        "pass.activated",
        "verified",
        "verified",
        2,
    )
    assert (
        one["first_received_at"].endswith("Z")
        and one["first_received_at"] <= (one["last_received_at"])
    )
    assert one["endpoint_id"] is None
    assert messages["msg_ep"]["endpoint_id"] == "ep_local"
    assert messages["msg_bad"]["verdict"] == "rejected"

    code, out, _ = run(capsys, "events", "show", "msg_bin", "--json")
    assert code == 0
    shown = json.loads(out)
    [attempt] = shown["attempts"]
    assert attempt["body"] is None
    assert base64.b64decode(attempt["body_base64"]) == binary
    assert attempt["verdict"] == "verified" and attempt["status"] == 200

    code, out, _ = run(capsys, "events", "show", "msg_one", "--json")
    attempts = json.loads(out)["attempts"]
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert attempts[0]["body"] == BODY.decode()
    assert base64.b64decode(attempts[0]["body_base64"]) == BODY
    assert ["webhook-id", "msg_one"] in attempts[0]["headers"]

    code, out, _ = run(capsys, "events", "list", "--verdict", "rejected", "--json")
    assert {m["webhook_id"] for m in json.loads(out)} == {"msg_bad", "msg_hdr"}


def test_listen_json_prints_one_object_per_attempt(listen: object) -> None:
    server = listen("--secret", SECRET, "--json")  # type: ignore[operator]
    with httpx.Client(timeout=10) as client:
        assert client.post(server.url, content=BODY, headers=signed("msg_j")).status_code == 200
        assert client.post(server.url, content=b"{}", headers=signed("msg_k")).status_code == 401
    code, out, err = server.stop()
    assert code == 0
    objects = [json.loads(line) for line in out.splitlines()]
    assert [(o["webhook_id"], o["verdict"], o["status"]) for o in objects] == [
        ("msg_j", "verified", 200),
        ("msg_k", "rejected", 401),
    ]
    assert objects[0]["topic"] == "pass.activated" and objects[0]["attempt"] == 1
    assert objects[1]["reason"] == "no signature matches"
    assert "Listening on" in "".join(server.banner) and "Stopped" in err


def test_listen_reports_a_taken_port(clean_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = run(capsys, "listen", "--port", str(port))
    assert code == 1
    assert f"Port {port} is already in use" in err


def test_listen_refuses_a_bad_secret_without_echoing_it(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = "whsec_not*base64*at*all*secret"
    code, _, err = run(capsys, "listen", "--secret", bad)
    assert code == 2 and "not valid base64" in err and bad not in err  # a flag: usage error


def test_listen_reports_an_unusable_history(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.mkdir(parents=True)
    (clean_env / "deliveries.sqlite3").write_bytes(b"garbage" * 2000)
    code, _, err = run(capsys, "listen", "--port", "0")
    assert code == 1 and "damaged" in err


def test_events_without_history_says_what_to_do(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Asked for one message, a home with no history says how to get one (a list is just empty:
    tests/cli/test_history_cmds.py)."""
    code, _, err = run(capsys, "events", "show", "msg_1")
    assert code == 1 and "walletpass-tui listen" in err


def test_listen_says_what_it_injects_in_a_sentence(listen: object) -> None:
    server = listen("--delay", "2", "--fail-first", "1")  # type: ignore[operator]
    banner = "".join(server.banner)
    server.stop()
    assert (
        "Injecting failures: The first 1 attempt of each message get 500; every answer waits 2 s."
        in banner
    )
    assert "Injection(" not in banner


def test_a_plain_listen_leaves_queued_forwards_queued_and_says_how_many(
    listen: object, clean_env: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}/hooks"  # nothing listens there
    first = listen("--secret", SECRET, "--forward-to", down)  # type: ignore[operator]
    answer = httpx.post(first.url, content=BODY, headers=signed("msg_queued"), timeout=10)
    assert answer.status_code == 200
    code, _, err = first.stop()
    assert code == 0, err

    plain = listen("--secret", SECRET)  # type: ignore[operator]
    banner = "".join(plain.banner)
    time.sleep(0.5)  # long enough for a forwarder to have tried, were there one
    code, out, err = plain.stop()
    assert code == 0, err
    assert "1 forward from an earlier run waits in the queue and stays there" in banner
    assert "--forward-to" in banner and "events pending --give-up" in banner
    assert "forwarded to" not in out  # nothing was sent

    async def pending() -> int:
        async with await Store.open(clean_env / "deliveries.sqlite3") as store:
            return await store.pending_forward_count()

    assert asyncio.run(pending()) == 1


def test_listen_says_when_a_redelivery_has_another_body(listen: object) -> None:
    server = listen("--secret", SECRET)  # type: ignore[operator]
    other = b'{"type": "pass.activated", "data": {"passId": "pass_8"}}'
    for body in (BODY, BODY, other):
        answer = httpx.post(server.url, content=body, headers=signed("msg_twice", body), timeout=10)
        assert answer.status_code == 200
    code, out, err = server.stop()
    assert code == 0, err
    lines = [line for line in out.splitlines() if "msg_twice" in line]
    assert len(lines) == 3
    assert ["body differs" in line for line in lines] == [False, False, True]
