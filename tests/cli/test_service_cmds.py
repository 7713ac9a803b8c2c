"""The service commands end to end: ``walletpass_tui.cli.main([...])`` against two stand-in servers
(the base_url and registration_url hosts), plus real ``python -m walletpass_tui`` subprocesses.

``main()`` runs its own event loop, so it runs in a worker thread while the servers answer on the
test's loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from walletpass_tui import __version__
from walletpass_tui.cli import main
from walletpass_tui.cli.common import print_table, printable
from walletpass_tui.webhooks.endpoints import EndpointRegistry

API_KEY = "wp_live_Q7f3kLm9Xc2Vb8Nn1Zr5Tt0Yw4Hh6Jd"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
IMPORT_SECRET = "whsec_C2FtcGxlIHNlY3JldCBmb3IgdGVzdGluZyE="
TEMPLATES = "/api/v0/passTemplates"
ENDPOINTS = "/v0/webhookEndpoints"
HOOK_URL = "https://ab12.ngrok.app/webhooks"
SECRETS = (API_KEY, SECRET, IMPORT_SECRET)


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()

    def assert_one_line_failure(self, *fragments: str) -> str:
        assert self.code == 1, (self.out, self.err)
        assert len(self.err_lines) == 1, self.err
        [line] = self.err_lines
        assert line.startswith("walletpass-tui: error: ")
        assert "Traceback" not in self.err
        for fragment in fragments:
            assert fragment in line
        return line

    def assert_usage_error(self, *fragments: str) -> str:
        """Exit 2 and one line saying what to fix (argparse adds its usage line before it)."""
        assert self.code == 2, (self.out, self.err)
        assert "Traceback" not in self.err
        line = self.err_lines[-1]
        assert line.startswith("walletpass-tui: error: ") or ": error: " in line, self.err
        for fragment in fragments:
            assert fragment in line
        return line

    def assert_no_secret(self, *secrets: str) -> None:
        for secret in secrets or SECRETS:
            assert secret not in self.out
            assert secret not in self.err


def created_answer(**overrides: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "id": "ep_3f2a9c",
        "secret": SECRET,
        "url": HOOK_URL,
        "enabledTopics": ["pass.activated", "pass.deactivated"],
        "enabled": True,
        "createdAt": "2025-06-01T12:00:00.123Z",
    }
    answer.update(overrides)
    return answer


class Cli:
    def __init__(
        self, home: Path, api: Any, hooks: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.home, self.api, self.hooks, self._capsys = home, api, hooks, capsys

    async def run(self, *argv: str) -> Result:
        def call() -> int:
            try:
                return main(list(argv))
            except SystemExit as exc:  # argparse: --help, --version, usage errors
                return exc.code if isinstance(exc.code, int) else 1

        self._capsys.readouterr()
        code = await asyncio.to_thread(call)
        captured = self._capsys.readouterr()
        return Result(code, captured.out, captured.err)

    @property
    def registry(self) -> EndpointRegistry:
        return EndpointRegistry(self.home / "endpoints.json")

    def no_requests(self) -> bool:
        return self.api.requests == [] and self.hooks.requests == []


@pytest.fixture
async def cli(
    clean_env: Path,
    start_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Cli:
    api, hooks = await start_server(), await start_server()
    monkeypatch.setenv("WALLETPASS_BASE_URL", api.url)
    monkeypatch.setenv("WALLETPASS_REGISTRATION_URL", hooks.url)
    monkeypatch.setenv("WALLETPASS_API_KEY", API_KEY)
    return Cli(clean_env, api, hooks, capsys)


def file_mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def read_text(path: Path) -> str:
    return path.read_text()


# -- templates ---------------------------------------------------------------------------------

TEMPLATES_LIST = [
    {"id": "tpl_7Qm2Lx", "name": "Gym Membership", "style": {"color": "#123456"}},
    {"id": "tpl_9Pz1Ka", "title": "Café Loyalty", "fields": [1, 2]},
]


async def test_templates_table(cli: Cli) -> None:
    cli.api.answer("GET", TEMPLATES, json={"data": TEMPLATES_LIST})
    result = await cli.run("templates")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["ID", "NAME", "FIELDS"]
    assert lines[1].startswith("tpl_7Qm2Lx") and "Gym Membership" in lines[1]
    assert '"style": {"color": "#123456"}' in lines[1]
    assert "Café Loyalty" in lines[2]
    assert lines[-1] == "2 template(s). Use --json for every field."
    assert result.err == ""
    [request] = cli.api.requests
    assert request.path == TEMPLATES
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    result.assert_no_secret()


@pytest.mark.parametrize(
    "payload", [TEMPLATES_LIST, {"data": TEMPLATES_LIST}, {"passTemplates": TEMPLATES_LIST}]
)
async def test_templates_json_prints_every_field(cli: Cli, payload: Any) -> None:
    cli.api.answer("GET", TEMPLATES, json=payload)
    result = await cli.run("templates", "--json")
    assert result.code == 0
    assert json.loads(result.out) == TEMPLATES_LIST


async def test_templates_empty(cli: Cli) -> None:
    cli.api.answer("GET", TEMPLATES, json=[])
    result = await cli.run("templates")
    assert (result.code, result.out) == (0, "No pass templates.\n")
    assert json.loads((await cli.run("templates", "--json")).out) == []


async def test_templates_escapes_terminal_control_characters(cli: Cli) -> None:
    cli.api.answer("GET", TEMPLATES, json=[{"id": "tpl_\x1b[31mred", "name": "a\x07b"}])
    result = await cli.run("templates")
    assert "\x1b" not in result.out and "\x07" not in result.out
    assert "\\x1b[31mred" in result.out


@pytest.mark.parametrize("status", [401, 403])
async def test_templates_auth_failure(cli: Cli, status: int) -> None:
    # The service echoing the key back would be the service's fault, but it is still not shown.
    cli.api.answer("GET", TEMPLATES, status=status, json={"error": f"bad key {API_KEY}"})
    result = await cli.run("templates")
    result.assert_one_line_failure(str(status), "Check the API key")
    result.assert_no_secret()
    assert result.out == ""


async def test_a_service_answer_echoing_the_key_is_masked(cli: Cli) -> None:
    cli.api.answer("GET", TEMPLATES, status=400, json={"error": f"malformed key {API_KEY}"})
    result = await cli.run("templates")
    line = result.assert_one_line_failure("400", "The service answered:", "malformed key")
    assert "wp_live_…" in line
    result.assert_no_secret()


async def test_templates_not_found(cli: Cli) -> None:
    result = await cli.run("templates")  # nothing configured: 404
    result.assert_one_line_failure("404", "WALLETPASS_BASE_URL")


async def test_templates_bad_shape_shows_the_answer_on_the_same_line(cli: Cli) -> None:
    cli.api.answer("GET", TEMPLATES, body='{"count": 2,\n "note": "no list"}')
    result = await cli.run("templates")
    line = result.assert_one_line_failure("shape", "The service answered:")
    assert '{"count": 2,\\n "note": "no list"}' in line


async def test_templates_long_answers_are_shortened(cli: Cli) -> None:
    cli.api.answer("GET", TEMPLATES, body="<html>" + "x" * 5000)
    result = await cli.run("templates")
    line = result.assert_one_line_failure("not JSON")
    assert len(line) < 600


async def test_templates_without_a_key_says_how_to_set_it(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WALLETPASS_API_KEY")
    result = await cli.run("templates")
    result.assert_one_line_failure("No API key", "WALLETPASS_API_KEY")
    assert cli.no_requests()


async def test_templates_without_a_base_url(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WALLETPASS_BASE_URL")
    result = await cli.run("templates")
    result.assert_one_line_failure("WALLETPASS_BASE_URL")
    assert cli.no_requests()


async def test_flags_before_or_after_the_command(cli: Cli) -> None:
    other_key = "wp_live_FlagFlagFlagFlagFlag0000"
    cli.api.answer("GET", TEMPLATES, json=[])
    assert (await cli.run("--api-key", other_key, "templates")).code == 0
    assert (await cli.run("templates", "--api-key", other_key)).code == 0
    auth = [r.headers["Authorization"] for r in cli.api.requests]
    assert auth == [f"Bearer {other_key}"] * 2


# -- endpoints create --------------------------------------------------------------------------


async def test_create_stores_the_endpoint_with_mode_0600(cli: Cli) -> None:
    cli.hooks.answer("POST", ENDPOINTS, status=201, json=created_answer())
    result = await cli.run(
        "endpoints", "create", "--url", HOOK_URL,
        "--topic", "pass.activated", "--topic", "pass.deactivated",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == f"Created ep_3f2a9c -> {HOOK_URL}"
    # The one deliberate reveal: shown once, at creation, because the service never returns it again.
    assert result.out.count(SECRET) == 1
    assert "shown once" in result.err
    assert API_KEY not in result.out + result.err

    [request] = cli.hooks.requests
    assert cli.api.requests == []
    assert request.path == "/v0/webhookEndpoints"
    assert request.body == (
        b'{"enabledTopics": ["pass.activated", "pass.deactivated"], "enabled": true, '
        b'"url": "https://ab12.ngrok.app/webhooks"}'
    )

    path = cli.home / "endpoints.json"
    assert file_mode(path) == 0o600
    assert file_mode(cli.home) == 0o700
    [stored] = cli.registry.load()
    assert (stored.id, stored.secret.reveal(), stored.origin) == ("ep_3f2a9c", SECRET, "created")


async def test_create_disabled_and_json(cli: Cli) -> None:
    answer = created_answer(enabled=False, enabledTopics=["pass.deactivated"], extra={"x": 1})
    cli.hooks.answer("POST", ENDPOINTS, json=answer)
    result = await cli.run(
        "endpoints", "create", "--url", HOOK_URL, "--topic", "pass.deactivated", "--disabled",
        "--json",
    )  # fmt: skip
    assert result.code == 0
    assert json.loads(result.out) == answer
    assert cli.hooks.requests[0].json() == {
        "enabledTopics": ["pass.deactivated"],
        "enabled": False,
        "url": HOOK_URL,
    }
    assert cli.registry.load()[0].enabled is False


async def test_create_from_listener_uses_the_public_url(cli: Cli) -> None:
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer(url="https://ab12.ngrok.app/in"))
    result = await cli.run(
        "--path", "/in", "endpoints", "create", "--from-listener",
        "--public-url", "https://ab12.ngrok.app/", "--topic", "pass.activated",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert cli.hooks.requests[0].json()["url"] == "https://ab12.ngrok.app/in"


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--topic", "pass.activated"], ["--url"]),
        (["--url", HOOK_URL], ["--topic"]),
        (["--url", "http://ab12.ngrok.app/wh", "--topic", "pass.activated"], ["https://"]),
        (["--url", "https:///wh", "--topic", "pass.activated"], ["host"]),
        (
            ["--url", HOOK_URL, "--topic", "pass.activated", "--topic", "pass.activated"],
            ["given twice"],
        ),
        (["--from-listener", "--topic", "pass.activated"], ["--public-url"]),
        (
            ["--from-listener", "--url", HOOK_URL, "--public-url", HOOK_URL, "--topic",
             "pass.activated"],
            ["not both"],
        ),
    ],
)  # fmt: skip
async def test_create_validation_sends_nothing(
    cli: Cli, argv: list[str], fragments: list[str]
) -> None:
    result = await cli.run("endpoints", "create", *argv)
    result.assert_usage_error(*fragments)
    assert cli.no_requests()
    assert not (cli.home / "endpoints.json").exists()


async def test_create_http_url_with_allow_http(cli: Cli) -> None:
    url = "http://127.0.0.1:8787/webhooks"
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer(url=url))
    result = await cli.run(
        "endpoints", "create", "--allow-http", "--url", url, "--topic", "pass.activated"
    )
    assert result.code == 0, result.err
    assert cli.hooks.requests[0].json()["url"] == url


async def test_create_without_a_key(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WALLETPASS_API_KEY")
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    result.assert_one_line_failure("WALLETPASS_API_KEY")
    assert cli.no_requests()


async def test_create_server_error_is_sent_once(cli: Cli) -> None:
    cli.hooks.reply("POST", ENDPOINTS, {"status": 502}, {"json": created_answer()})
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    result.assert_one_line_failure("502")
    assert len(cli.hooks.requests) == 1


async def test_create_connection_refused(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("WALLETPASS_REGISTRATION_URL", f"http://127.0.0.1:{port}")
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    result.assert_one_line_failure("Could not connect to 127.0.0.1")


async def test_create_answer_with_missing_fields_keeps_the_secret_privately(cli: Cli) -> None:
    answer = created_answer()
    del answer["createdAt"]
    raw = json.dumps(answer)
    cli.hooks.answer("POST", ENDPOINTS, body=raw)
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    line = result.assert_one_line_failure("missing createdAt", "saved in")
    result.assert_no_secret()
    saved = Path(line.split("saved in ", 1)[1].split(" (mode 0600)")[0])
    assert saved.parent == cli.home
    assert read_text(saved) == raw
    assert file_mode(saved) == 0o600
    assert cli.registry.load() == []


async def test_create_answer_without_a_secret_is_shown(cli: Cli) -> None:
    cli.hooks.answer("POST", ENDPOINTS, json={"id": "ep_1", "status": "pending"})
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    result.assert_one_line_failure("missing secret", '"status": "pending"')


async def test_create_refuses_to_start_with_a_damaged_registry(cli: Cli) -> None:
    cli.home.mkdir(parents=True)
    (cli.home / "endpoints.json").write_text("{not json")
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer())
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    result.assert_one_line_failure("damaged")
    assert cli.no_requests(), "nothing is created when its secret could not be stored"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_create_shows_the_secret_when_it_cannot_be_stored(cli: Cli) -> None:
    cli.home.mkdir(parents=True)
    cli.home.chmod(0o500)
    try:
        cli.hooks.answer("POST", ENDPOINTS, json=created_answer())
        result = await cli.run(
            "endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated"
        )
    finally:
        cli.home.chmod(0o700)
    assert SECRET in result.out
    result.assert_one_line_failure("could not be stored", "Keep the secret")


async def test_create_shows_the_secret_when_storing_fails(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same as above where permissions cannot be used (as root): the write itself fails."""

    def full_disk(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("walletpass_tui.webhooks.endpoints.write_private_file", full_disk)
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer())
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    assert SECRET in result.out
    result.assert_one_line_failure("could not be stored", "No space left", "Keep the secret")


# -- endpoints list and import -----------------------------------------------------------------


async def test_list_empty(cli: Cli) -> None:
    result = await cli.run("endpoints", "list")
    assert result.code == 0 and "No endpoints known locally" in result.out
    assert json.loads((await cli.run("endpoints", "list", "--json")).out) == []


async def test_list_after_create_and_import_masks_secrets(cli: Cli) -> None:
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer())
    assert (
        await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    ).code == 0
    result = await cli.run(
        "endpoints", "import", "--id", "ep_web1", "--url", "https://example.com/wh",
        "--topic", "pass.deactivated", "--secret", IMPORT_SECRET, "--disabled",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.startswith("Imported ep_web1 (whsec_…")
    result.assert_no_secret()

    table = await cli.run("endpoints", "list")
    assert table.code == 0
    assert table.out.splitlines()[0].split() == [
        "ID", "URL", "TOPICS", "ENABLED", "CREATED", "SECRET", "ORIGIN",
    ]  # fmt: skip
    assert "whsec_…LaSw" in table.out
    table.assert_no_secret()

    listing = await cli.run("endpoints", "list", "--json")
    listing.assert_no_secret()
    data = json.loads(listing.out)
    assert [e["id"] for e in data] == ["ep_3f2a9c", "ep_web1"]
    assert data[0] == {
        "id": "ep_3f2a9c",
        "url": HOOK_URL,
        "enabledTopics": ["pass.activated", "pass.deactivated"],
        "enabled": True,
        "createdAt": "2025-06-01T12:00:00.123Z",
        "secret": "whsec_…LaSw",
        "origin": "created",
    }
    assert data[1]["enabled"] is False and data[1]["origin"] == "imported"
    assert data[1]["createdAt"] is None
    assert file_mode(cli.home / "endpoints.json") == 0o600
    assert cli.no_requests() is False and len(cli.hooks.requests) == 1, "import sends nothing"


async def test_import_over_a_known_id_refuses_then_replace_keeps_a_backup(cli: Cli) -> None:
    base = ["endpoints", "import", "--id", "ep_1", "--topic", "activated"]
    assert (
        await cli.run(*base, "--url", "https://a.example/wh", "--secret", IMPORT_SECRET)
    ).code == 0
    refused = await cli.run(*base, "--url", "https://b.example/wh", "--secret", SECRET)
    refused.assert_usage_error("ep_1 is already known", "--replace")
    refused.assert_no_secret()
    [kept] = cli.registry.load()
    assert (kept.url, kept.secret.reveal()) == ("https://a.example/wh", IMPORT_SECRET)

    replaced = await cli.run(
        *base, "--url", "https://b.example/wh", "--secret", SECRET, "--replace"
    )
    assert replaced.code == 0, replaced.err
    [stored] = cli.registry.load()
    assert (stored.url, stored.secret.reveal()) == ("https://b.example/wh", SECRET)
    [backup] = cli.home.glob("endpoints-backup-ep_1-*.json")
    assert str(backup) in replaced.out
    assert file_mode(backup) == 0o600
    [old] = json.loads(backup.read_text())["endpoints"]
    assert (old["url"], old["secret"]) == ("https://a.example/wh", IMPORT_SECRET)


async def test_import_http_url_needs_allow_http_like_create(cli: Cli) -> None:
    argv = ["endpoints", "import", "--id", "ep_1", "--url", "http://a.example/wh",
            "--topic", "pass.activated", "--secret", IMPORT_SECRET]  # fmt: skip
    (await cli.run(*argv)).assert_usage_error("https://", "--allow-http")
    assert not (cli.home / "endpoints.json").exists()
    assert (await cli.run(*argv, "--allow-http")).code == 0


@pytest.mark.parametrize(
    ("secret", "fragment"),
    [
        ("whsec_not*base64*at*all", "not valid base64"),
        ("whsec_QUJD-RUZH_SElK", "not valid base64"),
        ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "starts with whsec_"),
        ("whsec_", "nothing after whsec_"),
    ],
)
async def test_import_rejects_bad_secrets(cli: Cli, secret: str, fragment: str) -> None:
    result = await cli.run(
        "endpoints", "import", "--id", "ep_1", "--url", "https://a.example/wh",
        "--topic", "pass.activated", "--secret", secret,
    )  # fmt: skip
    result.assert_one_line_failure(fragment)
    if len(secret) > 8:
        result.assert_no_secret(secret)
    assert not (cli.home / "endpoints.json").exists()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--id", "3f2a", "--url", "https://a.example/wh", "--topic", "pass.activated"], "ep_"),
        (["--id", "ep_", "--url", "https://a.example/wh", "--topic", "pass.activated"], "ep_"),
        (["--id", "ep_1", "--url", " ", "--topic", "pass.activated"], "URL"),
        (
            ["--id", "ep_1", "--url", "https://a.example/wh", "--topic", "pass.activated",
             "--topic", "pass.activated"],
            "given twice",
        ),
    ],
)  # fmt: skip
async def test_import_validation(cli: Cli, argv: list[str], fragment: str) -> None:
    result = await cli.run("endpoints", "import", *argv, "--secret", IMPORT_SECRET)
    result.assert_usage_error(fragment) if fragment in ("given twice", "URL") else (
        result.assert_one_line_failure(fragment)
    )
    result.assert_no_secret()


async def test_list_with_a_damaged_registry(cli: Cli) -> None:
    cli.home.mkdir(parents=True)
    (cli.home / "endpoints.json").write_text('{"endpoints": [{"id": "ep_1"}]}')
    result = await cli.run("endpoints", "list")
    result.assert_one_line_failure("damaged")


async def test_list_tightens_a_loosened_registry(cli: Cli) -> None:
    await cli.run(
        "endpoints", "import", "--id", "ep_1", "--url", "https://a.example/wh",
        "--topic", "pass.activated", "--secret", IMPORT_SECRET,
    )  # fmt: skip
    path = cli.home / "endpoints.json"
    path.chmod(0o644)
    assert (await cli.run("endpoints", "list")).code == 0
    assert file_mode(path) == 0o600


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
        "public_url",
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
