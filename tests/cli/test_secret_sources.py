"""Signing secrets never have to travel on the command line: ``$WALLETPASS_SECRET``,
``--secret-file PATH`` (private files only) and ``--secret -`` (standard input) give them to
every command that verifies or signs, and a running ``listen`` given its secret any of those ways
shows none in its process arguments (what ``ps`` shows every user of the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from process_helpers import DEADLINE_S, Lines, free_port, post
from standardwebhooks.webhooks import Webhook

from walletpass_tui.cli import build_parser, main, secret_flags
from walletpass_tui.cli.secret_flags import given_secrets

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 32).decode()


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def private_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser(["listen"]).parse_args(["listen", *argv])


# -- a running listen shows no secret in its arguments ---------------------------------------------


def _listen(tmp_path: Path, how: str) -> tuple[subprocess.Popen[str], str]:
    """``listen`` given SECRET the way ``how`` says; (the process, its URL) once it is ready."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(tmp_path / f"home-{how}")
    port = free_port()
    argv = [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port), "--json"]
    if how == "env":
        env["WALLETPASS_SECRET"] = f"{OTHER}  {SECRET}\n"  # several, any white space between
    elif how == "file":
        argv += ["--secret-file", str(private_file(tmp_path / "secrets", f"# app\n{SECRET}\n"))]
    else:
        argv += ["--secret", "-"]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    assert proc.stdin is not None
    if how == "stdin":
        proc.stdin.write(SECRET + "\n")
    proc.stdin.close()
    return proc, f"http://127.0.0.1:{port}/webhooks"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("how", ["env", "file", "stdin"])
def test_a_running_listen_shows_no_secret_in_its_arguments(tmp_path: Path, how: str) -> None:
    proc, url = _listen(tmp_path, how)
    try:
        err = Lines(proc.stderr)
        out = Lines(proc.stdout)
        verifying = err.until(lambda line: line.startswith("Verifying with:"))
        err.until(lambda line: line.startswith("History:"))
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert b"whsec_" not in cmdline
        assert b"listen" in cmdline  # the right process's arguments were read
        # The secret it was given verifies a delivery signed with it; shown masked only.
        assert post(url, "msg_from_" + how, b'{"type": "pass.activated"}', SECRET) == 200
        assert '"verdict": "verified"' in out.next()
        source = {"env": "$WALLETPASS_SECRET", "file": "--secret-file", "stdin": "standard input"}
        assert source[how] in verifying and SECRET not in verifying
        assert all(SECRET not in line for line in err.seen + out.seen)
    finally:
        proc.kill()
        proc.wait(timeout=DEADLINE_S)


# -- where the secrets come from -------------------------------------------------------------------


def test_the_environment_holds_one_or_more_separated_by_white_space() -> None:
    env = {"WALLETPASS_SECRET": f" {SECRET}\n\t{OTHER} "}
    found = given_secrets(parsed(), env)
    assert [(g.value, g.source) for g in found] == [
        (SECRET, "$WALLETPASS_SECRET"),
        (OTHER, "$WALLETPASS_SECRET"),
    ]


def test_a_flag_wins_over_the_environment(tmp_path: Path) -> None:
    env = {"WALLETPASS_SECRET": OTHER}
    assert [g.value for g in given_secrets(parsed("--secret", SECRET), env)] == [SECRET]
    path = private_file(tmp_path / "s", SECRET)
    assert [g.value for g in given_secrets(parsed("--secret-file", str(path)), env)] == [SECRET]


def test_a_secret_file_holds_one_a_line_comments_and_blank_lines_skipped(tmp_path: Path) -> None:
    path = private_file(tmp_path / "s", f"# the app\n\n  {SECRET}  \n{OTHER}\n", mode=0o400)
    found = given_secrets(parsed("--secret-file", str(path)), {})
    assert [g.value for g in found] == [SECRET, OTHER]
    assert found[0].source == f"--secret-file {path}"


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: private_file(p, SECRET, mode=0o644), "can be read by others (mode 0644)"),
        (lambda p: private_file(p, SECRET, mode=0o640), "chmod 600"),
        (lambda p: private_file(p, "# nothing but a comment\n"), "holds no secret"),
        (lambda p: private_file(p, f"{SECRET} {OTHER}\n"), "one secret a line"),
        (lambda p: private_file(p, "x" * (70 * 1024)), "more than 64 KiB"),
        (lambda p: p.mkdir(), "not a regular file"),
        (lambda p: os.mkfifo(p, 0o600), "not a regular file"),  # refused, never waited on
        (lambda p: None, "Cannot read the secret file"),
        (lambda p: private_file(p, "whsec_!!!"), "not valid base64"),
    ],
)
async def test_a_secret_file_that_cannot_be_used_is_one_line_exit_1(
    clean_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, fragment: str
) -> None:
    path = tmp_path / "secret"
    make(path)
    code, out, err = await run(
        capsys, "trigger", "activated", "--to", "http://127.0.0.1:9/wh", "--secret-file", str(path)
    )
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("walletpass-tui: error: ")
    assert fragment in err, err
    assert SECRET not in out + err


def test_a_byte_order_mark_before_the_secrets_is_not_part_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some editors (Notepad) start a UTF-8 file with a byte order mark, and end lines with CRLF:
    the file's secrets are read as written, from a file and from standard input alike."""
    text = f"\ufeff{SECRET}\r\n{OTHER}\r\n"
    path = tmp_path / "notepad.txt"
    path.write_bytes(text.encode("utf-8"))
    path.chmod(0o600)
    found = given_secrets(parsed("--secret-file", str(path)), {})
    assert [g.value for g in found] == [SECRET, OTHER]
    read, write = os.pipe()
    os.write(write, text.encode("utf-8"))
    os.close(write)
    with os.fdopen(read) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        assert [g.value for g in given_secrets(parsed("--secret", "-"), {})] == [SECRET, OTHER]


async def test_an_invisible_character_in_a_secret_is_named_not_shown(
    clean_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte order mark or a zero-width space copied along into the environment (or anywhere a
    BOM is not a file's first bytes) is refused in one sentence naming it; nothing invisible and
    no control character reaches the terminal."""
    for value, named in (
        (f"\ufeff{SECRET}", "starts with U+FEFF (a byte order mark)"),
        (f"{SECRET[:12]}\u200b{SECRET[12:]}", "at character 13, U+200B (zero width space)"),
        (f"{SECRET}\x1b[2J", "U+001B (a control character)"),
    ):
        monkeypatch.setenv("WALLETPASS_SECRET", value)
        code, out, err = await run(capsys, "trigger", "activated", "--to", "http://127.0.0.1:9/wh")
        assert code == 1 and err.count("\n") == 1, err
        assert "from $WALLETPASS_SECRET" in err and named in err and "remove it" in err
        assert "\ufeff" not in err and "\u200b" not in err and "\x1b" not in err
        assert SECRET not in out + err


@pytest.mark.parametrize(
    ("char", "named"),
    [("\u00a0", "U+00A0 (no-break space)"), ("\u2028", "U+2028 (line separator)")],
)
@pytest.mark.parametrize("source", ["environment", "file", "stdin"])
def test_a_unicode_space_inside_a_secret_is_named_never_taken_as_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, char: str, named: str, source: str
) -> None:
    """Only ASCII white space separates secrets: a no-break space or a line separator copied
    into the middle of one is named by its code point and place, as any stray character is,
    rather than splitting it into two halves that each fail for another reason."""
    value = f"{SECRET[:20]}{char}{SECRET[20:]}"
    if source == "environment":
        args, env = parsed(), {"WALLETPASS_SECRET": value}
    elif source == "file":
        args, env = parsed("--secret-file", str(private_file(tmp_path / "s", value + "\n"))), {}
    else:
        read, write = os.pipe()
        os.write(write, (value + "\n").encode())
        os.close(write)
        monkeypatch.setattr(sys, "stdin", os.fdopen(read))
        args, env = parsed("--secret", "-"), {}
    with pytest.raises(Exception, match=r"at character 21, ") as caught:
        given_secrets(args, env)
    assert named in str(caught.value) and char not in str(caught.value)


def test_a_secret_file_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("only root can give a file to another user")
    path = private_file(tmp_path / "s", SECRET)
    os.chown(path, 65534, 65534)
    with pytest.raises(Exception, match="belongs to another user"):
        given_secrets(parsed("--secret-file", str(path)), {})


def test_standard_input_gives_secrets_and_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    read, write = os.pipe()
    os.write(write, f"{SECRET}\n# and the old one\n{OTHER}\n".encode())
    os.close(write)
    with os.fdopen(read) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        found = given_secrets(parsed("--secret", "-"), {"WALLETPASS_SECRET": "ignored"})
    assert [(g.value, g.source) for g in found] == [
        (SECRET, "standard input"),
        (OTHER, "standard input"),
    ]
    with pytest.raises(Exception, match="once"):
        given_secrets(parsed("--secret", "-", "--secret", "-"), {})


def test_standard_input_that_stays_silent_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret_flags, "STDIN_WAIT_S", 0.2)
    read, write = os.pipe()  # the writer stays open and says nothing
    try:
        with os.fdopen(read) as stdin:
            monkeypatch.setattr(sys, "stdin", stdin)
            with pytest.raises(Exception, match="Nothing arrived on standard input"):
                given_secrets(parsed("--secret", "-"), {})
    finally:
        os.close(write)


async def test_standard_input_cannot_give_both_the_secret_and_the_body(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await run(
        capsys, "trigger", "activated", "--to", "http://127.0.0.1:9/wh",
        "--secret", "-", "--body-file", "-",
    )  # fmt: skip
    assert code == 2 and "both read standard input" in err


async def test_a_bad_secret_in_the_environment_is_a_failure_shown_masked(
    clean_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = "whsec_" + "A" * 30 + "!"
    monkeypatch.setenv("WALLETPASS_SECRET", f"{SECRET} {bad}")
    code, out, err = await run(capsys, "trigger", "activated", "--to", "http://127.0.0.1:9/wh")
    assert code == 1
    assert "from $WALLETPASS_SECRET" in err and "not valid base64" in err
    assert bad not in out + err


async def test_more_secrets_than_the_bound_say_where_they_came_from(
    clean_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the environment a failure (exit 1) naming it, as its other problems are; from
    flags a usage error (exit 2)."""
    monkeypatch.setenv("WALLETPASS_SECRET", " ".join([SECRET] * 65))
    code, _, err = await run(capsys, "trigger", "activated", "--to", "http://127.0.0.1:9/wh")
    assert code == 1 and err.count("\n") == 1
    assert "at most 64 signing secrets, not 65 (from $WALLETPASS_SECRET)" in err
    assert SECRET not in err
    monkeypatch.delenv("WALLETPASS_SECRET")
    flags = [arg for _ in range(65) for arg in ("--secret", SECRET)]
    code, _, err = await run(capsys, "listen", "--port", "0", *flags)
    assert code == 2 and "not 65 (from --secret)" in err


async def test_trigger_signs_with_the_secret_from_the_environment(
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    start_server: Any,
) -> None:
    receiver = await start_server()
    receiver.answer("POST", "/wh", status=204)
    monkeypatch.setenv("WALLETPASS_SECRET", SECRET)
    code, out, _ = await run(capsys, "trigger", "activated", "--to", receiver.url + "/wh")
    assert code == 0
    [request] = receiver.requests
    Webhook(SECRET).verify(request.body, {k.lower(): v for k, v in request.headers.items()})
    assert SECRET not in out


async def test_commands_that_sign_ask_for_a_secret_when_none_is_given(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await run(capsys, "trigger", "activated", "--to", "http://127.0.0.1:9/wh")
    assert code == 2
    assert "WALLETPASS_SECRET" in err and "--secret-file" in err and "--secret -" in err


@pytest.mark.parametrize(
    "command",
    [
        ["listen"],
        ["trigger"],
        ["check"],
        ["events", "replay"],
        ["sim", "deliver"],
        ["endpoints", "import"],
    ],
)
def test_every_flag_that_takes_a_secret_offers_the_other_ways(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    parser = build_parser(command)
    for name in command:
        parser = next(
            a.choices[name] for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )
    text = " ".join(parser.format_help().split())
    assert "--secret WHSEC|-" in text and "--secret-file PATH" in text
    assert (
        "prefer $WALLETPASS_SECRET, --secret-file or --secret -, a flag shows up in your shell"
        in text
    )


@pytest.mark.slow
def test_on_a_terminal_the_secret_is_asked_for_and_not_echoed(clean_env: Path) -> None:
    """``--secret -`` on a terminal: a prompt on it, what is typed never shown back."""
    import pty
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Accept(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Accept)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/wh"
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "walletpass_tui", "trigger", "activated", "--to", url,
             "--secret", "-"],
            stdin=follower, stdout=follower, stderr=follower, start_new_session=True,
        )  # fmt: skip
        os.close(follower)
        shown = b""
        while b"not shown" not in shown:
            shown += os.read(leader, 1024)
        os.write(leader, SECRET.encode() + b"\n")
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            shown += chunk
        assert proc.wait(timeout=DEADLINE_S) == 0, shown
    finally:
        os.close(leader)
        server.shutdown()
    assert b"Signing secret" in shown and b"-> 204" in shown
    assert SECRET.removeprefix("whsec_")[:8].encode() not in shown  # never echoed, never printed
