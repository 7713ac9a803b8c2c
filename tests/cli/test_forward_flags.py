"""A real ``listen`` process forwarding to a real app on 127.0.0.1: the headers it adds
(``--header``, shown only masked), an https app with its own CA (``--ca-bundle``,
``--insecure`` and its one warning), and your app's answer on the line below each forward (escaped,
cut at 200 characters) and whole in ``--json``.

Each test starts its own ``listen`` on a free port with its own home (``clean_env``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from peers import LocalCA, local_ca_fixture  # noqa: F401  (the "local_ca" fixture)
from process_helpers import SECRET, Proc, free_port, post
from standardwebhooks.webhooks import Webhook
from user_app import UserApp, user_app_fixture  # noqa: F401  (the "user_app" fixture)

TOKEN_VALUE = "app-token-5f2c9e0b7d41a8c3"
AUTHORIZATION = f"Authorization: Bearer {TOKEN_VALUE}"
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_0001"}}'
ANSI = b"thanks \x1b[31mred\x1b[0m \x1b]0;title\x07 done"
BIG = (b"0123456789abcdef" * 640)[: 10 * 1024]  # 10 KiB
StartApp = Callable[..., UserApp]


@pytest.fixture
def listening(clean_env: Path) -> Iterator[Callable[..., tuple[Proc, str, list[str]]]]:
    """``start(*flags, json=False)``: a listen process forwarding as told; (it, its URL, the lines
    it announced up to ``History:``)."""
    started: list[Proc] = []

    def start(*flags: str, as_json: bool = False) -> tuple[Proc, str, list[str]]:
        port = free_port()
        argv = ["listen", "--port", str(port), "--secret", SECRET, *flags]
        proc = Proc(*argv, *(["--json"] if as_json else []))
        started.append(proc)
        info = proc.err if as_json else proc.out
        info.until(lambda line: line.startswith("History:"))
        return proc, f"http://127.0.0.1:{port}/webhooks", list(info.seen)

    yield start
    for proc in started:
        proc.kill()


def _forward_line(proc: Proc, msg_id: str) -> str:
    return proc.out.until(lambda line: f"-> {msg_id} forwarded to" in line)


def test_listen_adds_the_forward_headers_and_never_shows_their_values(
    listening: Callable[..., tuple[Proc, str, list[str]]], user_app: StartApp
) -> None:
    app = user_app()
    proc, url, announced = listening(
        "--forward-to",
        app.url,
        "--header",
        AUTHORIZATION,
        "-H",
        "X-Twice: one",
        "--forward-header",  # the name it had, kept as an alias
        "X-Twice: two",
    )
    forwarding = next(line for line in announced if line.startswith("Forwarding"))
    assert forwarding == (
        f"Forwarding every topic to {app.url} (after storing); adding Authorization: Bearer "
        "…a8c3, X-Twice: …, X-Twice: …"
    )
    assert post(url, "msg_headers", BODY) == 200
    [seen] = app.wait_for(1)
    assert seen.values("Authorization") == [f"Bearer {TOKEN_VALUE}"]
    assert seen.values("X-Twice") == ["one", "two"]
    assert seen.values("webhook-id") == ["msg_headers"]
    Webhook(SECRET).verify(seen.body, dict(seen.headers))
    _forward_line(proc, "msg_headers")
    assert proc.interrupt() == 0
    said = "\n".join([*proc.out.seen, *proc.out.rest(), *proc.err.seen, *proc.err.rest()])
    assert TOKEN_VALUE not in said and TOKEN_VALUE[-12:] not in said


def test_listen_shows_the_start_of_your_apps_answer_escaped_on_the_line_below(
    listening: Callable[..., tuple[Proc, str, list[str]]], user_app: StartApp
) -> None:
    app = user_app(answers=[ANSI, BIG])
    proc, url, _ = listening("--forward-to", app.url)
    assert post(url, "msg_ansi", BODY) == 200
    line = _forward_line(proc, "msg_ansi")
    assert ": 200 in " in line
    answer = proc.out.next()
    assert answer == "     thanks \\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 done"
    assert post(url, "msg_big", BODY) == 200
    _forward_line(proc, "msg_big")
    answer = proc.out.next()
    assert answer == "     " + BIG[:199].decode() + "…"  # 200 characters, the last an ellipsis
    assert proc.interrupt() == 0
    assert not any("\x1b" in line or "\x07" in line for line in proc.out.seen + proc.out.rest())


def test_listen_json_has_the_whole_answer_as_stored(
    listening: Callable[..., tuple[Proc, str, list[str]]], user_app: StartApp
) -> None:
    app = user_app(answers=[BIG, ANSI])
    proc, url, _ = listening("--forward-to", app.url, as_json=True)
    for msg_id in ("msg_json_big", "msg_json_ansi"):
        assert post(url, msg_id, BODY) == 200
    forwards = {}
    while len(forwards) < 2:
        line = proc.out.until(lambda line: line.startswith('{"forward"'))
        assert "\x1b" not in line  # JSON escapes it
        forward = json.loads(line)["forward"]
        forwards[forward["webhook_id"]] = forward
    assert forwards["msg_json_big"]["response_body"] == BIG.decode()
    assert forwards["msg_json_ansi"]["response_body"] == ANSI.decode()
    assert proc.interrupt() == 0


# -- an https app with its own CA ------------------------------------------------------------------

UNTRUSTED = (
    "failed: the certificate of 127.0.0.1 is not trusted (self-signed or unknown CA): "
    "pass --ca-bundle FILE with your CA, or --insecure"
)
WARNING = "warning: --insecure: certificates are not verified for "


def test_listen_to_an_https_app_needs_its_ca_and_says_so(
    listening: Callable[..., tuple[Proc, str, list[str]]],
    user_app: StartApp,
    local_ca: LocalCA,
) -> None:
    app = user_app(tls=local_ca.leaf.server_context())
    proc, url, _ = listening("--forward-to", app.url)
    assert post(url, "msg_untrusted", BODY) == 200
    line = _forward_line(proc, "msg_untrusted")
    assert line.endswith(f"{UNTRUSTED} in {line.split(' in ')[-1]}")
    assert "(will retry)" in line and app.seen == []
    assert proc.interrupt() == 0


@pytest.mark.slow
def test_listen_with_the_ca_bundle_reaches_an_https_app(
    listening: Callable[..., tuple[Proc, str, list[str]]],
    user_app: StartApp,
    local_ca: LocalCA,
) -> None:
    app = user_app(tls=local_ca.leaf.server_context())
    proc, url, announced = listening("--forward-to", app.url, "--ca-bundle", str(local_ca.ca))
    assert any(f"; trusting the CA in {local_ca.ca}" in line for line in announced)
    assert post(url, "msg_trusted", BODY) == 200
    assert ": 200 in " in _forward_line(proc, "msg_trusted")
    assert app.wait_for(1)[0].values("webhook-id") == ["msg_trusted"]
    assert proc.interrupt() == 0
    assert not any(line.startswith("warning") for line in proc.err.seen + proc.err.rest())


def test_listen_insecure_reaches_an_https_app_and_warns_once(
    listening: Callable[..., tuple[Proc, str, list[str]]],
    user_app: StartApp,
    local_ca: LocalCA,
) -> None:
    app = user_app(tls=local_ca.leaf.server_context())
    proc, url, _ = listening("--forward-to", app.url, "--insecure")
    for msg_id in ("msg_insecure_1", "msg_insecure_2"):
        assert post(url, msg_id, BODY) == 200
        assert ": 200 in " in _forward_line(proc, msg_id)
    assert len(app.wait_for(2)) == 2
    assert proc.interrupt() == 0
    warnings = [line for line in proc.err.seen + proc.err.rest() if "--insecure" in line]
    assert warnings == [WARNING + app.url]
