"""``walletpass-tui check`` end to end: real sample receivers on 127.0.0.1, the real command line."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sample_receivers as samples
from sample_receivers import SECRET

from walletpass_tui.cli import main
from walletpass_tui.config import Settings
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.store import Store

OTHER_SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["check", *argv])
    except SystemExit as exc:  # argparse refuses a malformed argument this way (status 2)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


async def _history(home: Path) -> list[Any]:
    async with await Store.open(Settings(home=home).database_path) as store:
        return await store.list_messages(limit=100)


def history(home: Path) -> list[Any]:
    return asyncio.run(_history(home))


def test_a_correct_receiver_passes_and_each_case_is_in_the_history(
    clean_env: Path, serve_in_thread: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve_in_thread(samples.correct())
    code, out, err = run(capsys, served.url, "--secret", SECRET)

    assert code == 0, err
    assert err == ""
    assert SECRET not in out and SECRET[6:] not in out  # masked: whsec_…LaSw
    assert "whsec_…" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("CASE"))
    rows = lines[header + 1 : header + 16]
    assert len(rows) == 15 and all("  pass  " in row for row in rows)
    assert "15 passed, 0 failed, 0 warnings: every must-pass case passed." in out
    assert served.hits == 15
    # 14 messages: the retry is a second attempt of the first one.
    assert len(history(clean_env)) == 14


def test_json_for_ci_and_exit_1_when_forgeries_are_accepted(
    clean_env: Path, serve_in_thread: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve_in_thread(samples.accepts_everything())
    code, out, _ = run(capsys, served.url, "--secret", SECRET, "--json", "--no-history")

    assert code == 1
    doc = json.loads(out)
    assert doc["passed"] is False and doc["exit_code"] == 1
    assert doc["counts"] == {"pass": 9, "fail": 4, "warn": 2}
    assert doc["secret"].startswith("whsec_…") and SECRET not in out
    failed = {c["id"] for c in doc["cases"] if c["verdict"] == "fail"}
    assert failed == {"wrong-secret", "changed-byte", "missing-header", "empty-signature"}
    wrong = next(c for c in doc["cases"] if c["id"] == "wrong-secret")
    assert wrong["answer"]["status"] == 200 and wrong["answer"]["body"] == "ok"
    assert wrong["must_pass"] is True and wrong["expected"] == "refuse"
    assert not Settings(home=clean_env).database_path.exists()  # --no-history


def test_the_secret_and_topics_of_a_local_endpoint(
    clean_env: Path, serve_in_thread: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    EndpointRegistry(clean_env / "endpoints.json").import_endpoint(
        "ep_3f2a9c", "https://hooks.example/webhooks", ["pass.deactivated"], OTHER_SECRET
    )
    served = serve_in_thread(samples.correct(OTHER_SECRET))
    code, out, err = run(capsys, served.url, "--endpoint", "ep_3f2a9c", "--json")

    assert code == 0, err
    doc = json.loads(out)
    assert doc["endpoint_id"] == "ep_3f2a9c" and doc["topics"] == ["pass.deactivated"]
    assert [c["id"] for c in doc["cases"]][:2] == ["valid-pass.deactivated", "duplicate"]
    assert OTHER_SECRET not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["localhost:3000/webhooks", "--secret", SECRET], "must start with http:// or https://"),
        (["http://user:pw@127.0.0.1:9/x", "--secret", SECRET], "user name or password"),
        (["{url}", "--secret", "whsec_!!not-base64"], "not valid base64"),
        (["{url}"], "set WALLETPASS_SECRET, give --secret-file PATH or --secret -"),
        (["{url}", "--secret", SECRET, "--endpoint", "ep_x"], "not both"),
        (["{url}", "--secret", SECRET, "--secret", SECRET], "Give one --secret"),
        (["{url}", "--endpoint", "ep_nothere"], "No endpoint 'ep_nothere' is known locally"),
        (["{url}", "--secret", SECRET, "--topic", "pass.bogus"], "Unknown topic"),
        (["{url}", "--secret", SECRET, "--timeout", "0"], "is not a number more than 0"),
    ],
)
def test_usage_errors_exit_2_before_anything_is_sent(
    clean_env: Path,
    serve_in_thread: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    served = serve_in_thread(samples.accepts_everything())
    args = [a.replace("{url}", served.url) for a in argv]
    code, _, err = run(capsys, *args)

    assert code == 2
    last = err.strip().splitlines()[-1]  # argparse may print the usage above it
    assert last.startswith("walletpass-tui") and "error: " in last and message in last
    assert "Traceback" not in err
    assert served.hits == 0
    assert SECRET not in err


def test_nothing_listening_is_one_clear_failure(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, out, _ = run(capsys, f"http://127.0.0.1:{port}/webhooks", "--secret", SECRET)

    assert code == 1
    assert "Nothing answered at http://127.0.0.1:" in out and "no answer" not in out
    assert "Start your app, or check the URL, and run the check again." in out
