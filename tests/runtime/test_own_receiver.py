"""Which URLs are this home's running receiver, and so get the check token: its own address under
any loopback name; no other port, path or host; nothing when no receiver runs."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from process_helpers import start_listen

from walletpass_tui.config import Settings
from walletpass_tui.runtime.own_receiver import check_token_for, same_receiver
from walletpass_tui.webhooks import home_secret


def test_only_the_homes_running_receiver_gets_the_check_token(clean_env: Path) -> None:
    settings = Settings(home=clean_env)
    assert check_token_for(settings, "http://127.0.0.1:8787/webhooks") is None  # none runs
    listen, url = start_listen()
    try:
        secret = home_secret.load(clean_env)
        assert secret is not None
        token = home_secret.check_token(secret)
        port = urlsplit(url).port
        for same in (url, url + "/", f"http://localhost:{port}/webhooks"):
            assert check_token_for(settings, same) == token, same
        for other in (
            f"http://127.0.0.1:{port + 1}/webhooks",
            f"http://127.0.0.1:{port}/other",
            f"http://example.com:{port}/webhooks",
            "http://127.0.0.1:99999/webhooks",
        ):
            assert check_token_for(settings, other) is None, other
    finally:
        listen.kill()
    assert check_token_for(settings, url) is None  # stopped: nobody to keep them apart


def test_an_address_bound_to_every_interface_is_reached_on_loopback() -> None:
    assert same_receiver("http://127.0.0.1:8787/webhooks", "http://0.0.0.0:8787/webhooks")
    assert same_receiver("http://[::1]:8787/webhooks", "http://[::]:8787/webhooks")
    assert not same_receiver("http://10.0.0.2:8787/webhooks", "http://0.0.0.0:8787/webhooks")
