"""``demo``: the whole product on the built-in simulated service, no account needed.

In one process: the simulated service, the receiver and the dashboard. An endpoint is registered
through the real API client (so the real create path runs and its secret is stored as for a real
one), then a steady trickle of events flows. Some deliveries fail on purpose (the receiver answers
503 to their first attempts) so the service's retries show up, and now and then a request signed
with the wrong secret shows what a rejection looks like. The demo's data lives in its own
directory, never mixed with real history, and starts empty each time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import shutil
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.models import TOPICS
from walletpass_tui.cli.common import CommandError, settings_from_args
from walletpass_tui.cli.receiver_flags import receiver_options
from walletpass_tui.config import Secret, Settings
from walletpass_tui.sim import SimulatedService
from walletpass_tui.webhooks.endpoints import EndpointRegistry
from walletpass_tui.webhooks.receiver import Injection, Receiver
from walletpass_tui.webhooks.store import Attempt, Store
from walletpass_tui.webhooks.verify import sign

if TYPE_CHECKING:
    from walletpass_tui.ui.app import WalletPassApp

DEMO_TIME_SCALE = 0.01  # 5 s -> 50 ms, 5 min -> 3 s, 30 min -> 18 s
WRONG_SECRET = "whsec_ZGVtbzogYSBzZWNyZXQgdGhhdCBtYXRjaGVzIG5vdGhpbmc="


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        parents=parents,
        help="the dashboard on a built-in simulated service (no account needed)",
        description="Start the simulated Wallet Pass Service and the receiver in this process, "
        "register an endpoint through the real API client, and open the dashboard while events "
        "flow. Some deliveries fail on purpose so the service's retries show (its schedule runs "
        f"{1 / DEMO_TIME_SCALE:g}x faster). The demo keeps its data in <home>/demo, emptied at each "
        "start, never mixed with real history.",
        epilog="example: walletpass-tui demo --port 8787",
    )
    p.add_argument("--port", type=int, default=0, help="receiver port (default: any free port)")
    p.add_argument(
        "--interval",
        type=float,
        default=1.5,
        metavar="SECONDS",
        help="average time between events (default 1.5)",
    )
    p.set_defaults(handler=cmd_demo)


@dataclass
class DemoInjection(Injection):
    """Fails the first one or two attempts of about one message in four, deterministically by id."""

    def decide(self, attempt: Attempt) -> Attempt:
        decided = super().decide(attempt)
        if decided is not attempt or not attempt.verified or not attempt.webhook_id:
            return decided
        roll = sum(attempt.webhook_id.encode()) % 8
        failures = 2 if roll == 0 else 1 if roll == 1 else 0
        if attempt.attempt_no <= failures:
            return replace(
                attempt, status=503, note=f"injected: demo failure {attempt.attempt_no}/{failures}"
            )
        return attempt


def demo_settings(settings: Settings, sim: SimulatedService, port: int) -> Settings:
    return settings.with_values(
        source="demo",
        home=settings.home / "demo",
        base_url=sim.url,
        registration_url=sim.url,
        api_key=Secret(sim.api_key),
        allow_http=True,
        receiver_host="127.0.0.1",
        receiver_port=port,
        public_url=None,
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def prepare(settings: Settings, port: int) -> tuple[SimulatedService, Settings]:
    """Start the simulator, empty the demo directory, register the demo endpoint."""
    sim = SimulatedService(time_scale=DEMO_TIME_SCALE)
    await sim.start("127.0.0.1", 0)
    demo = demo_settings(settings, sim, port or free_port())
    shutil.rmtree(demo.home, ignore_errors=True)
    registry = EndpointRegistry(demo.endpoints_path)
    async with WalletPassClient(demo, on_endpoint_created=registry.record_created) as client:
        await client.create_webhook_endpoint(demo.receiver_url(), list(TOPICS), enabled=True)
    return sim, demo


async def trickle(
    sim: SimulatedService, receiver: Receiver, interval: float, rng: random.Random
) -> None:
    """Emit events until cancelled; now and then post one signed with the wrong secret."""
    while receiver.bound is None:  # noqa: ASYNC110  the app starts the receiver when it mounts
        await asyncio.sleep(0.05)
    async with httpx.AsyncClient(timeout=5) as client:
        count = 0
        while True:
            count += 1
            topic = rng.choice(TOPICS)
            if count % 9 == 0:
                body = (
                    b'{"type": "' + topic.encode() + b'", "note": "signed with the wrong secret"}'
                )
                msg_id = f"msg_forged{count:05d}"
                with contextlib.suppress(httpx.HTTPError):
                    await client.post(
                        receiver.url,
                        content=body,
                        headers={
                            **sign(WRONG_SECRET, msg_id, body, datetime.now(UTC)),
                            "Content-Type": "application/json",
                        },
                    )
            else:
                sim.emit(topic)
            await asyncio.sleep(rng.uniform(0.4, 1.6) * interval)


@contextlib.asynccontextmanager
async def demo_session(
    settings: Settings, port: int, interval: float
) -> AsyncIterator[WalletPassApp]:
    """The demo's dashboard, wired to a running simulator and a trickle of events.

    ``run_demo`` runs it in the terminal; tests drive the same object with ``App.run_test()``.
    """
    from walletpass_tui.ui.app import build_app

    sim, demo = await prepare(settings, port)
    try:
        registry = EndpointRegistry(demo.endpoints_path)
        store = await Store.open(demo.database_path)
        try:
            options = replace(receiver_options(demo), injection=DemoInjection())
            receiver = Receiver(store, options, registry=registry)
            async with WalletPassClient(
                demo, on_endpoint_created=registry.record_created
            ) as client:
                app = build_app(demo, client, store, registry, receiver, mode="demo")
                driver = asyncio.create_task(trickle(sim, receiver, interval, random.Random()))
                try:
                    yield app
                finally:
                    driver.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await driver
                    await receiver.stop()
        finally:
            await store.close()
    finally:
        await sim.stop()


async def run_demo(settings: Settings, port: int, interval: float) -> int:
    async with demo_session(settings, port, interval) as app:
        await app.run_async()
    return app.return_code or 0


def cmd_demo(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise CommandError("--interval takes a positive number of seconds.")
    settings = settings_from_args(args)
    return asyncio.run(run_demo(settings, args.port, args.interval))
