"""Which provider the settings ask for, refused in one sentence when its settings do not fit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from walletpass_tui.config import Settings
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.tunnel.choice import local_url, tunnel_provider
from walletpass_tui.tunnel.cloudflared import Cloudflared
from walletpass_tui.tunnel.ngrok_sdk import Ngrok


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(home=tmp_path).with_values("file c.toml", **values)


def test_no_tunnel_unless_asked(tmp_path: Path) -> None:
    assert tunnel_provider(settings(tmp_path)) is None


def test_a_quick_and_a_named_cloudflared_tunnel(tmp_path: Path) -> None:
    quick = tunnel_provider(settings(tmp_path, tunnel="cloudflared"))
    assert isinstance(quick, Cloudflared) and quick.describe == "a cloudflared quick tunnel"
    named = tunnel_provider(
        settings(
            tmp_path, tunnel="cloudflared", tunnel_name="hooks", tunnel_url="https://h.example.com"
        )
    )
    assert isinstance(named, Cloudflared)
    assert named.describe == "the cloudflared tunnel hooks"
    assert named.options.url == "https://h.example.com"


def test_ngrok_with_a_domain_of_its_own(tmp_path: Path) -> None:
    provider = tunnel_provider(
        settings(tmp_path, tunnel="ngrok", tunnel_url="https://me.ngrok.app")
    )
    assert isinstance(provider, Ngrok) and provider.domain == "me.ngrok.app"
    assert tunnel_provider(settings(tmp_path, tunnel="ngrok")).describe == "an ngrok tunnel"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"tunnel": "cloudflared", "tunnel_name": "hooks"}, "needs its address as [tunnel] url"),
        (
            {"tunnel": "cloudflared", "tunnel_url": "https://h.example.com"},
            "give its name as [tunnel] name",
        ),
        (
            {"tunnel": "ngrok", "tunnel_name": "hooks"},
            "with ngrok give your domain as [tunnel] url",
        ),
        (
            {"tunnel": "ngrok", "tunnel_url": "https://me.ngrok.app/webhooks"},
            "must be https://<host name> and nothing more",
        ),
        ({"tunnel": "ngrok", "tunnel_url": "https://10.0.0.1"}, "must be https://<host name>"),
    ],
)
def test_settings_that_do_not_fit_the_provider(
    tmp_path: Path, values: dict[str, str], said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        tunnel_provider(settings(tmp_path, **values))
    assert said in str(caught.value)


def test_the_local_address_is_loopback_for_a_receiver_on_every_interface() -> None:
    assert local_url("127.0.0.1", 8787) == "http://127.0.0.1:8787"
    assert local_url("0.0.0.0", 8787) == "http://127.0.0.1:8787"
    assert local_url("::", 8787) == "http://[::1]:8787"
    assert local_url("::1", 9) == "http://[::1]:9"
    assert local_url("localhost", 9) == "http://localhost:9"


@pytest.mark.slow
@pytest.mark.parametrize("allow_http", [[], ["--allow-http"]], ids=["plain", "--allow-http"])
def test_an_http_tunnel_address_is_refused_without_naming_a_flag_that_cannot_help(
    clean_env: Path, allow_http: list[str]
) -> None:
    """``[tunnel] url`` is the address the service delivers to: https, whatever --allow-http (a
    local simulated service's endpoints) says. The refusal does not offer that flag."""
    clean_env.mkdir()
    (clean_env / "config.toml").write_text(
        '[tunnel]\nprovider = "cloudflared"\nname = "hooks"\nurl = "http://hooks.example.com"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", "listen", "--port", "0", *allow_http],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line == (
        f"walletpass-tui: error: The setting tunnel_url (from file {clean_env / 'config.toml'}) "
        "'http://hooks.example.com' must start with https:// (a tunnel's public address is "
        "always https; --allow-http does not apply to it)."
    )
