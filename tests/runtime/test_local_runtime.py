"""The delivery runtime: one place opens store, registry, receiver and forwarder, in order, and
closes them in reverse; subscribers see committed deliveries and forward answers."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from walletpass_tui.config import Settings
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.runtime.control import ControlError
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.forward import Route
from walletpass_tui.webhooks.listening import ReceiverError, ReceiverOptions
from walletpass_tui.webhooks.models import Attempt, ForwardResult, ForwardRow
from walletpass_tui.webhooks.relayed import RelayedRequest
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"r" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", receiver_port=0)


def setup(**kw: object) -> DeliverySetup:
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    return DeliverySetup(options=options, **kw)  # type: ignore[arg-type]


async def post(url: str, msg_id: str, body: bytes = BODY) -> httpx.Response:
    headers = {**sign(SECRET, msg_id, body, datetime.now(UTC)), "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=5) as client:
        return await client.post(url, content=body, headers=headers)


async def until(check: Callable[[], object], limit: int = 500) -> None:
    for _ in range(limit):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


async def test_subscribers_see_committed_deliveries_and_unsubscribe(tmp_path: Path) -> None:
    seen: list[str | None] = []
    async with DeliveryRuntime(settings(tmp_path), setup()) as runtime:

        def on_batch(batch: Sequence[Attempt]) -> None:
            seen.extend(a.webhook_id for a in batch)

        unsubscribe = runtime.subscribe(on_batch)
        await runtime.serve()
        assert runtime.url is not None
        assert (await post(runtime.url, "msg_1")).status_code == 200
        await until(lambda: seen == ["msg_1"])
        unsubscribe()
        assert (await post(runtime.url, "msg_2")).status_code == 200
        await runtime.store.settled()
        assert seen == ["msg_1"]
        assert (await runtime.store.stats()).received == 2


async def test_bound_but_not_serving_until_asked(tmp_path: Path) -> None:
    """Opening takes the port; deliveries are accepted only after serve() (the dashboard paints
    its first frame in between), and a connection made meanwhile is answered once serving."""
    async with DeliveryRuntime(settings(tmp_path), setup()) as runtime:
        assert runtime.bound is not None and not runtime.serving
        assert runtime.url is not None
        port = runtime.bound[1]
        early = asyncio.create_task(post(runtime.url, "msg_early"))
        await asyncio.sleep(0.1)
        assert not early.done()
        await runtime.serve()
        assert (await early).status_code == 200
    # Closed: the port is free again.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


async def test_a_taken_port_fails_on_open_and_leaves_nothing_open(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = ReceiverOptions(host="127.0.0.1", port=port)
        runtime = DeliveryRuntime(settings(tmp_path), DeliverySetup(options=options))
        with pytest.raises(ReceiverError, match=f"Port {port} is already in use"):
            await runtime.open()
    with pytest.raises(RuntimeError):
        runtime.store  # noqa: B018  closed again: the store it opened is gone
    # The database can be opened by someone else: nothing holds it.
    reopened = await Store.open(settings(tmp_path).database_path)
    await reopened.close()


async def test_a_closed_runtime_cannot_be_opened_again(tmp_path: Path) -> None:
    """Like an HTTP client: open once, close once; reopening says so instead of half-working
    on a store and a port it has given back."""
    runtime = DeliveryRuntime(settings(tmp_path), setup())
    async with runtime:
        await runtime.open()  # opening an open runtime does nothing
        assert runtime.bound is not None
    await runtime.close()  # closing twice is harmless
    with pytest.raises(RuntimeError, match="Cannot open a closed runtime"):
        await runtime.open()
    with pytest.raises(RuntimeError, match="Cannot open a closed runtime"):
        async with runtime:
            pass
    assert runtime.bound is None


async def test_injection_is_changed_through_the_runtime(tmp_path: Path) -> None:
    async with DeliveryRuntime(settings(tmp_path), setup()) as runtime:
        await runtime.serve()
        assert runtime.url is not None
        runtime.pause_acks(True)
        assert runtime.paused
        assert (await post(runtime.url, "msg_p")).status_code == 503
        runtime.pause_acks(False)
        runtime.respond(202)
        assert (await post(runtime.url, "msg_r")).status_code == 202
        runtime.respond(None)
        runtime.fail_first(1)
        assert (await post(runtime.url, "msg_f")).status_code == 500
        assert (await post(runtime.url, "msg_f")).status_code == 200
        for status in (99, 100, 101, 600):
            with pytest.raises(ValueError, match="final HTTP status from 200 to 599"):
                runtime.respond(status)
        assert (await post(runtime.url, "msg_f")).status_code == 200  # the answers it had


async def test_a_request_is_checked_done_at_once_and_told_to_watchers(tmp_path: Path) -> None:
    """What a dashboard asks of its own receiver is done before ``request`` returns, with the
    same checks as a viewer's request over the control channel; the header's status follows."""
    changes: list[bool] = []
    async with DeliveryRuntime(settings(tmp_path), setup()) as runtime:
        await runtime.serve()
        assert runtime.url is not None
        runtime.watch(lambda: changes.append(runtime.paused))
        answer = runtime.request("pause", paused=True)
        assert answer.done() and answer.result() is None
        assert runtime.paused and runtime.status.paused and changes == [True]
        assert (await post(runtime.url, "msg_p")).status_code == 503
        with pytest.raises(ValueError, match="from 0 to 1000"):
            runtime.request("fail_first", attempts=-1)
        runtime.request("pause", paused=False)
        assert (await post(runtime.url, "msg_q")).status_code == 200
        assert changes == [True, False]


async def test_without_a_receiver_a_request_is_answered_with_why(tmp_path: Path) -> None:
    async with DeliveryRuntime(settings(tmp_path)) as runtime:
        answer = runtime.request("pause", paused=True)
        assert answer.done()
        with pytest.raises(ControlError, match="No receiver runs"):
            answer.result()
        assert not runtime.paused and runtime.describe() is None and not runtime.gone


async def test_forward_results_reach_subscribers(tmp_path: Path) -> None:
    got: list[bytes] = []

    async def hook(request: web.Request) -> web.Response:
        got.append(await request.read())
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    answers: list[tuple[str, int | None]] = []
    try:
        target = f"http://127.0.0.1:{port}/hook"
        async with DeliveryRuntime(settings(tmp_path), setup(routes=(Route(target),))) as runtime:

            def on_forward(row: ForwardRow, result: ForwardResult) -> None:
                answers.append((row.target, result.status))

            runtime.subscribe(forwards=on_forward)
            await runtime.serve()
            assert runtime.url is not None
            assert (await post(runtime.url, "msg_fw")).status_code == 200
            await until(lambda: answers)
        assert answers == [(target, 204)]
        assert got == [BODY]
    finally:
        await runner.cleanup()


async def test_queued_forwards_wait_unless_forwarding_is_asked_for(tmp_path: Path) -> None:
    """A plain runtime leaves what an earlier run queued where it is, and says how many wait."""
    s = settings(tmp_path)
    async with DeliveryRuntime(s, setup(routes=(Route("http://127.0.0.1:9/down"),))) as runtime:
        await runtime.serve()
        assert runtime.url is not None
        assert (await post(runtime.url, "msg_q")).status_code == 200
        await runtime.store.settled()
    async with DeliveryRuntime(s, setup()) as plain:
        assert plain.forwarder is None
        assert await plain.pending_forwards() == 1
        await asyncio.sleep(0.2)
        assert await plain.pending_forwards() == 1


async def test_a_store_handed_in_stays_open(tmp_path: Path) -> None:
    store = await Store.open(settings(tmp_path).database_path)
    try:
        async with DeliveryRuntime(settings(tmp_path), store=store) as runtime:
            assert runtime.store is store and runtime.receiver is None
        assert (await store.stats()).received == 0  # still usable
    finally:
        await store.close()


async def test_a_damaged_registry_fails_before_the_port_is_taken(tmp_path: Path) -> None:
    """Store, then registry, then receiver: a damaged endpoints file stops the opening before any
    port is bound, and what was opened is closed again."""
    s = settings(tmp_path)
    s.home.mkdir(parents=True)
    s.endpoints_path.write_text("{not json")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runtime = DeliveryRuntime(s, DeliverySetup(options=ReceiverOptions(port=port)))
    with pytest.raises(ConfigError, match="damaged"):
        await runtime.open()
    assert runtime.receiver is None
    with pytest.raises(RuntimeError):
        runtime.store  # noqa: B018
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))  # never taken


async def test_serving_and_a_relayed_delivery_at_once_share_one_receiver(tmp_path: Path) -> None:
    """A feed's first delivery may arrive while serve() is still building the receiver (its
    module is imported in a thread): both get the same receiver, and the delivery is stored."""
    async with DeliveryRuntime(settings(tmp_path), setup()) as runtime:
        now = datetime.now(UTC)
        relayed = RelayedRequest.from_relay(
            relay_url="https://relay.example/sub/x",
            cursor=1,
            received_at_ms=int(now.timestamp() * 1000),
            method="POST",
            path="/webhooks",
            headers=[*sign(SECRET, "msg_relayed", BODY, now).items()],
            body=BODY,
            source="203.0.113.5",
        )
        _, stored = await asyncio.gather(runtime.serve(), runtime.accept(relayed))
        assert stored.webhook_id == "msg_relayed" and stored.verdict == "verified"
        assert runtime.serving and runtime.receiver is not None
