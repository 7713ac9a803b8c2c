"""The relay subscriber token as a setting: from WALLETPASS_RELAY_TOKEN or the config file, never
shown in full (``config show``, a mistyped value, the object's repr)."""

from __future__ import annotations

from pathlib import Path

import pytest

from walletpass_tui.config import load_settings
from walletpass_tui.config.errors import ConfigError

TOKEN = "wpr_Zk3v9QmT1xLr8NcB2yHd6JpW0sFa4Ue7Gi5Ko"


def test_the_token_comes_from_the_environment_or_the_file_and_is_masked(tmp_path: Path) -> None:
    from_env = load_settings({"home": str(tmp_path)}, env={"WALLETPASS_RELAY_TOKEN": TOKEN})
    assert from_env.relay_token is not None and from_env.relay_token.reveal() == TOKEN
    config = tmp_path / "config.toml"
    config.write_text(f'relay_token = "{TOKEN}"\n')
    from_file = load_settings({"home": str(tmp_path)}, env={}, config_file=config)
    assert from_file.relay_token is not None and from_file.relay_token.reveal() == TOKEN
    for settings in (from_env, from_file):
        shown = repr(settings) + str(settings.describe()) + str(settings.typed())
        assert TOKEN not in shown
        assert TOKEN[-4:] in shown  # recognisable by its end


def test_a_mistyped_token_in_the_file_is_not_echoed(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("relay_token = 12345678901234567890\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({"home": str(tmp_path)}, env={}, config_file=config)
    assert "12345678901234567890" not in str(caught.value)
    assert "relay_token" in str(caught.value)


@pytest.mark.parametrize(
    "argv",
    [
        ["listen", "--port", "0", "--relay", "http://relay.example.com/channels/c/events"],
        ["relay", "follow", "http://10.1.2.3:8080/channels/c/events"],
        ["endpoints", "create", "--from-relay", "http://relay.example.com/channels/c/events"],
    ],
)
def test_the_token_is_never_sent_in_clear_text_to_another_machine(
    argv: list[str],
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from walletpass_tui.cli import main

    monkeypatch.setenv("WALLETPASS_RELAY_TOKEN", TOKEN)
    monkeypatch.setenv("WALLETPASS_API_KEY", "key_for_the_test")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is http:// to another machine" in err and "https://" in err
    assert TOKEN not in err
    assert not (clean_env / "deliveries.sqlite3").exists()


def test_http_to_this_machine_or_with_allow_http_is_accepted(tmp_path: Path) -> None:
    from walletpass_tui.cli.receiver_setup import relay_url
    from walletpass_tui.errors import UsageError

    plain = load_settings({"home": str(tmp_path)}, env={})
    for url in (
        "https://relay.example.com/channels/c/events",
        "http://127.0.0.1:8788/channels/c/events",
        "http://localhost:8788/channels/c/events",
        "http://[::1]:8788/channels/c/events",
    ):
        assert relay_url(url, plain, "--relay") == url
    remote = "http://relay.example.com/channels/c/events"
    with pytest.raises(UsageError):
        relay_url(remote, plain, "--relay")
    trusting = load_settings({"home": str(tmp_path), "allow_http": True}, env={})
    assert relay_url(remote, trusting, "--relay") == remote
