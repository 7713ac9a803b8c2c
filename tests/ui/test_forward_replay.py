"""Forwarding and replay from the dashboard, against a real app on 127.0.0.1 that verifies
signatures with the standardwebhooks package."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import pytest
from aiohttp import web
from standardwebhooks import Webhook, WebhookVerificationError
from textual.content import Content
from ui_helpers import SECRET, SIZE, body_for, plain, sender_for, wait_for

from walletpass_tui.cli import build_parser, dashboard_cmd
from walletpass_tui.cli.common import CommandError
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.replay import ReplayScreen
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.forward import Route
from walletpass_tui.webhooks.receiver import Receiver
from walletpass_tui.webhooks.store import Store


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]
    verified: bool


@dataclass
class VerifyingApp:
    """The user's app: 200 when the signature verifies with the real secret, else 400."""

    url: str = ""
    got: list[Received] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            Webhook(SECRET).verify(body, headers)
            ok = True
        except WebhookVerificationError:
            ok = False
        self.got.append(Received(body, headers, ok))
        return web.json_response({"ok": ok}, status=200 if ok else 400)


@pytest.fixture
async def target_app(start_server: Any) -> VerifyingApp:
    app = VerifyingApp()
    server = await start_server()
    server.reply("POST", "/hooks", app.handle)
    app.url = f"{server.url}/hooks"
    return app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def open_delivery_detail(
    app: WalletPassApp, pilot: Any, receiver: Receiver, http: Any
) -> str:
    """Post one signed delivery, open its detail; its webhook-id."""
    response = await sender_for(receiver, http).post(
        body_for("pass.activated", "pass_0007"), msg_id="msg_replayed"
    )
    assert response.status_code == 200
    await wait_for(lambda: app.stats.received == 1)
    await pilot.press("enter")
    await wait_for(lambda: isinstance(app.screen, DetailScreen))
    return "msg_replayed"


def forwards_text(app: WalletPassApp) -> str:
    """The Forwards & replays tab, opened (a tab is drawn when it is opened)."""
    screen = app.screen
    assert isinstance(screen, DetailScreen)
    screen.detail.show_tab("forwards")
    return plain(screen.query_one("#detail-forwards").render())


async def test_replay_from_the_detail_resigns_and_is_recorded(
    make_app: Callable[..., WalletPassApp],
    receiver: Receiver,
    registry: EndpointRegistry,
    http: httpx.AsyncClient,
    target_app: VerifyingApp,
) -> None:
    app = make_app(receiver=receiver, receiver_display=None)
    async with app.run_test(size=SIZE) as pilot:
        msg = await open_delivery_detail(app, pilot, receiver, http)
        await pilot.press("R")
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))
        form = app.screen
        assert isinstance(form, ReplayScreen)
        assert form.mode() == "resign"  # the endpoint's secret is known
        form.query_one("#replay-target").value = target_app.url  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        [sent] = target_app.got
        assert sent.verified and sent.headers["webhook-id"] == msg
        assert json.loads(sent.body)["data"]["passId"] == "pass_0007"
        await wait_for(lambda: "replay (resign)" in forwards_text(app))
        assert "200" in forwards_text(app) and '"ok": true' in forwards_text(app)

        # The next replay offers the same target; an edited body is re-signed and verifies.
        await pilot.press("R")
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))
        form = app.screen
        assert isinstance(form, ReplayScreen)
        assert form.query_one("#replay-target").value == target_app.url  # type: ignore[attr-defined]
        editor = form.query_one("#replay-body")
        edited = '{"type": "pass.activated", "data": {"passId": "pass_edited"}}'
        editor.text = edited  # type: ignore[attr-defined]
        await pilot.pause()
        assert "re-signed" in plain(form.query_one("#replay-mode-hint").render())
        await pilot.press("ctrl+s")
        await wait_for(lambda: len(target_app.got) == 2)
        assert target_app.got[1].body == edited.encode()
        assert target_app.got[1].verified and target_app.got[1].headers["webhook-id"] == msg
        await wait_for(lambda: "replay (edited)" in forwards_text(app))


async def test_replay_without_a_secret_sends_the_stored_bytes(
    make_app: Callable[..., WalletPassApp],
    receiver: Receiver,
    http: httpx.AsyncClient,
    target_app: VerifyingApp,
) -> None:
    no_secret = DeliveryRuntime(
        receiver.settings,
        receiver.setup,
        store=receiver.store,
        registry=receiver.registry,
        secret_for=lambda attempt: None,
    )
    async with no_secret as receiver:
        app = make_app(receiver=receiver, receiver_display=None)
        async with app.run_test(size=SIZE) as pilot:
            await open_delivery_detail(app, pilot, receiver, http)
            detail = app.screen
            assert isinstance(detail, DetailScreen)
            await wait_for(lambda: detail.detail.data is not None)
            assert detail.detail.data is not None
            stored = detail.detail.data.attempt
            await pilot.press("R")
            await wait_for(lambda: isinstance(app.screen, ReplayScreen))
            form = app.screen
            assert isinstance(form, ReplayScreen)
            assert form.mode() == "original"
            assert form.query_one("#mode-resign").disabled
            assert "No secret known here made" in plain(
                form.query_one("#replay-mode-hint").render()
            )

            target = form.query_one("#replay-target")
            target.value = "ftp://nowhere"  # type: ignore[attr-defined]
            await pilot.press("ctrl+s")
            assert isinstance(app.screen, ReplayScreen)  # refused, the form stays
            assert "https://" in plain(form.query_one("#replay-target-problem").render())

            target.value = target_app.url  # type: ignore[attr-defined]
            await pilot.press("ctrl+s")
            await wait_for(lambda: len(target_app.got) == 1)
            [sent] = target_app.got
            assert sent.body == stored.body
            assert (
                sent.headers["webhook-timestamp"]
                == dict((k.lower(), v) for k, v in stored.headers)["webhook-timestamp"]
            )
            await wait_for(lambda: "replay (original)" in forwards_text(app))


async def test_dashboard_forwards_and_shows_what_is_pending(
    make_app: Callable[..., WalletPassApp],
    store: Store,
    receiver: Receiver,
    registry: EndpointRegistry,
    http: httpx.AsyncClient,
    target_app: VerifyingApp,
) -> None:
    down = f"http://127.0.0.1:{free_port()}/hooks"  # nothing listens there
    routes = (Route(target_app.url), Route(down, topic="pass.deactivated"))
    setup = replace(receiver.setup, routes=routes)
    runtime = DeliveryRuntime(receiver.settings, setup, store=store, registry=registry)
    await runtime.open()
    receiver = runtime
    app = make_app(receiver=runtime, receiver_display=None)
    async with app.run_test(size=SIZE) as pilot:
        header = app.screen.query_one(StatusBar)
        await wait_for(lambda: receiver.bound is not None)
        await wait_for(lambda: "→ " + target_app.url in plain(header.render(), 200))
        sender = sender_for(receiver, http)
        await sender.post(body_for("pass.activated", "pass_1"), msg_id="msg_fwd_ok")
        await wait_for(lambda: len(target_app.got) == 1)
        assert (
            target_app.got[0].verified and target_app.got[0].headers["webhook-id"] == "msg_fwd_ok"
        )

        await sender.post(body_for("pass.deactivated", "pass_2"), msg_id="msg_fwd_down")
        await wait_for(lambda: "⇢ 1 to forward" in plain(header.render(), 200))
        await wait_for(lambda: app.stats.received == 2)
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        await pilot.press("o")
        await wait_for(lambda: "waiting for the app; next try" in forwards_text(app))
        text = forwards_text(app)
        assert "forward (original)" in text and down in text
        assert await store.pending_forward_count() == 1

        await app.run_action("give_up_forwards")  # the command palette's "Give up pending forwards"
        await wait_for(lambda: "to forward" not in plain(header.render(), 200))
        assert await store.pending_forward_count() == 0
        await wait_for(lambda: "given up" in forwards_text(app))
    await runtime.close()


def test_dashboard_command_builds_forwarding_from_its_flags(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    async def headless(self: WalletPassApp, **kwargs: Any) -> Any:
        runtime = self.parts.runtime
        assert isinstance(runtime, DeliveryRuntime)
        seen["routes"] = list(runtime.routes) if runtime.forwarding else None
        seen["ack_target"] = runtime.ack_target  # the receiver itself is built after paint
        seen["secret_for"] = runtime.secret_for

    monkeypatch.setattr(WalletPassApp, "run_async", headless)
    args = build_parser().parse_args(
        [
            "--home",
            str(tmp_path / "home"),
            "--port",
            "0",
            "--forward-to",
            "http://localhost:3000/hooks",
            "--forward-to",
            "pass.deactivated=http://localhost:4000/off",
            "--ack",
            "target",
        ]
    )
    assert dashboard_cmd.run_dashboard(args) == 0
    assert seen["routes"] == [
        Route("http://localhost:3000/hooks"),
        Route("http://localhost:4000/off", topic="pass.deactivated"),
    ]
    assert seen["ack_target"] is True and seen["secret_for"] is not None

    bad = build_parser().parse_args(["--home", str(tmp_path / "h2"), "--ack", "target"])
    with pytest.raises(CommandError, match="--ack target needs a --forward-to"):
        dashboard_cmd.run_dashboard(bad)


async def test_a_local_ngrok_agent_is_found_and_offered(
    make_app: Callable[..., WalletPassApp], receiver: Receiver, start_server: Any
) -> None:
    agent = await start_server()

    async def tunnels(request: web.Request) -> web.Response:
        port = receiver.bound[1] if receiver.bound else 0
        return web.json_response(
            {
                "tunnels": [
                    {
                        "public_url": "https://ab12.ngrok-free.app",
                        "proto": "https",
                        "config": {"addr": f"http://localhost:{port}"},
                    }
                ]
            }
        )

    agent.reply("GET", "/api/tunnels", tunnels)
    app = make_app(receiver=receiver, receiver_display=None)
    app.ngrok_api = agent.url
    async with app.run_test(size=SIZE) as pilot:
        header = app.screen.query_one(StatusBar)
        public = "https://ab12.ngrok-free.app/webhooks"
        await wait_for(lambda: public in plain(header.render(), 200))
        # Any local user can answer on 127.0.0.1:4040: said where the URL is offered.
        # a notification is posted as a message: it may land after the header is drawn
        await wait_for(lambda: any(n.title == "Tunnel found" for n in app._notifications))
        [found] = [n.message for n in app._notifications if n.title == "Tunnel found"]
        assert "any user of this machine can answer: check it is your ngrok" in found
        await pilot.press("n")
        await wait_for(lambda: app.screen.query("#endpoint-url"))
        assert app.screen.query_one("#endpoint-url").value == public  # type: ignore[attr-defined]


async def test_the_replay_form_shows_a_hostile_webhook_id_literally(
    make_app: Callable[..., WalletPassApp], receiver: Receiver, http: httpx.AsyncClient
) -> None:
    hostile = "msg_[@click=app.quit]x[/][b]"
    app = make_app(receiver=receiver, receiver_display=None)
    async with app.run_test(size=SIZE) as pilot:
        answer = await sender_for(receiver, http).post(b"{}", msg_id=hostile)
        assert answer.status_code == 200
        await wait_for(lambda: app.stats.received == 1)
        await pilot.pause()
        await pilot.press("R")
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))
        await pilot.pause()
        form = app.screen.query_one("#replay-form")
        # What the border draws: Textual reads a title as markup, so it must arrive escaped.
        assert Content.from_markup(str(form.border_title)).plain == "Replay " + hostile
        assert app.is_running  # the title's "link" did not quit the app
