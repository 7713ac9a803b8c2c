"""The dashboard with a tunnel (``walletpass-tui --tunnel cloudflared``): its header shows the
tunnel's public URL once up, or why there is none, and a notification says so; the tunnel's
program is gone once the dashboard's runtime closes. The demo takes a tunnel the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tunnel_helpers import install_fake

from walletpass_tui.cli.demo_cmd import demo_session
from walletpass_tui.config import Settings
from walletpass_tui.runtime.control import MAX_TEXT, ReceiverStatus
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.tunnel.cloudflared import Cloudflared
from walletpass_tui.ui.app import build_app
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.listening import ReceiverOptions

SIZE = (200, 30)


def plain(renderable: Any) -> str:
    with open("/dev/null", "w") as sink:
        console = Console(width=SIZE[0], record=True, color_system=None, file=sink)
        console.print(renderable)
    return console.export_text()


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(1500):  # a "did not hang" guard, never a timing assertion
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition never met")


def tunnel_setup() -> DeliverySetup:
    return DeliverySetup(options=ReceiverOptions(host="127.0.0.1", port=0), tunnel=Cloudflared())


async def test_the_header_shows_the_tunnels_public_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch)
    settings = Settings(home=tmp_path / "home", receiver_port=0)
    async with DeliveryRuntime(settings, tunnel_setup()) as runtime:
        app = build_app(runtime, receiver_display="127.0.0.1/webhooks")
        async with app.run_test(size=SIZE):
            header = app.screen.query_one(StatusBar)
            await until(lambda: bool(fake.starts()) and "public https://" in plain(header.render()))
            [(_, _, host)] = fake.starts()
            assert app.context is not None
            assert app.context.public_url == f"https://{host}/webhooks"
            assert f"public https://{host}"[:40] in plain(header.render())
    assert fake.running() == []


async def test_the_header_says_why_there_is_no_tunnel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no cloudflared
    settings = Settings(home=tmp_path / "home", receiver_port=0)
    async with DeliveryRuntime(settings, tunnel_setup()) as runtime:
        app = build_app(runtime, receiver_display="127.0.0.1/webhooks")
        async with app.run_test(size=SIZE):
            header = app.screen.query_one(StatusBar)
            await until(lambda: "no tunnel" in plain(header.render()))
            assert "⚠ no tunnel: --tunnel cloudflared: the cloudflared program is not" in plain(
                header.render()
            )
            said = [n for n in app._notifications if n.title == "Tunnel"]
            assert [n.message for n in said] == [runtime.status.tunnel]
            assert app.context is not None and app.context.public_url is None
            # The receiver is there all the same.
            assert runtime.url is not None and "listening" in plain(header.render())


def test_attached_dashboards_hear_the_tunnels_words_bounded() -> None:
    sent = ReceiverStatus(
        public_url=None, tunnel="cloudflared tunnel down, again in 4 s: " + "x" * 9000
    )
    heard = ReceiverStatus.from_wire(sent.to_wire())
    assert heard.tunnel is not None and heard.tunnel.startswith("cloudflared tunnel down")
    assert len(heard.tunnel) == MAX_TEXT
    assert ReceiverStatus.from_wire({**sent.to_wire(), "tunnel": 7}).tunnel is None


async def test_the_demo_takes_a_tunnel_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake(tmp_path, monkeypatch)
    settings = Settings(home=tmp_path / "home")
    session = demo_session(settings, port=0, interval=5, tunnel=Cloudflared())
    async with session as app, app.run_test(size=SIZE):
        header = app.screen.query_one(StatusBar)
        await until(lambda: "public https://" in plain(header.render()))
        [(_, _, host)] = fake.starts()
        assert app.context is not None
        assert app.context.public_url == f"https://{host}/webhooks"
    assert fake.running() == []
