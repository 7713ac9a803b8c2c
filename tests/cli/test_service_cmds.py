"""``templates`` and ``endpoints create`` end to end against stand-in servers (service_helpers.py)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from service_helpers import (
    API_KEY,
    ENDPOINTS,
    HOOK_URL,
    IMPORT_SECRET,
    SECRET,
    TEMPLATES,
    Cli,
    created_answer,
    file_mode,
    read_text,
)

from walletpass_tui.runtime import instance

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


async def test_create_from_listener_reads_the_running_receivers_public_url(cli: Cli) -> None:
    """``listen --tunnel`` in another shell keeps its public URL in the home's state file."""
    tunnel_url = "https://words-here.trycloudflare.com/webhooks"
    old = "https://old-words.trycloudflare.com/webhooks"
    cli.registry.import_endpoint("ep_old", old, ["pass.activated"], IMPORT_SECRET)
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer(id="ep_new", url=tunnel_url))
    claim = instance.claim(cli.home)
    try:
        claim.publish(
            instance.InstanceRecord(
                pid=os.getpid(), kind="listen", url="http://127.0.0.1:8787/webhooks",
                started_at_ms=1, public_url=tunnel_url,
            )
        )  # fmt: skip
        result = await cli.run("endpoints", "create", "--from-listener", "--topic", "activated")
    finally:
        claim.release()
    assert result.code == 0, result.err
    assert cli.hooks.requests[0].json()["url"] == tunnel_url
    assert (
        "Using the public URL of the receiver running on this home "
        f"(listen, pid {os.getpid()}, 127.0.0.1:8787/webhooks): {tunnel_url}"
    ) in result.err
    assert (
        f"Marked ep_old stale here: it points at {old}, a tunnel URL this home no longer has. "
        "Disable or delete it in your workspace's webhook settings"
    ) in result.err
    stored = {e.id: e for e in cli.registry.load()}
    assert stored["ep_new"].tunnel and stored["ep_new"].stale is None
    assert (stored["ep_old"].stale or "").startswith(f"replaced by ep_new ({tunnel_url}) on ")
    assert stored["ep_old"].secret.reveal() == IMPORT_SECRET  # its deliveries stay verifiable
    listing = await cli.run("endpoints", "list")
    assert "ep_old is stale: replaced by ep_new" in listing.out
    assert "disable or delete it in your workspace's webhook settings." in listing.out


async def test_create_from_listener_without_a_public_url_says_how_to_get_one(cli: Cli) -> None:
    claim = instance.claim(cli.home)
    try:
        claim.publish(
            instance.InstanceRecord(pid=os.getpid(), kind="dashboard", url=None, started_at_ms=1)
        )
        result = await cli.run("endpoints", "create", "--from-listener", "--topic", "activated")
    finally:
        claim.release()
    result.assert_usage_error("has no public URL yet", "--tunnel cloudflared", "--public-url")
    assert cli.no_requests()


@pytest.mark.parametrize("tampered", ["an escape in its URL", "a symlink"])
async def test_create_from_listener_reports_a_running_receivers_unreadable_state(
    cli: Cli, tampered: str
) -> None:
    """A receiver runs, but its state file was tampered with: the file is named as what is
    wrong (as attach and web say), never "start a receiver", and nothing is registered."""
    claim = instance.claim(cli.home)
    try:
        claim.publish(
            instance.InstanceRecord(
                pid=os.getpid(), kind="listen", url="http://127.0.0.1:8787/webhooks",
                started_at_ms=1, public_url="https://words-here.trycloudflare.com/webhooks",
            )
        )  # fmt: skip
        state = claim.state_path
        if tampered == "a symlink":
            elsewhere = cli.home / "elsewhere.json"
            elsewhere.write_bytes(state.read_bytes())
            state.unlink()
            state.symlink_to(elsewhere)
        else:
            raw = json.loads(state.read_bytes())
            raw["public_url"] += "\u001b[31m"
            state.write_text(json.dumps(raw))
        result = await cli.run("endpoints", "create", "--from-listener", "--topic", "activated")
    finally:
        claim.release()
    line = result.assert_one_line_failure(
        f"A receiver holds {cli.home} but its state cannot be read ({state}",
        "stop it and start it again, or pass --public-url.",
    )
    assert "--tunnel cloudflared" not in line
    assert "\x1b" not in line
    assert cli.no_requests()


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

    monkeypatch.setattr("walletpass_tui.webhooks.endpoint_registry.write_private_file", full_disk)
    cli.hooks.answer("POST", ENDPOINTS, json=created_answer())
    result = await cli.run("endpoints", "create", "--url", HOOK_URL, "--topic", "pass.activated")
    assert SECRET in result.out
    result.assert_one_line_failure("could not be stored", "No space left", "Keep the secret")
