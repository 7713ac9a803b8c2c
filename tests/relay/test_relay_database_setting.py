"""Which database the relay uses (``--database``, ``WALLETPASS_RELAY_DATABASE``, ``[relay]
database``), the channel commands and ``relay migrate`` against a shared PostgreSQL database, and
the password: never printed, never in an error, never in ``/healthz``. The SQLite relay never
loads the PostgreSQL driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cluster import PgCluster
from relay_helpers import ROOT, RelayProcess

from walletpass_tui.cli import main
from walletpass_tui.config import load_settings
from walletpass_tui.config.database_url import conninfo_url, mask_database_url
from walletpass_tui.config.errors import ConfigError


@pytest.fixture
def pg_database(pg_cluster: PgCluster) -> Iterator[str]:
    url = pg_cluster.new_database()
    yield url
    pg_cluster.release(url)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://relay:s3cret@db:5432/relay", "postgresql://relay:…@db:5432/relay"),
        ("postgres://relay@db/relay", "postgres://relay@db/relay"),
        ("postgresql://u:p%40ss@[::1]:5433/x?sslmode=require", "postgresql://u:…@[::1]:5433/x?sslmode=require"),
        ("postgresql://db/x?user=u&password=s3cret", "postgresql://db/x?user=u&password=…"),
        ("postgresql://u:a:b@c@db/x", "postgresql://u:…@db/x"),
        ("/var/lib/relay/relay.sqlite3", "/var/lib/relay/relay.sqlite3"),
    ],
)  # fmt: skip
def test_a_database_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert mask_database_url(url) == shown


def test_the_setting_comes_from_the_flag_the_environment_or_the_relay_table(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[relay]\ndatabase = "postgresql://relay:fromfile@db/relay"\n')
    settings = load_settings(env={}, config_file=config)
    assert settings.relay_database == "postgresql://relay:fromfile@db/relay"
    assert settings.source_of("relay_database") == f"file {config}"
    env = {"WALLETPASS_RELAY_DATABASE": "postgresql://relay:fromenv@db/relay"}
    settings = load_settings(env=env, config_file=config)
    assert settings.relay_database == env["WALLETPASS_RELAY_DATABASE"]
    shown = dict((name, value) for name, value, _ in settings.describe())
    assert shown["relay_database"] == "postgresql://relay:…@db/relay"
    assert "fromenv" not in json.dumps(settings.typed())


def test_config_show_masks_the_database_password(
    clean_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WALLETPASS_RELAY_DATABASE", "postgresql://relay:hunter2hunter2@db/relay")
    code, out, err = run(capsys, "config", "show")
    assert code == 0 and "hunter2" not in out + err
    assert "postgresql://relay:…@db/relay" in out


def test_channel_commands_and_migrate_work_against_the_shared_database(
    clean_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pg_database: str,
    pg_cluster: PgCluster,
) -> None:
    monkeypatch.setenv("WALLETPASS_RELAY_DATABASE", pg_database)
    code, out, err = run(capsys, "relay", "migrate")
    assert code == 0 and "up to date" in out
    assert pg_cluster.password not in out + err and "relay:…@127.0.0.1" in out
    code, out, _ = run(capsys, "relay", "channel", "add", "team", "--json")
    assert code == 0
    token = json.loads(out)["token"]
    # Another host, the same database given by flag: it sees the channel.
    monkeypatch.delenv("WALLETPASS_RELAY_DATABASE")
    code, out, _ = run(capsys, "relay", "channel", "list", "--json", "--database", pg_database)
    assert code == 0 and [c["name"] for c in json.loads(out)] == ["team"]
    assert token not in out
    code, out, _ = run(capsys, "relay", "channel", "revoke", token, "--database", pg_database)
    assert code == 0 and "Revoked 1 token" in out
    code, out, _ = run(capsys, "relay", "channel", "remove", "team", "--database", pg_database)
    assert code == 0 and "Removed channel team" in out
    assert not (clean_env / "relay.sqlite3").exists()  # nothing went to a SQLite file


def test_a_wrong_password_or_an_absent_server_is_one_line_without_the_password(
    clean_env: Path, capsys: pytest.CaptureFixture[str], pg_database: str, pg_cluster: PgCluster
) -> None:
    wrong = pg_database.replace(pg_cluster.password, "not-the-password-xyz")
    code, out, err = run(capsys, "relay", "channel", "list", "--database", wrong)
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert "not-the-password-xyz" not in out + err and "password" in err
    nobody = "postgresql://relay:not-the-password-xyz@127.0.0.1:1/relay"
    code, out, err = run(capsys, "relay", "migrate", "--database", nobody)
    assert code == 1 and err.count("\n") == 1
    assert "not-the-password-xyz" not in out + err and "127.0.0.1:1" in err
    code, _, err = run(capsys, "relay", "migrate", "--database", "mysql://u:p@h/d")
    assert code == 1 and "postgresql://" in err and "u:p" not in err


def test_serve_names_the_database_without_its_password(
    pg_database: str, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    relay = RelayProcess(tmp_path / "relay-home", pg_database)
    relay.start()
    try:
        with urllib.request.urlopen(f"{relay.url}/healthz", timeout=30) as r:  # noqa: S310
            health = r.read().decode()
    finally:
        relay.terminate()
    assert relay.proc is not None and relay.proc.stdout is not None
    printed = relay.proc.stdout.read() + (relay.proc.stderr.read() if relay.proc.stderr else "")
    assert pg_cluster.password not in printed + health
    assert '"backend": "postgresql"' in health


PROBE = """
import asyncio, json, sys, threading, urllib.request
from walletpass_tui.cli import main
from walletpass_tui.cli.relay_cmd import serve as relay_serve

async def serve_once(server):
    await server.start()
    loop = asyncio.get_running_loop()
    url = server.url + "/healthz"
    health = await loop.run_in_executor(None, lambda: urllib.request.urlopen(url).read())
    await server.stop()
    return 0

relay_serve._serve = serve_once
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    json.dump({"code": code, "asyncpg": "asyncpg" in sys.modules}, fh)
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_sqlite_relay_never_loads_the_postgresql_driver(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``relay serve`` and ``relay channel add`` on SQLite, in a fresh process: the driver is not
    in ``sys.modules``. On PostgreSQL it is (so the probe can see it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(tmp_path / "home")
    if backend == "postgres":
        cluster: PgCluster = request.getfixturevalue("pg_cluster")
        env["WALLETPASS_RELAY_DATABASE"] = cluster.new_database()
    for argv in (
        ["relay", "channel", "add", "team"],
        ["relay", "serve", "--host", "127.0.0.1", "--port", "0"],
    ):
        report = tmp_path / "report.json"
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(report), *argv],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert report.exists(), done.stderr[-2000:]
        result = json.loads(report.read_text())
        assert result["code"] == 0
        assert result["asyncpg"] is (backend == "postgres"), (argv, backend)


def test_healthz_never_shows_the_user_as_the_database_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq defaults the database name to the user's; /healthz says it does not know instead."""
    from walletpass_tui.relay.server.storage.target import database_target

    monkeypatch.delenv("PGDATABASE", raising=False)
    monkeypatch.delenv("PGUSER", raising=False)
    described = database_target("postgresql://alice:pw@db.example", tmp_path).describe()
    assert described == {
        "backend": "postgresql",
        "host": "db.example",
        "port": 5432,
        "database": None,
    }
    assert "alice" not in str(described) and "pw" not in str(described)


def test_every_secret_of_a_database_url_is_found_to_be_scrubbed() -> None:
    from walletpass_tui.config.database_url import database_url_secrets

    url = "postgresql://relay:s%40cret@db:5432/relay?sslpassword=other&password=third&x=1"
    assert set(database_url_secrets(url)) == {"s%40cret", "s@cret", "other", "third"}
    assert database_url_secrets("postgresql://relay@db/relay") == []
    assert database_url_secrets("/var/lib/relay.sqlite3") == []


def test_libpq_keyword_value_form_is_postgresql_never_a_file_named_with_the_password(
    pg_database: str, pg_cluster: PgCluster, tmp_path: Path
) -> None:
    """What hosting panels hand out (``host=... password=...``) as --database: the channel is
    made in PostgreSQL, nothing is created where the command runs, and the password shows
    nowhere; a form the relay cannot take is refused in one line, without the password."""
    parts = urllib.parse.urlsplit(pg_database)
    dsn = (
        f"host={parts.hostname} port={parts.port} dbname={parts.path.lstrip('/')} "
        f"user={parts.username} password='{pg_cluster.password}'"
    )
    here = tmp_path / "cwd"
    here.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(tmp_path / "home")

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "walletpass_tui", *argv],
            cwd=here, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    made = cli("relay", "channel", "add", "team", "--database", dsn)
    assert made.returncode == 0, made.stderr
    listed = cli("relay", "channel", "list", "--json", "--database", pg_database)
    assert [c["name"] for c in json.loads(listed.stdout)] == ["team"]  # in PostgreSQL
    env["WALLETPASS_RELAY_DATABASE"] = dsn
    relay = subprocess.Popen(
        [sys.executable, "-m", "walletpass_tui", "relay", "serve", "--quiet",
         "--host", "127.0.0.1", "--port", "0"],
        cwd=here, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert relay.stdout is not None
    first = relay.stdout.readline()
    relay.terminate()
    rest, err = relay.communicate(timeout=30)
    assert first.startswith("Relay listening on ") and "(data: postgresql://" in first
    refused = cli("relay", "channel", "list", "--database", dsn + " connect_timeout=10")
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1
    assert "connect_timeout" in refused.stderr and "Traceback" not in refused.stderr
    said = made.stdout + made.stderr + first + rest + err + refused.stdout + refused.stderr
    assert pg_cluster.password not in said
    assert list(here.iterdir()) == []  # no SQLite file, with the password in its name or not


@pytest.mark.parametrize(
    ("setting", "url"),
    [
        ("host=db dbname=relay user=u password=s3cret", "postgresql://?host=db&dbname=relay&user=u&password=s3cret"),
        ("host = /run/pg  port=5433 password='a b\\'c'", "postgresql://?host=%2Frun%2Fpg&port=5433&password=a%20b%27c"),
        ("HOST=db sslmode=require", "postgresql://?host=db&sslmode=require"),
        ("relay-data/relay.sqlite3", "relay-data/relay.sqlite3"),
        ("data=1/relay.sqlite3", "data=1/relay.sqlite3"),  # no libpq keyword: a file
    ],
)  # fmt: skip
def test_libpq_keyword_value_form_reads_as_the_same_url(setting: str, url: str) -> None:
    assert conninfo_url(setting) == url
    assert "s3cret" not in mask_database_url(conninfo_url(setting))


@pytest.mark.parametrize(
    "setting",
    ["host=db password='s3cret", "host=db options=-cx password=s3cret", "x password=s3cret"],
)
def test_a_keyword_value_setting_the_relay_cannot_take_is_refused_without_its_password(
    setting: str,
) -> None:
    with pytest.raises(ConfigError) as refused:
        conninfo_url(setting)
    assert "s3cret" not in str(refused.value)
