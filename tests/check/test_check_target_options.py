"""``check --header`` and an https receiver with its own CA, against a real app on 127.0.0.1 that
records every request: the added headers reach every case (after the case's own, the signature
headers untouched), are shown and recorded only masked; ``--ca-bundle`` and ``--insecure`` reach an
app whose certificate its own CA signed, and ``--insecure`` says so once.

``main`` runs in this thread; the app serves on a thread of its own (tests/user_app.py).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from peers import LocalCA, local_ca_fixture  # noqa: F401  (the "local_ca" fixture)
from user_app import UserApp, user_app_fixture  # noqa: F401  (the "user_app" fixture)

from walletpass_tui.cli import main

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
TOKEN_VALUE = "app-token-5f2c9e0b7d41a8c3"
StartApp = Callable[..., UserApp]
UNTRUSTED = (
    "the certificate of 127.0.0.1 is not trusted (self-signed or unknown CA): "
    "pass --ca-bundle FILE with your CA, or --insecure"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_adds_the_headers_to_every_case_and_records_them_masked(
    clean_env: Path, capsys: pytest.CaptureFixture[str], user_app: StartApp
) -> None:
    app = user_app()
    code, out, err = run(
        capsys,
        *("check", app.url, "--secret", SECRET, "--topic", "activated", "--json"),
        *("--header", f"Authorization: Bearer {TOKEN_VALUE}"),
        *("--header", "X-Twice: one", "--header", "X-Twice: two"),
    )
    report = json.loads(out)
    assert code == 1  # the app accepts everything, forgeries included: not the point here
    assert report["headers_added"] == [
        ["Authorization", "Bearer …a8c3"],
        ["X-Twice", "…"],
        ["X-Twice", "…"],
    ]
    assert len(app.seen) == len(report["cases"]) > 10
    for seen in app.seen:
        assert seen.values("Authorization") == [f"Bearer {TOKEN_VALUE}"]
        assert seen.values("X-Twice") == ["one", "two"]
        assert len(seen.values("webhook-id")) == 1
        assert len(seen.values("User-Agent")) == 1
    # The signature headers are each case's own: an unsigned case still arrives unsigned.
    unsigned = next(c for c in report["cases"] if c["id"] == "missing-header")
    assert any(
        s.values("webhook-id") == [unsigned["webhook_id"]] and not s.values("webhook-signature")
        for s in app.seen
    )
    assert TOKEN_VALUE not in out + err
    # The history holds what was sent, the added values masked.
    code, shown, _ = run(capsys, "events", "show", report["cases"][0]["webhook_id"], "--json")
    assert code == 0
    assert TOKEN_VALUE not in shown
    for attempt in json.loads(shown)["attempts"]:  # the delivery and its retry
        assert ["Authorization", "Bearer …a8c3"] in attempt["headers"]


def test_check_heading_names_the_added_headers_masked(
    clean_env: Path, capsys: pytest.CaptureFixture[str], user_app: StartApp
) -> None:
    app = user_app()
    _, out, err = run(
        capsys,
        *("check", app.url, "--secret", SECRET, "--topic", "activated", "--no-history"),
        *("--header", f"Authorization: Bearer {TOKEN_VALUE}"),
    )
    lines = out.splitlines()
    assert lines[0].startswith(f"Checking {app.url} with whsec_…")
    assert lines[1] == "  Adding Authorization: Bearer …a8c3."
    assert TOKEN_VALUE not in out + err


@pytest.mark.parametrize("how", ["default", "ca-bundle", "insecure"])
def test_check_of_an_https_app_with_its_own_ca(
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
    user_app: StartApp,
    local_ca: LocalCA,
    how: str,
) -> None:
    app = user_app(tls=local_ca.leaf.server_context())
    flags = {
        "default": [],
        "ca-bundle": ["--ca-bundle", str(local_ca.ca)],
        "insecure": ["--insecure"],
    }
    code, out, err = run(
        capsys,
        *("check", app.url, "--secret", SECRET, "--topic", "activated", "--json", "--no-history"),
        *flags[how],
    )
    report = json.loads(out)
    errors = {case["answer"]["error"] for case in report["cases"]}
    warnings = [line for line in err.splitlines() if "--insecure:" in line]
    if how == "default":
        assert code == 1 and app.seen == []
        assert errors == {UNTRUSTED}
    else:
        assert errors == {None}
        assert len(app.seen) == len(report["cases"])
    expected = [f"warning: --insecure: certificates are not verified for {app.url}"]
    assert warnings == (expected if how == "insecure" else [])
