"""``relay channel …`` and ``relay serve`` through ``main([...])`` and as a process."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from relay_helpers import SECRET, RelayProcess, TestDB, signed

from walletpass_tui.cli import main
from walletpass_tui.relay.server.storage.sqlite.database import RelayDB
from walletpass_tui.relay.server.storage.target import database_path

PUBLIC = "https://relay.example.com"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own exit for usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def test_add_prints_the_urls_and_a_token_once_and_keeps_only_its_hash(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "relay", "channel", "add", "team", "--public-url", PUBLIC, "--json")
    assert code == 0
    issued = json.loads(out)
    slug = issued["ingress_url"].removeprefix(f"{PUBLIC}/in/")
    assert len(slug) == 22  # 128 bits, URL-safe base64
    assert issued["subscribe_url"] == f"{PUBLIC}/channels/{slug}/events"
    assert issued["token"].startswith("wpr_") and len(issued["token"]) == 4 + 43  # 256 bits

    db_file = database_path(clean_env)
    assert stat.S_IMODE(os.stat(db_file).st_mode) == 0o600
    assert issued["token"].encode() not in db_file.read_bytes()

    code, out, _ = run(capsys, "relay", "channel", "list", "--json")
    listed = json.loads(out)
    assert [c["name"] for c in listed] == ["team"]
    assert listed[0]["ingress_url"] == issued["ingress_url"]  # the public URL was remembered
    assert "token" not in listed[0] and issued["token"] not in out


def test_the_relay_database_and_its_log_files_are_private_whatever_the_umask(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    old = os.umask(0o022)  # a container's default
    try:
        db = RelayDB(database_path(home))
        try:
            db.add_channel("team")
            files = sorted(home.iterdir())
            modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
        finally:
            db.close()
    finally:
        os.umask(old)
    assert {"relay.sqlite3", "relay.sqlite3-wal", "relay.sqlite3-shm"} <= set(modes)
    assert set(modes.values()) == {0o600}, modes


@pytest.mark.slow
def test_opening_another_connection_keeps_the_locks_of_the_first(tmp_path: Path) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it: a second
    connection must not open and close the file by hand, or another process closing its own
    connection would take the relay's write-ahead log away from under it."""
    path = database_path(tmp_path / "home")
    first = RelayDB(path)
    try:
        first.add_channel("team")
        second = RelayDB(path)  # the same process, as the relay's threads do
        second.close()
        other = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM sqlite_master').fetchall();"
        subprocess.run([sys.executable, "-c", other + " c.close()", str(path)], check=True)
        assert path.with_name(path.name + "-wal").exists()
        assert [c.name for c in first.channels()] == ["team"]
    finally:
        first.close()


def test_a_secret_that_is_not_whsec_is_refused_with_one_line(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "relay", "channel", "add", "team", "--secret", "nope")
    assert code == 2  # a flag's value: a usage error, as for every command's --secret
    assert err.count("\n") == 1 and "whsec_" in err and "Traceback" not in err


def test_the_edge_secret_comes_from_stdin_a_file_or_the_environment_like_every_command(
    clean_env: Path, tmp_path: Path
) -> None:
    """``--secret -``, ``--secret-file`` and ``$WALLETPASS_SECRET``, as processes: each channel
    verifies at the edge with that secret, and the secret is only ever shown masked."""
    env = dict(os.environ)
    secret_file = tmp_path / "secret"
    secret_file.write_text(f"# the endpoint's\n{SECRET}\n")
    secret_file.chmod(0o600)

    def add(name: str, *flags: str, stdin: str = "", **extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "walletpass_tui", "relay", "channel", "add", name, *flags],
            input=stdin, env={**env, **extra}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
        return done.stdout

    said = {
        "piped": add("piped", "--secret", "-", stdin=SECRET + "\n"),
        "filed": add("filed", "--secret-file", str(secret_file)),
        "env": add("env", WALLETPASS_SECRET=SECRET),
        "none": add("none"),
    }
    masked = f"whsec_…{SECRET[-4:]}"
    assert f"with {masked} (standard input)" in said["piped"]
    assert f"with {masked} (--secret-file {secret_file})" in said["filed"]
    assert f"with {masked} ($WALLETPASS_SECRET)" in said["env"]
    assert "verifies" not in said["none"]
    with TestDB(clean_env) as db:
        secrets = {c.name: c.secret for c in db.channels()}
    assert secrets == {"piped": SECRET, "filed": SECRET, "env": SECRET, "none": None}


def test_duplicate_names_unknown_channels_and_bad_names_are_clear_errors(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "relay", "channel", "add", "team")[0] == 0
    code, _, err = run(capsys, "relay", "channel", "add", "team")
    assert code == 1 and "exists" in err
    code, _, err = run(capsys, "relay", "channel", "remove", "nobody")
    assert code == 1 and "No channel named" in err
    code, _, err = run(capsys, "relay", "channel", "add", "../etc")
    assert code == 1 and "not a channel name" in err


def test_revoke_by_name_or_token_then_remove(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, "relay", "channel", "add", "team", "--json")
    first = json.loads(out)["token"]
    _, out, _ = run(capsys, "relay", "channel", "token", "team", "--json")
    second = json.loads(out)["token"]
    assert first != second
    code, out, _ = run(capsys, "relay", "channel", "revoke", first)
    assert code == 0 and "Revoked 1 token" in out and first not in out
    _, out, _ = run(capsys, "relay", "channel", "list", "--json")
    assert json.loads(out)[0]["tokens"] == 1
    code, out, _ = run(capsys, "relay", "channel", "revoke", "team")
    assert code == 0 and "Revoked 1 token" in out
    code, out, _ = run(capsys, "relay", "channel", "remove", "team")
    assert code == 0 and "Removed channel team" in out
    _, out, _ = run(capsys, "relay", "channel", "list", "--json")
    assert json.loads(out) == []


def test_serve_usage_errors_exit_2_and_bad_values_exit_1(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "relay", "serve", "--port", "eighty")
    assert code == 2 and "'eighty' is not a whole number from 0 to 65535." in err
    code, _, err = run(capsys, "relay", "serve", "--allow-source", "not-a-network")
    assert code == 1 and "CIDR" in err
    code, _, err = run(capsys, "relay", "serve", "--tls-cert", "/nonexistent.pem")
    assert code == 1 and "--tls-key" in err
    code, _, err = run(capsys, "relay", "serve", "--max-channel-subscribers", "0")
    assert code == 2 and "is not a whole number from 1 to" in err


@pytest.mark.parametrize(
    ("argv", "value"),
    [
        (("serve", "--retention-days"), "\u0661\u0662"),  # Arabic-Indic 12: float() reads it
        (("serve", "--retention-days"), "1e1"),
        (("serve", "--retention-days"), "nan"),
        (("serve", "--retention-days"), "0"),
        (("serve", "--max-body"), "\u0661\u0662\u0663"),  # int() reads it
        (("serve", "--max-body"), "+100"),
        (("serve", "--port"), "\uff18\uff10"),  # fullwidth 80
        (("serve", "--tolerance"), "\u0663\u0660\u0660"),
        (("serve", "--heartbeat"), "\u0661\u0665"),
        (("serve", "--heartbeat"), "inf"),
        (("serve", "--max-subscribers"), "\u0661\u0660"),
        (("serve", "--max-channel-subscribers"), "-1"),
        (("channel", "add", "team", "--quota-mb"), "\u0662\u0665\u0666"),
        (("channel", "add", "team", "--quota-mb"), "0"),
    ],
)
def test_relay_numbers_are_ascii_digits_in_range_or_a_usage_error(
    clean_env: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], value: str
) -> None:
    """Every number the relay commands take is read as every other command reads one: the
    digits 0-9, in range; anything else (another script's digits, a sign, an exponent, nan) is
    refused in one line, exit 2, before anything is opened or created."""
    code, out, err = run(capsys, "relay", *argv, value)
    assert code == 2, (out, err)
    last = err.strip().splitlines()[-1]  # the usage, then one sentence naming the flag
    assert f"error: argument {argv[-1]}: " in last and "is not a" in last and "number" in last
    assert "Traceback" not in err
    assert not any((clean_env).rglob("*.sqlite3"))  # nothing opened or created


@pytest.mark.slow
async def test_serve_runs_until_sigterm_and_list_says_when_a_channel_is_over_quota(
    relay_process: RelayProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    home = relay_process.home
    on = ["--database", relay_process.database] if relay_process.database else []
    code = main(["--home", str(home), "relay", "channel", "add", "tiny", "--quota-mb", "1", *on])
    assert code == 0
    capsys.readouterr()
    with TestDB(relay_process) as db:
        channel = db.channel_by_name("tiny")
    assert channel is not None
    relay_process.start()
    ingress = f"{relay_process.url}/in/{channel.slug}"
    big = b'{"pad":"' + b"x" * 300_000 + b'"}'
    statuses = []
    async with aiohttp.ClientSession() as session:
        for _ in range(6):
            body, headers = signed(SECRET, body=big)
            async with session.post(ingress, data=body, headers=headers) as r:
                statuses.append(r.status)
                if r.status == 503:
                    assert r.headers["Retry-After"]
    assert statuses[:3] == [200, 200, 200] and statuses[-1] == 503
    await asyncio.to_thread(relay_process.terminate)
    assert relay_process.proc is not None and relay_process.proc.returncode == 0
    code = main(["--home", str(home), "relay", "channel", "list", *on])
    out = capsys.readouterr().out
    assert code == 0 and "OVER QUOTA" in out
