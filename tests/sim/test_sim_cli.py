"""The commands: ``trigger``, ``sim deliver``, ``sim emit|endpoint|deliveries`` and ``sim serve``.

``main()`` runs its own event loop (asyncio.run), so it runs in a worker thread while the target
servers and the simulator answer on the test's loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from walletpass_tui.cli import main
from walletpass_tui.sim.clock import FakeClock
from walletpass_tui.sim.events import new_secret

SECRET = new_secret()
SIM_KEY = "sk_sim_TestKey0123456789abcdefABCDEF"


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/webhooks"


# -- trigger ----------------------------------------------------------------------------------------


async def test_trigger_sends_one_signed_webhook(
    start_server: Any, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    receiver = await start_server()
    receiver.reply("POST", "/wh", {"status": 200, "body": "stored"})
    code, out, err = await run(
        capsys,
        "trigger",
        "pass.deactivated",
        "--to",
        receiver.url + "/wh",
        "--secret",
        SECRET,
        "--id",
        "msg_fixed123",
    )
    assert code == 0, err
    assert "200 OK" in out and re.search(r"in \d+ ms", out) and "stored" in out
    (request,) = receiver.requests
    assert request.headers["webhook-id"] == "msg_fixed123"
    assert request.headers["Content-Type"] == "application/json"
    body = Webhook(SECRET).verify(request.body, dict(request.headers))
    assert body["type"] == "pass.deactivated"


async def test_trigger_sends_a_body_file_unchanged(
    start_server: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, clean_env: Path
) -> None:
    receiver = await start_server()
    receiver.reply("POST", "/wh", {"status": 204})
    raw = b'{"b": 2,  "a": [1, 2]}\n'
    body_file = tmp_path / "body.json"
    body_file.write_bytes(raw)
    code, _, err = await run(
        capsys,
        "trigger",
        "pass.activated",
        "--to",
        receiver.url + "/wh",
        "--secret",
        SECRET,
        "--body-file",
        str(body_file),
    )
    assert code == 0, err
    assert receiver.requests[0].body == raw
    Webhook(SECRET).verify(raw, dict(receiver.requests[0].headers))


async def test_trigger_exits_1_on_a_non_2xx_and_escapes_the_answer(
    start_server: Any, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    receiver = await start_server()
    receiver.reply("POST", "/wh", {"status": 401, "body": "bad signature\x1b[2J\x07"})
    code, out, err = await run(
        capsys, "trigger", "pass.activated", "--to", receiver.url + "/wh", "--secret", SECRET
    )
    assert code == 1
    assert "401 Unauthorized" in out
    assert "\x1b" not in out and "\\x1b[2J" in out
    assert err.count("\n") == 1 and "401" in err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--to", "localhost/wh", "--secret", SECRET], "--to"),
        (["--to", "http://127.0.0.1:9/wh", "--secret", SECRET, "--id", "msg x"], "--id"),
        (["--to", "http://127.0.0.1:9/wh", "--secret", SECRET, "--body-file", "/nope"], "/nope"),
    ],
)
async def test_trigger_bad_input_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], clean_env: Path, args: list[str], fragment: str
) -> None:
    code, _, err = await run(capsys, "trigger", "pass.activated", *args)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("walletpass-tui: error: ")
    assert fragment in err


@pytest.mark.parametrize(
    ("secret", "fragment"),
    [("sk_not_a_secret", "whsec_"), ("whsec_***", "base64")],
)
async def test_trigger_refuses_a_secret_that_is_not_one(
    capsys: pytest.CaptureFixture[str], clean_env: Path, secret: str, fragment: str
) -> None:
    """A usage error (exit 2), one line, the secret shown masked only."""
    argv = ["trigger", "pass.activated", "--to", "http://127.0.0.1:9/wh", "--secret", secret]
    code, _, err = await run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("walletpass-tui: error: ")
    assert fragment in err and secret not in err


async def test_trigger_to_nobody_fails_clearly(
    capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    code, _, err = await run(
        capsys, "trigger", "pass.activated", "--to", closed_port_url(), "--secret", SECRET
    )
    assert code == 1 and "Could not deliver" in err and err.count("\n") == 1


# -- sim deliver ------------------------------------------------------------------------------------


async def test_sim_deliver_prints_each_attempt_in_service_time(
    start_server: Any, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    receiver = await start_server()
    receiver.reply(
        "POST", "/wh", {"status": 500}, {"status": 502}, {"status": 500}, {"status": 200}
    )
    code, out, err = await run(
        capsys,
        "sim",
        "deliver",
        "--to",
        receiver.url + "/wh",
        "--secret",
        SECRET,
        "--topic",
        "pass.deactivated",
        "--time-scale",
        "0.0001",
    )
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("attempt ")]
    assert len(lines) == 4
    # At this scale 1 ms of real time is 10 s of the service's, so each attempt's own answer time
    # (longer on a busy machine) may add seconds to the offsets: the schedule's waits are checked.
    assert re.match(r"attempt 1/8  \+\d+ s  500", lines[0]) and "next in 5 s" in lines[0]
    assert re.match(r"attempt 2/8  \+\d+ s  502", lines[1]) and "next in 5 min" in lines[1]
    assert re.match(r"attempt 3/8  \+5 min \d+ s  500", lines[2]) and "next in 30 min" in lines[2]
    assert re.match(r"attempt 4/8  \+35 min \d+ s  200", lines[3]) and "delivered" in lines[3]
    assert "Delivered on attempt 4" in out
    ids = {r.headers["webhook-id"] for r in receiver.requests}
    assert len(ids) == 1
    assert json.loads(receiver.requests[0].body)["type"] == "pass.deactivated"


async def test_sim_deliver_gives_up_after_8_attempts(
    start_server: Any, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    receiver = await start_server()
    receiver.reply("POST", "/wh", {"status": 503, "body": "down"})
    code, out, err = await run(
        capsys,
        "sim",
        "deliver",
        "--to",
        receiver.url + "/wh",
        "--secret",
        SECRET,
        "--time-scale",
        "0.00001",  # the whole schedule (27 h 35 min 5 s) in about 1 s
    )
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("attempt ")]
    assert len(lines) == 8 and len(receiver.requests) == 8
    # Each answer's real time counts 100,000-fold: a busy machine adds seconds to the offset.
    assert re.match(r"attempt 8/8  \+27 h 35 min \d+ s  503", lines[-1]), lines[-1]
    assert "giving up" in lines[-1]
    assert "answer: down" in out
    assert "Gave up after 8" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--time-scale", "0"], "--time-scale"),
        (["--time-scale", "fast"], "--time-scale"),
        (["--time-scale", "-1"], "--time-scale"),
        (["--secret", "whsec_"], "nothing after whsec_"),
    ],
)
async def test_sim_deliver_bad_input(
    capsys: pytest.CaptureFixture[str], clean_env: Path, args: list[str], fragment: str
) -> None:
    secret = [] if "--secret" in args else ["--secret", SECRET]
    argv = ["sim", "deliver", "--to", "http://127.0.0.1:9/wh", *secret, *args]
    code, _, err = await run(capsys, *argv)
    assert code == (2 if secret == [] else 1) and fragment in err and err.count("\n") == 1


# -- sim emit / endpoint / deliveries ---------------------------------------------------------------


async def test_control_commands_drive_a_running_simulator(
    sim: Any,
    create_endpoint: Any,
    start_server: Any,
    capsys: pytest.CaptureFixture[str],
    clean_env: Path,
    tmp_path: Path,
) -> None:
    receiver = await start_server()
    receiver.reply("POST", "/wh", {"status": 200})
    service = await sim(clock=FakeClock())
    endpoint = await create_endpoint(service.url, receiver.url + "/wh")
    common = ["--sim", service.url, "--api-key", SIM_KEY]

    code, out, err = await run(capsys, "sim", "emit", "pass.activated", *common)
    assert code == 0, err
    assert f"to 1 endpoint(s): {endpoint['id']}" in out
    await service.wait_idle()
    assert len(receiver.requests) == 1

    body_file = tmp_path / "event.json"
    body_file.write_text(json.dumps({"type": "pass.activated", "data": {"passId": "pass_9"}}))
    code, out, err = await run(
        capsys, "sim", "emit", "pass.activated", *common, "--body-file", str(body_file), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["endpoints"] == [endpoint["id"]]
    await service.wait_idle()
    assert json.loads(receiver.requests[1].body)["data"]["passId"] == "pass_9"

    code, out, err = await run(capsys, "sim", "endpoint", "list", *common)
    assert code == 0 and endpoint["id"] in out and endpoint["secret"] not in out

    code, out, err = await run(capsys, "sim", "endpoint", "disable", endpoint["id"], *common)
    assert code == 0, err
    assert service.endpoint(endpoint["id"]).enabled is False
    code, out, _ = await run(capsys, "sim", "emit", "pass.activated", *common)
    assert code == 0 and "nothing is delivered" in out

    code, _, err = await run(capsys, "sim", "endpoint", "enable", endpoint["id"], *common)
    assert code == 0 and service.endpoint(endpoint["id"]).enabled is True

    code, out, err = await run(capsys, "sim", "deliveries", *common)
    assert code == 0 and out.count("msg_") == 2 and "+0 s" in out

    code, _, err = await run(capsys, "sim", "endpoint", "remove", endpoint["id"], *common)
    assert code == 0 and service.endpoints == []

    code, _, err = await run(capsys, "sim", "endpoint", "remove", endpoint["id"], *common)
    assert code == 1 and "404" in err and err.count("\n") == 1


async def test_control_commands_read_the_environment(
    sim: Any, capsys: pytest.CaptureFixture[str], clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await sim()
    monkeypatch.setenv("WALLETPASS_BASE_URL", service.url)
    monkeypatch.setenv("WALLETPASS_API_KEY", SIM_KEY)
    code, out, err = await run(capsys, "sim", "emit", "pass.deactivated")
    assert code == 0, err
    assert "no enabled endpoint" in out

    monkeypatch.setenv("WALLETPASS_API_KEY", "sk_sim_wrong")
    code, _, err = await run(capsys, "sim", "emit", "pass.deactivated")
    assert code == 1 and "refused the API key" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["sim", "emit", "pass.activated"], "--sim"),
        (["sim", "emit", "pass.activated", "--sim", "http://127.0.0.1:1"], "--api-key"),
        (["sim", "emit", "pass.activated", "--sim", "localhost:1", "--api-key", "k"], "--sim"),
        (
            ["sim", "endpoint", "disable", "ep_x", "--sim", "http://127.0.0.1:1", "--api-key", "k"],
            "Could not reach",
        ),
    ],
)
async def test_control_commands_bad_input(
    capsys: pytest.CaptureFixture[str], clean_env: Path, argv: list[str], fragment: str
) -> None:
    code, _, err = await run(capsys, *argv)
    assert code == 1 and fragment in err and err.count("\n") == 1


async def test_emit_refuses_a_body_file_that_is_not_json(
    capsys: pytest.CaptureFixture[str], clean_env: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    code, _, err = await run(
        capsys,
        "sim",
        "emit",
        "pass.activated",
        "--sim",
        "http://127.0.0.1:1",
        "--api-key",
        "k",
        "--body-file",
        str(bad),
    )
    assert code == 1 and "not valid JSON" in err


# -- sim serve --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_sim_serve_prints_its_urls_and_key_and_stops_on_ctrl_c(clean_env: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletpass_tui", "sim", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        banner = []
        for line in proc.stdout:
            banner.append(line)
            if "Ctrl-C" in line:
                break
        text = "".join(banner)
        url = re.search(r"export WALLETPASS_BASE_URL=(\S+)", text).group(1)  # type: ignore[union-attr]
        key = re.search(r"export WALLETPASS_API_KEY=(sk_sim_\w+)", text).group(1)  # type: ignore[union-attr]
        assert f"export WALLETPASS_REGISTRATION_URL={url}" in text
        assert f"{url}/_sim" in text
        response = httpx.get(
            url + "/api/v0/passTemplates",
            headers={"Authorization": f"Bearer {key}"},
            trust_env=False,
        )
        assert response.status_code == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Simulator stopped." in out
    assert "Traceback" not in err


async def test_sim_serve_reports_a_taken_port(
    capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        code, _, err = await run(capsys, "sim", "serve", "--port", str(port))
    assert code == 1 and "--port" in err and err.count("\n") == 1


def test_sim_deliver_reads_topics_as_every_command_does() -> None:
    from walletpass_tui.cli import build_parser

    args = build_parser().parse_args(
        ["sim", "deliver", "--topic", "activated", "--to", "http://127.0.0.1:9/x", "--secret", "s"]
    )
    assert args.topic == "pass.activated"
