"""``endpoints create --from-relay SUBSCRIBE_URL``: the channel's ingress URL is asked of the relay
(an authenticated GET on the channel) and registered; a refused token registers nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from service_helpers import ENDPOINTS, Cli, created_answer

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
from walletpass_tui.relay.server.storage.base import IssuedChannel
from walletpass_tui.relay.server.storage.sqlite.database import RelayDB
from walletpass_tui.relay.server.storage.target import database_path


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[tuple[RelayServer, IssuedChannel]]:
    home = tmp_path / "relay"
    db = RelayDB(database_path(home))
    try:
        issued = db.add_channel("team")
    finally:
        db.close()
    server = RelayServer(RelayOptions(home=home, host="127.0.0.1", port=0))
    await server.start()
    yield server, issued
    await server.stop()


async def test_create_from_relay_registers_the_channels_ingress_url(
    cli: Cli,
    relay: tuple[RelayServer, IssuedChannel],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, issued = relay
    ingress = ingress_url(server.url, issued.channel.slug)
    sub_url = subscribe_url(server.url, issued.channel.slug)
    cli.hooks.answer("POST", ENDPOINTS, status=201, json=created_answer(url=ingress))
    monkeypatch.setenv("WALLETPASS_RELAY_TOKEN", issued.token)
    argv = ("--allow-http", "endpoints", "create", "--from-relay", sub_url, "--topic", "activated")
    result = await cli.run(*argv)
    assert result.code == 0, result.err
    [request] = cli.hooks.requests
    assert request.json()["url"] == ingress
    assert "Relay channel team" in result.err
    assert issued.token not in result.out + result.err
    [stored] = cli.registry.load()
    assert stored.url == ingress  # its secret verifies what the relay hands the laptop


async def test_a_refused_token_or_none_registers_nothing(
    cli: Cli,
    relay: tuple[RelayServer, IssuedChannel],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, issued = relay
    sub_url = subscribe_url(server.url, issued.channel.slug)
    argv = ("--allow-http", "endpoints", "create", "--from-relay", sub_url, "--topic", "activated")
    wrong = "wpr_" + "x" * 43
    monkeypatch.setenv("WALLETPASS_RELAY_TOKEN", wrong)
    line = (await cli.run(*argv)).assert_one_line_failure("401", "WALLETPASS_RELAY_TOKEN")
    assert wrong not in line
    monkeypatch.delenv("WALLETPASS_RELAY_TOKEN")
    (await cli.run(*argv)).assert_usage_error("WALLETPASS_RELAY_TOKEN")
    both = (*argv, "--url", "https://example.com/hook")
    (await cli.run(*both)).assert_usage_error("--from-relay")
    assert cli.no_requests()
