"""``endpoints list`` and ``endpoints import``: secrets masked, an id already known kept."""

from __future__ import annotations

import json

import pytest
from service_helpers import (
    ENDPOINTS,
    HOOK_URL,
    IMPORT_SECRET,
    SECRET,
    Cli,
    created_answer,
    file_mode,
)

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
        "tunnel": False,
        "stale": None,
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
    result.assert_usage_error(fragment)  # a secret given as a flag that is not one: exit 2
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
