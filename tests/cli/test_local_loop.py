"""The first hour, with nothing to restate: ``listen`` in one shell and ``trigger activated`` in
another give a verified delivery with no flag and no environment. Each home has a test secret,
made once (0600), shown masked, printed whole on request; ``trigger``, ``sim deliver`` and
``check`` sign with it when they send to this home's receiver.

The processes run in a home of their own: ``HOME`` points into ``tmp_path`` (where the platform's
data directory is) and no ``WALLETPASS_*`` variable is set. ``listen`` is given ``--port 0`` so
two test runs never fight over 8787; ``trigger`` finds whatever port it got from the receiver's
state file, with no flag at all.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from process_helpers import DEADLINE_S, Lines

from walletpass_tui.config.secrets import mask_secret
from walletpass_tui.webhooks.verify import sign

pytestmark = pytest.mark.slow


@pytest.fixture
def fresh_env(tmp_path: Path) -> dict[str, str]:
    """A user with nothing set up: a new HOME, no WALLETPASS_* and no XDG directories."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WALLETPASS_", "XDG_")) and k != "HOME"
    }
    env["HOME"] = str(tmp_path / "user")
    return env


def data_dir(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".local" / "share" / "walletpass-tui"


def run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S * 2,
        stdin=subprocess.DEVNULL,
    )


class Listening:
    def __init__(self, env: dict[str, str], *argv: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", "listen", "--port", "0", "--json", *argv],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.out = Lines(self.proc.stdout)
        self.err = Lines(self.proc.stderr)
        self.announced = []
        while True:
            line = self.err.next()
            self.announced.append(line)
            if line.startswith("History:"):
                break

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=DEADLINE_S)


@pytest.fixture
def listening(fresh_env: dict[str, str]) -> object:
    started: list[Listening] = []

    def start(*argv: str) -> Listening:
        started.append(Listening(fresh_env, *argv))
        return started[-1]

    yield start
    for proc in started:
        proc.stop()


def test_listen_then_trigger_with_no_flags_is_a_verified_delivery(
    fresh_env: dict[str, str], listening: object
) -> None:
    receiver = listening()  # type: ignore[operator]
    secret_file = data_dir(fresh_env) / "test-secret"
    secret = secret_file.read_text().strip()
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    verifying = next(line for line in receiver.announced if line.startswith("Verifying with:"))
    assert f"{mask_secret(secret)} (this home's test secret)" in verifying
    assert secret not in "\n".join(receiver.announced)
    assert "Send a test delivery: walletpass-tui trigger activated" in receiver.announced

    sent = run(fresh_env, "trigger", "activated")
    assert sent.returncode == 0, sent.stderr
    assert "-> 200 OK" in sent.stdout and secret not in sent.stdout + sent.stderr
    line = json.loads(receiver.out.next())
    assert (line["verdict"], line["topic"]) == ("verified", "pass.activated")

    shown = run(fresh_env, "events", "show", "last", "--json")
    assert json.loads(shown.stdout)["webhook_id"] == line["webhook_id"]


def test_the_test_secret_is_made_once_and_printed_on_request(
    fresh_env: dict[str, str], listening: object
) -> None:
    printed = run(fresh_env, "listen", "--print-secret")
    assert printed.returncode == 0 and printed.stderr == ""
    secret = printed.stdout.strip()
    assert secret.startswith("whsec_") and printed.stdout == secret + "\n"
    assert run(fresh_env, "listen", "--print-secret").stdout.strip() == secret  # made once
    receiver = listening()  # type: ignore[operator]
    assert any(mask_secret(secret) in line for line in receiver.announced)


def test_a_removed_test_secret_is_never_made_anew_under_a_running_receiver(
    fresh_env: dict[str, str], listening: object
) -> None:
    """The receiver verifies with the secret it read at its start: a new one printed for an app,
    or signed with by trigger, would only get 401s. Restarting it makes the new one."""
    receiver = listening()  # type: ignore[operator]
    secret_file = data_dir(fresh_env) / "test-secret"
    secret_file.unlink()
    pid = receiver.proc.pid
    for argv in (("listen", "--print-secret"), ("listen", "--port", "0")):
        refused = run(fresh_env, *argv)
        assert refused.returncode == 1 and refused.stdout == "", (argv, refused.stderr)
        assert refused.stderr.startswith(
            f"walletpass-tui: error: The receiver running on this home (listen, pid {pid}, "
        )
        assert refused.stderr.endswith(
            f"verifies with a test secret whose file {secret_file} was removed; stop it and "
            "start it again to make a new one.\n"
        )
        assert not secret_file.exists()
    sent = run(fresh_env, "trigger", "activated")
    assert sent.returncode == 2 and "restart its receiver to make one" in sent.stderr
    receiver.stop()
    printed = run(fresh_env, "listen", "--print-secret")
    assert printed.returncode == 0 and printed.stdout.strip() == secret_file.read_text().strip()


def test_trigger_and_check_use_it_only_for_this_homes_receiver(
    fresh_env: dict[str, str], listening: object
) -> None:
    receiver = listening()  # type: ignore[operator]
    state = json.loads((data_dir(fresh_env) / "run" / "receiver.json").read_text())
    url = state["url"]
    # Named by its URL (localhost for 127.0.0.1 too), it is still this home's receiver.
    as_localhost = url.replace("127.0.0.1", "localhost")
    assert run(fresh_env, "trigger", "deactivated", "--to", as_localhost).returncode == 0
    assert json.loads(receiver.out.next())["verdict"] == "verified"
    # Any other receiver needs its own secret.
    other = run(fresh_env, "trigger", "activated", "--to", "http://127.0.0.1:9/webhooks")
    assert other.returncode == 2 and "Give the signing secret" in other.stderr
    # The check, against this home's receiver, signs with it: a correct receiver passes.
    checked = run(fresh_env, "check", url, "--topic", "activated", "--json")
    report = json.loads(checked.stdout)
    assert checked.returncode == 0 and report["passed"], checked.stdout[-2000:]
    assert report["secret"] == mask_secret(
        (data_dir(fresh_env) / "test-secret").read_text().strip()
    )


def test_an_exported_secret_does_not_stop_this_homes_receiver_verifying_trigger(
    fresh_env: dict[str, str], listening: object, tmp_path: Path
) -> None:
    """A WALLETPASS_SECRET exported for an app of yours, in the shell that runs ``trigger`` but
    not ``listen``'s: to this home's receiver the delivery is still signed with the test secret
    (the one that receiver always verifies with), and the line says so. A secret given by a flag
    is used as given; the 401 it gets names it, masked, and where it came from."""
    receiver = listening()  # type: ignore[operator]
    test_secret = (data_dir(fresh_env) / "test-secret").read_text().strip()
    yours = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"  # not the receiver's
    exported = {**fresh_env, "WALLETPASS_SECRET": yours}

    sent = run(exported, "trigger", "activated")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines()[0] == (
        f"Signing with: {mask_secret(test_secret)} (this home's test secret; "
        "$WALLETPASS_SECRET is for other receivers)"
    )
    assert json.loads(receiver.out.next())["verdict"] == "verified"

    secret_file = tmp_path / "yours"
    secret_file.write_text(yours + "\n")
    secret_file.chmod(0o600)
    refused = run(fresh_env, "trigger", "activated", "--secret-file", str(secret_file))
    assert refused.returncode == 1
    assert json.loads(receiver.out.next())["verdict"] == "rejected"
    assert refused.stderr == (
        f"walletpass-tui: error: The receiver answered 401 to a delivery signed with "
        f"{mask_secret(yours)} (--secret-file {secret_file}): if it verifies with another "
        "secret, give that one ($WALLETPASS_SECRET, --secret-file PATH or --secret -); the "
        "service would count this as a failed attempt and retry in 5 s.\n"
    )
    assert yours not in refused.stdout + refused.stderr + sent.stdout + sent.stderr
    # The check of this home's receiver signs the same way.
    checked = run(exported, "check", receiver_url(fresh_env), "--topic", "activated", "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["passed"], checked.stdout[-2000:]


def totals(env: dict[str, str]) -> tuple[int, dict[str, int]]:
    stats = run(env, "events", "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    counted = json.loads(stats.stdout)["totals"]
    return counted["attempts"], counted["verdicts"]


def test_a_check_of_this_homes_receiver_is_never_counted_nor_last(
    fresh_env: dict[str, str], listening: object
) -> None:
    """The receiver's copies of the check's requests (forgeries among them) are the check's, not
    deliveries: kept, never counted, never ``last``, with ``--no-history`` too. A sender cannot
    have its posts left out that way: the mark is made from the home's test secret."""
    receiver = listening()  # type: ignore[operator]
    url = receiver_url(fresh_env)
    assert run(fresh_env, "trigger", "activated", "--id", "msg_real").returncode == 0
    assert json.loads(receiver.out.next())["webhook_id"] == "msg_real"
    assert totals(fresh_env) == (1, {"verified": 1, "rejected": 0})

    checked = run(fresh_env, "check", url, "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["passed"], checked.stdout[-2000:]
    copies = [json.loads(receiver.out.next()) for _ in json.loads(checked.stdout)["cases"]]
    assert {c["verdict"] for c in copies} == {"verified", "rejected"}  # forgeries among them
    assert all(c["note"].startswith("check copy:") for c in copies), copies
    assert totals(fresh_env) == (1, {"verified": 1, "rejected": 0})
    for what in ("show", "replay"):  # a replay of it to this receiver: its attempt #2
        shown = run(fresh_env, "events", what, "last", "--json")
        assert shown.returncode == 0, shown.stderr
        assert "msg_real" in shown.stdout
    assert json.loads(receiver.out.next())["webhook_id"] == "msg_real"
    assert totals(fresh_env) == (2, {"verified": 2, "rejected": 0})
    assert run(fresh_env, "check", url, "--no-history").returncode == 0
    assert totals(fresh_env) == (2, {"verified": 2, "rejected": 0})

    # A sender's post with a made-up mark is counted like any other.
    secret = (data_dir(fresh_env) / "test-secret").read_text().strip()
    body = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'
    headers = {**sign(secret, "msg_marked", body, datetime.now(UTC)), "Walletpass-Check": "0" * 32}
    with httpx.Client(timeout=DEADLINE_S, trust_env=False) as client:
        assert client.post(url, content=body, headers=headers).status_code == 200
    assert totals(fresh_env) == (3, {"verified": 3, "rejected": 0})
    shown = run(fresh_env, "events", "show", "last", "--json")
    assert json.loads(shown.stdout)["webhook_id"] == "msg_marked"


def receiver_url(env: dict[str, str]) -> str:
    return str(json.loads((data_dir(env) / "run" / "receiver.json").read_text())["url"])


def test_trigger_with_no_receiver_on_the_home_says_how_to_start_one(
    fresh_env: dict[str, str],
) -> None:
    sent = run(fresh_env, "trigger", "activated")
    assert sent.returncode == 1
    assert sent.stderr.startswith("walletpass-tui: error: No receiver runs on this home")
    assert "walletpass-tui listen" in sent.stderr and "--to URL" in sent.stderr
    assert sent.stderr.count("\n") == 1


def test_the_quick_start_loop_listen_trigger_show_replay(
    fresh_env: dict[str, str], listening: object
) -> None:
    """The README's loop: an app verifying with the test secret, ``listen --forward-to`` it,
    then ``trigger activated``, ``events show last`` and ``events replay last`` with nothing
    else: the app gets the delivery and its replay, both verified."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from standardwebhooks.webhooks import Webhook, WebhookVerificationError

    hook = Webhook(run(fresh_env, "listen", "--print-secret").stdout.strip())
    got: list[tuple[str, bool]] = []

    class YourApp(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            try:
                hook.verify(body, {k.lower(): v for k, v in self.headers.items()})
                got.append((self.headers["webhook-id"], True))
            except WebhookVerificationError:
                got.append((self.headers["webhook-id"], False))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:  # quiet
            pass

    app = ThreadingHTTPServer(("127.0.0.1", 0), YourApp)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    try:
        app_url = f"http://127.0.0.1:{app.server_address[1]}/webhooks"
        receiver = listening("--forward-to", app_url)  # type: ignore[operator]
        assert run(fresh_env, "trigger", "activated").returncode == 0
        msg_id = json.loads(receiver.out.next())["webhook_id"]
        receiver.out.until(lambda line: '"forward"' in line)  # forwarded to the app
        shown = run(fresh_env, "events", "show", "last")
        assert shown.returncode == 0 and msg_id in shown.stdout
        replayed = run(fresh_env, "events", "replay", "last")
        assert replayed.returncode == 0, replayed.stderr
        assert f"Replayed {msg_id} #1 (resign) to {app_url}: 204" in replayed.stdout
    finally:
        app.shutdown()
    assert got == [(msg_id, True), (msg_id, True)]


def test_with_no_app_a_replay_is_a_redelivery_to_the_receiver(
    fresh_env: dict[str, str], listening: object
) -> None:
    """No flag anywhere: ``events replay last`` sends the delivery again to this home's
    receiver, as the service's retry would: attempt #2 of the same message, verified."""
    receiver = listening()  # type: ignore[operator]
    assert run(fresh_env, "trigger", "activated").returncode == 0
    first = json.loads(receiver.out.next())
    replayed = run(fresh_env, "events", "replay", "last")
    assert replayed.returncode == 0, replayed.stderr
    second = json.loads(receiver.out.next())
    assert second["webhook_id"] == first["webhook_id"]
    assert (second["attempt"], second["verdict"]) == (2, "verified")


def forge(url: str, msg_id: str) -> int:
    """What anyone who can reach the receiver can post: a signature no secret made."""
    import time

    import httpx

    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(time.time())),
        "webhook-signature": "v1,AAAA",
    }
    return httpx.post(url, headers=headers, content=b'{"type":"pass.activated"}').status_code


def test_a_forgery_posted_after_a_delivery_is_not_what_replay_last_sends(
    fresh_env: dict[str, str], listening: object
) -> None:
    """``events show last`` shows the newest post whatever its verdict; ``events replay last``
    sends the newest verified delivery again and says which newer post it left out and why; the
    forgery named by its id is refused in one sentence saying it was rejected."""
    receiver = listening()  # type: ignore[operator]
    assert run(fresh_env, "trigger", "activated", "--id", "msg_good").returncode == 0
    assert json.loads(receiver.out.next())["verdict"] == "verified"
    assert forge(receiver_url(fresh_env), "msg_forged") == 401
    assert json.loads(receiver.out.next())["verdict"] == "rejected"

    shown = run(fresh_env, "events", "show", "last", "--json")
    assert json.loads(shown.stdout)["webhook_id"] == "msg_forged"

    replayed = run(fresh_env, "events", "replay", "last")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stderr == (
        "Replaying msg_good, the newest verified delivery; a newer post, msg_forged, was "
        "rejected (no signature matches): give its webhook-id to replay that one.\n"
    )
    assert "Replayed msg_good #1 (resign)" in replayed.stdout
    redelivered = json.loads(receiver.out.next())
    assert (redelivered["webhook_id"], redelivered["verdict"]) == ("msg_good", "verified")

    named = run(fresh_env, "events", "replay", "msg_forged")
    assert named.returncode == 1
    assert named.stderr == (
        "walletpass-tui: error: msg_forged #1 was rejected (no signature matches) and no secret "
        "known here made its signature, so there is none to re-sign it with: give one "
        "(WALLETPASS_SECRET, --secret-file or --secret -), or use --mode original to send it "
        "exactly as it came.\n"
    )


def test_replay_last_with_only_forgeries_in_the_history_names_the_newest(
    fresh_env: dict[str, str], listening: object
) -> None:
    receiver = listening()  # type: ignore[operator]
    assert forge(receiver_url(fresh_env), "msg_forged") == 401
    assert json.loads(receiver.out.next())["verdict"] == "rejected"
    replayed = run(fresh_env, "events", "replay", "last")
    assert replayed.returncode == 1 and replayed.stderr.count("\n") == 1
    assert replayed.stderr.startswith(
        "walletpass-tui: error: Nothing in the history was verified, so there is no last "
        "delivery to replay: the newest post, msg_forged, was rejected (no signature matches);"
    )
    assert "--mode original" in replayed.stderr
