"""``config show``, usage errors, real ``python -m walletpass_tui`` processes, output helpers."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from service_helpers import (
    API_KEY,
    ENDPOINTS,
    HOOK_URL,
    IMPORT_SECRET,
    TEMPLATES,
    Cli,
    Result,
    created_answer,
    file_mode,
)

from walletpass_tui import __version__
from walletpass_tui.cli.common import print_table
from walletpass_tui.text import printable

# -- config show -------------------------------------------------------------------------------


async def test_config_show_json_structure_and_sources(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "wp.toml"
    config.write_text("[receiver]\nport = 9000\ntolerance = 60\n[service]\ntimeout = 4\n")
    result = await cli.run("--host", "0.0.0.0", "config", "show", "--json", "--config", str(config))
    assert result.code == 0, result.err
    result.assert_no_secret()
    data = json.loads(result.out)
    assert data["config_file"] == str(config)
    settings = data["settings"]
    assert set(settings) == {
        "base_url", "registration_url", "api_key", "home", "receiver_host", "receiver_port",
        "receiver_path", "tolerance_s", "max_body", "timeout_s", "retention_days", "allow_http",
        "public_url", "relay_token", "relay_database", "tunnel", "tunnel_name", "tunnel_url",
    }  # fmt: skip
    assert all(set(entry) == {"value", "source"} for entry in settings.values())
    assert settings["api_key"] == {"value": "wp_live_…h6Jd", "source": "env WALLETPASS_API_KEY"}
    assert settings["base_url"] == {"value": cli.api.url, "source": "env WALLETPASS_BASE_URL"}
    assert settings["home"] == {"value": str(cli.home), "source": "env WALLETPASS_HOME"}
    assert settings["receiver_host"] == {"value": "0.0.0.0", "source": "flag"}
    # Typed: numbers as numbers, booleans as booleans, unset as null.
    assert settings["receiver_port"] == {"value": 9000, "source": f"file {config}"}
    assert settings["tolerance_s"] == {"value": 60, "source": f"file {config}"}
    assert settings["timeout_s"] == {"value": 4.0, "source": f"file {config}"}
    assert settings["receiver_path"] == {"value": "/webhooks", "source": "default"}
    assert settings["public_url"] == {"value": None, "source": "default"}
    assert settings["allow_http"] == {"value": False, "source": "default"}
    assert settings["registration_url"] == {
        "value": cli.hooks.url,
        "source": "env WALLETPASS_REGISTRATION_URL",
    }


async def test_config_show_flag_beats_env_for_the_key(cli: Cli) -> None:
    flag_key = "wp_test_FromTheFlag000000000000"
    result = await cli.run("config", "show", "--json", "--api-key", flag_key)
    settings = json.loads(result.out)["settings"]
    assert settings["api_key"] == {"value": "wp_test_…0000", "source": "flag"}
    result.assert_no_secret(flag_key, API_KEY)


async def test_config_show_reads_config_toml_in_walletpass_home(cli: Cli) -> None:
    cli.home.mkdir(parents=True)
    (cli.home / "config.toml").write_text('public_url = "https://ab12.ngrok.app"\n')
    result = await cli.run("config", "show")
    assert result.code == 0
    assert f"config file: {cli.home / 'config.toml'}" in result.out
    row = next(line for line in result.out.splitlines() if line.startswith("public_url"))
    assert row.split()[1:] == ["https://ab12.ngrok.app", "file", str(cli.home / "config.toml")]
    key_row = next(line for line in result.out.splitlines() if line.startswith("api_key"))
    assert "wp_live_…h6Jd" in key_row
    result.assert_no_secret()


async def test_home_flag_is_the_data_and_config_directory(cli: Cli, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    other.mkdir()
    (other / "config.toml").write_text("[receiver]\nport = 7000\n")
    result = await cli.run("config", "show", "--json", "--home", str(other))
    data = json.loads(result.out)
    assert data["config_file"] == str(other / "config.toml")
    assert data["settings"]["home"] == {"value": str(other), "source": "flag"}
    assert data["settings"]["receiver_port"]["value"] == 7000
    imported = await cli.run(
        "--home", str(other), "endpoints", "import", "--id", "ep_1",
        "--url", "https://a.example/wh", "--topic", "pass.activated", "--secret", IMPORT_SECRET,
    )  # fmt: skip
    assert imported.code == 0
    assert file_mode(other / "endpoints.json") == 0o600
    assert not (cli.home / "endpoints.json").exists()


@pytest.mark.parametrize(
    ("toml", "fragment"),
    [
        ("port = [\n", "not valid TOML"),
        ("colour = 'blue'\n", "unknown setting(s): colour"),
        ("port = 'eighty'\n", "receiver_port"),
    ],
)
async def test_config_errors_are_one_line(
    cli: Cli, tmp_path: Path, toml: str, fragment: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(toml)
    for command in (["config", "show"], ["templates"], ["endpoints", "list"]):
        result = await cli.run(*command, "--config", str(config))
        result.assert_one_line_failure(fragment, str(config))
    assert cli.no_requests()


async def test_config_file_that_does_not_exist(cli: Cli, tmp_path: Path) -> None:
    result = await cli.run("config", "show", "--config", str(tmp_path / "missing.toml"))
    result.assert_one_line_failure("does not exist")


async def test_config_error_hides_a_bad_key(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WALLETPASS_API_KEY", "wp_live_has a space in it 12345")
    result = await cli.run("config", "show")
    result.assert_one_line_failure("API key")
    assert "has a space" not in result.err


# -- usage errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["no-such-command"],
        ["endpoints"],
        ["endpoints", "frobnicate"],
        ["config"],
        ["endpoints", "create", "--url", HOOK_URL, "--topic", "pass.created"],
        ["endpoints", "import", "--id", "ep_1"],
        ["templates", "--bogus"],
        ["--port", "eighty", "config", "show"],
    ],
)
async def test_usage_errors_exit_2(cli: Cli, argv: list[str]) -> None:
    result = await cli.run(*argv)
    assert result.code == 2
    assert "usage:" in result.err
    assert "Traceback" not in result.err
    assert cli.no_requests()


async def test_version_and_help(cli: Cli) -> None:
    result = await cli.run("--version")
    assert (result.code, result.out.strip()) == (0, f"walletpass-tui {__version__}")
    for argv in (["--help"], ["endpoints", "create", "--help"], ["config", "show", "--help"]):
        result = await cli.run(*argv)
        assert result.code == 0 and result.out.startswith("usage: walletpass-tui")


# -- real processes ----------------------------------------------------------------------------


async def run_module(*argv: str, env: dict[str, str]) -> Result:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "walletpass_tui", *argv,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode is not None
    return Result(process.returncode, out.decode(), err.decode())


async def test_subprocess_config_show_and_auth_failure(cli: Cli) -> None:
    env = dict(os.environ)
    shown = await run_module("config", "show", "--json", env=env)
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["settings"]["api_key"]["value"] == "wp_live_…h6Jd"
    shown.assert_no_secret()

    cli.api.answer("GET", TEMPLATES, status=401, json={"error": "unknown key"})
    failed = await run_module("templates", env=env)
    failed.assert_one_line_failure("401", "Check the API key")
    failed.assert_no_secret()
    assert cli.api.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"

    usage = await run_module("endpoints", env=env)
    assert usage.code == 2 and "Traceback" not in usage.err


async def test_subprocess_create_then_list(cli: Cli) -> None:
    env = dict(os.environ)
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer())
    created = await run_module(
        "endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated", env=env
    )
    assert created.code == 0, created.err
    assert file_mode(cli.home / "endpoints.json") == 0o600
    listed = await run_module("endpoints", "list", env=env)
    assert listed.code == 0 and "ep_3f2a9c" in listed.out
    listed.assert_no_secret()


# -- output helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "shown"),
    [
        ("plain café ☕", None, "plain café ☕"),
        ("a\nb\rc", None, "a\\nb\\rc"),
        ("\x1b[2J\x07\x7f\x9b", None, "\\x1b[2J\\x07\\x7f\\x9b"),
        ("tab\tshown", None, "tab\\tshown"),
        ("bidi\u202ezw\u200b", None, "bidi\\u202ezw\\u200b"),
        ("abcdefghij", 5, "abcd…"),
        ("abc", 5, "abc"),
    ],
)
def test_printable(text: str, limit: int | None, shown: str) -> None:
    assert printable(text, limit) == shown


def test_print_table_aligns_columns(capsys: pytest.CaptureFixture[str]) -> None:
    print_table([["a", "long value", ""], ["bbbb", "x", "z"]], ["H1", "H2", "H3"])
    assert capsys.readouterr().out.splitlines() == [
        "H1    H2          H3",
        "a     long value",
        "bbbb  x           z",
    ]
