"""Every class of bad input gets one clear line and the right exit status, refused before anything
is sent or recorded: URLs, topics, numbers, files, closed pipes, a prune that would empty history.

``main`` runs in a thread (it owns its event loop) while stand-in servers answer on the test's.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.cli import main
from walletpass_tui.cli.common import bounded_int, forward_to_arg
from walletpass_tui.cli.time_args import MAX_DURATION_S, duration_arg
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import sign

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
API_KEY = "wp_live_Q7f3kLm9Xc2Vb8Nn1Zr5Tt0Yw4Hh6Jd"
ROOT = Path(__file__).resolve().parents[2]


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, *fragments: str) -> str:
    assert "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "error:" in line, err
    for fragment in fragments:
        assert fragment in line, line
    return line


def attempt(msg_id: str, topic: str | None = "pass.activated", age_s: float = 0) -> Attempt:
    when = time.time() - age_s
    body = json.dumps({"type": topic, "data": {"passId": "p1"}}).encode()
    headers = sign(SECRET, msg_id, body, datetime.fromtimestamp(when, UTC))
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


async def seed(home: Path, *attempts: Attempt) -> None:
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for a in attempts:
            await store.record(a)
        await store.settled()


async def forwards(home: Path, msg_id: str) -> list[Any]:
    async with await Store.open(home / "deliveries.sqlite3") as store:
        return await store.forwards_for_message(msg_id)


# -- URLs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://[::1", "not a valid URL"),
        ("http://127.0.0.1:99999", "from 1 to 65535"),
        ("http://host:1:5", "from 1 to 65535"),
        ("https://user:pw@h.example", "user name or password"),
        ("https://h.example/#x", "#fragment"),
    ],
)
async def test_bad_base_urls_are_usage_errors(
    clean_env: Path, capsys: pytest.CaptureFixture[str], url: str, fragment: str
) -> None:
    code, _, err = await run(capsys, "templates", "--base-url", url)
    assert code == 2
    one_error_line(err, "--base-url", fragment)
    assert "pw@" not in err


async def test_a_bad_url_in_the_environment_is_one_line(
    clean_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WALLETPASS_BASE_URL", "http://[::1")
    code, _, err = await run(capsys, "config", "show")
    assert code == 1
    one_error_line(err, "base_url", "WALLETPASS_BASE_URL", "not a valid URL")


async def test_replay_to_ftp_is_refused_and_nothing_is_recorded(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, attempt("msg_1"))
    code, _, err = await run(
        capsys, "events", "replay", "msg_1", "--to", "ftp://h.example/x", "--secret", SECRET
    )
    assert code == 2
    one_error_line(err, "--to", "http:// or https://")
    assert await forwards(clean_env, "msg_1") == []


async def test_create_warns_that_a_local_address_cannot_be_reached(
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
    start_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooks = await start_server()
    url = "http://127.0.0.1:8787/webhooks"
    answer = {
        "id": "ep_1", "secret": SECRET, "url": url, "enabledTopics": ["pass.activated"],
        "enabled": True, "createdAt": "2025-06-01T12:00:00.123Z",
    }  # fmt: skip
    hooks.answer("POST", "/v0/webhookEndpoints", json=answer)
    monkeypatch.setenv("WALLETPASS_REGISTRATION_URL", hooks.url)
    monkeypatch.setenv("WALLETPASS_API_KEY", API_KEY)
    code, _, err = await run(
        capsys, "endpoints", "create", "--allow-http", "--url", url, "--topic", "activated"
    )
    assert code == 0, err
    assert "cannot reach it" in err
    assert hooks.requests[0].json()["enabledTopics"] == ["pass.activated"]


async def test_create_checks_the_data_directory_before_it_posts(
    clean_env: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    start_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooks = await start_server()
    monkeypatch.setenv("WALLETPASS_REGISTRATION_URL", hooks.url)
    monkeypatch.setenv("WALLETPASS_API_KEY", API_KEY)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("WALLETPASS_HOME", str(blocker / "home"))  # cannot be created
    config = tmp_path / "config.toml"
    config.write_text("")
    code, _, err = await run(
        capsys, "endpoints", "create", "--url", "https://h.example/wh", "--topic", "activated",
        "--config", str(config),
    )  # fmt: skip
    assert code == 1
    one_error_line(err, "Cannot write", "--home")
    assert hooks.requests == [], "nothing is created when its secret could not be stored"


# -- topics --------------------------------------------------------------------------------------


async def test_short_and_full_topic_names_filter_the_same(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, attempt("msg_a"), attempt("msg_d", "pass.deactivated"))
    outputs = []
    for topic in ("activated", "pass.activated"):
        code, out, err = await run(capsys, "events", "list", "--topic", topic, "--json")
        assert code == 0, err
        outputs.append([m["webhook_id"] for m in json.loads(out)])
    assert outputs == [["msg_a"], ["msg_a"]]


@pytest.mark.parametrize(
    "argv",
    [
        ["events", "list", "--topic", "pass.bogus"],
        ["events", "export", "--topic", "pass.bogus"],
        ["listen", "--forward-to", "pass.bogus=http://127.0.0.1:3000/hook"],
        ["--forward-to", "bogus=http://127.0.0.1:3000/hook", "--version"],
        ["endpoints", "create", "--url", "https://h.example/wh", "--topic", "pass.bogus"],
        ["trigger", "pass.bogus", "--to", "http://127.0.0.1:9/x", "--secret", SECRET],
    ],
)
async def test_unknown_topics_are_usage_errors(
    clean_env: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = await run(capsys, *argv)
    assert code == 2
    one_error_line(err, "Unknown topic", "pass.activated and pass.deactivated")


def test_forward_to_takes_either_topic_spelling() -> None:
    url = "http://127.0.0.1:3000/hook"
    assert forward_to_arg(f"activated={url}") == f"pass.activated={url}"
    assert forward_to_arg(url) == url


async def test_deliveries_without_a_topic_are_listed_as_topic_unknown(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, attempt("msg_none", topic=None))
    code, out, _ = await run(capsys, "events", "list")
    assert code == 0 and "topic unknown" in out
    code, out, _ = await run(capsys, "events", "show", "msg_none")
    assert code == 0 and "topic:    topic unknown" in out


# -- numbers and durations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["events", "list", "--limit", "99999999999999999999"], "from 1 to 100000"),
        (["events", "list", "--limit", "0"], "from 1 to 100000"),
        (["events", "prune", "--older-than", "99999999999999999999d"], "longer than 100 years"),
        (["events", "prune", "--older-than", "soon"], "neither a duration nor"),
        (["events", "prune", "--older-than", "40000w"], "longer than 100 years"),
        (["listen", "--port", "70000"], "from 0 to 65535"),
        # Numbers are ASCII digits: int() and float() also take every script's digits.
        (["listen", "--port", "\u0668\u0660\u0668\u0660"], "from 0 to 65535"),
        (["events", "list", "--limit", "\uff15"], "from 1 to 100000"),
        (["events", "list", "--limit", "+5"], "from 1 to 100000"),
        (["listen", "--delay", "\u0661.5"], "from 0 and at most 60"),
        (["listen", "--delay", "nan"], "from 0 and at most 60"),
        (["listen", "--delay", "1e1"], "from 0 and at most 60"),
        (["listen", "--max-body", "0"], "from 1 to"),
        (["listen", "--delay", "-1"], "from 0 and at most 60"),
        (["listen", "--respond", "101"], "from 200 to 599"),  # 1xx is no answer to a delivery
        (["listen", "--respond", "100"], "from 200 to 599"),
        (["--respond", "199"], "from 200 to 599"),  # the dashboard
        (
            [
                "trigger",
                "activated",
                "--to",
                "http://127.0.0.1:9/x",
                "--secret",
                SECRET,
                "--timeout",
                "0",
            ],
            "more than 0 and at most 3600",
        ),
    ],
)
async def test_numbers_are_bounded_when_parsed(
    clean_env: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, _, err = await run(capsys, *argv)
    assert code == 2
    one_error_line(err, fragment)


@given(st.text(max_size=30))
def test_bounded_numbers_and_durations_parse_or_refuse_with_their_range(text: str) -> None:
    parse = bounded_int(1, 100_000)
    try:
        assert 1 <= parse(text) <= 100_000
    except argparse.ArgumentTypeError as exc:
        assert "from 1 to 100000" in str(exc)
    try:
        assert 0 <= duration_arg(text) <= MAX_DURATION_S
    except argparse.ArgumentTypeError as exc:
        assert "duration" in str(exc) or "100 years" in str(exc)


@pytest.mark.parametrize(
    ("path", "instead"), [("/a/../b", "/b"), ("/./x", "/x"), ("/hooks/..", "/"), ("/a/.", "/a/")]
)
async def test_a_receiver_path_with_a_dot_segment_is_refused_with_the_one_clients_reach(
    clean_env: Path, capsys: pytest.CaptureFixture[str], path: str, instead: str
) -> None:
    """Every HTTP client removes dot segments before it sends: /a/../b is posted to /b, so the
    URL listen would print could never be reached."""
    config = f'[receiver]\npath = "{path}"\n'
    await asyncio.to_thread(clean_env.mkdir)
    await asyncio.to_thread((clean_env / "config.toml").write_text, config)
    for argv in (["listen", "--port", "0", "--path", path], ["config", "show"], ["listen"]):
        code, _, err = await run(capsys, *argv)
        assert code == 1
        one_error_line(err, f"The receiver path '{path}' has a '.' or '..' segment")
        one_error_line(err, f"give '{instead}' instead")
    assert not (clean_env / "run").exists()  # refused before a receiver started


# -- files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(b"port = 8787\n\xff\xfe\n", "not UTF-8"), (b"port = [\n", "not valid TOML")],
)
async def test_a_config_file_that_is_not_utf8_or_toml(
    clean_env: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    fragment: str,
) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(content)
    code, _, err = await run(capsys, "config", "show", "--config", str(config))
    assert code == 1
    one_error_line(err, fragment, str(config))


@pytest.mark.skipif(not Path("/dev/urandom").exists(), reason="needs /dev/urandom")
async def test_an_endless_body_file_is_refused_after_the_body_limit(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, attempt("msg_1"))
    code, _, err = await run(
        capsys, "events", "replay", "msg_1", "--to", "http://127.0.0.1:9/x",
        "--body-file", "/dev/urandom", "--secret", SECRET,
    )  # fmt: skip
    assert code == 2
    one_error_line(err, "/dev/urandom", "larger than 1048576 bytes")
    assert await forwards(clean_env, "msg_1") == []


# -- a prune that would empty the history ---------------------------------------------------------


async def test_pruning_everything_asks_and_needs_yes_without_a_terminal(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, attempt("msg_1", age_s=60), attempt("msg_2", age_s=30))
    code, _, err = await run(capsys, "events", "prune", "--older-than", "0")
    assert code == 2
    one_error_line(err, "all 2 attempt(s)", "--yes")
    code, out, err = await run(capsys, "events", "prune", "--older-than", "0", "--yes")
    assert code == 0, err
    assert "Removed 2 attempt(s)" in out


async def test_a_partial_prune_does_not_ask(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, attempt("msg_old", age_s=3 * 86400), attempt("msg_new"))
    code, out, err = await run(capsys, "events", "prune", "--older-than", "1d")
    assert code == 0, err
    assert "Removed 1 attempt(s)" in out


# -- closed pipes --------------------------------------------------------------------------------


async def closed_pipe_run(*argv: str, env: dict[str, str]) -> tuple[int, bytes]:
    """Run the command with its stdout a pipe whose reader has already gone away."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "walletpass_tui", *argv,
            stdout=write_fd, stderr=asyncio.subprocess.PIPE, env=env, cwd=ROOT,
        )  # fmt: skip
    finally:
        os.close(write_fd)
    _, err = await proc.communicate()
    return proc.returncode or 0, err


async def test_writing_to_a_closed_pipe_ends_quietly(clean_env: Path) -> None:
    await seed(clean_env, *(attempt(f"msg_{i}") for i in range(50)))
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    for argv in (["events", "list"], ["events", "export"], ["config", "show", "--json"]):
        code, err = await closed_pipe_run(*argv, env=env)
        assert (code, err) == (0, b""), (argv, err)


async def test_endpoints_create_into_a_closed_pipe_keeps_the_secret(
    clean_env: Path, start_server: Any
) -> None:
    hooks = await start_server()
    answer = {
        "id": "ep_pipe", "secret": SECRET, "url": "https://h.example/wh",
        "enabledTopics": ["pass.activated"], "enabled": True,
        "createdAt": "2025-06-01T12:00:00.123Z",
    }  # fmt: skip
    hooks.answer("POST", "/v0/webhookEndpoints", json=answer)
    env = {**os.environ, "WALLETPASS_REGISTRATION_URL": hooks.url, "WALLETPASS_API_KEY": API_KEY}
    code, err = await closed_pipe_run(
        "endpoints", "create", "--url", "https://h.example/wh", "--topic", "activated", env=env
    )
    assert code == 0 and b"Traceback" not in err, err
    [stored] = EndpointRegistry(clean_env / "endpoints.json").load()
    assert (stored.id, stored.secret.reveal()) == ("ep_pipe", SECRET)
