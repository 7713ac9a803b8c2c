"""The demo's behaviour, independent of any screen: the simulated service, a delivery runtime on the
demo's own data, the endpoint registered through the real API client, and a trickle of events.

Some deliveries fail on purpose (``DemoInjection``: the receiver answers 503 to their first
attempts) so the service's retries show up, and now and then a request signed with the wrong
secret shows what a rejection looks like. The demo's data lives in ``<home>/demo``, emptied at each
start and never mixed with real history; a lock file (``<home>/demo.lock``) keeps a second demo on
the same home from emptying the data of one that runs.

With a relay (``demo --relay``) the endpoint is registered at the relay's ingress URL instead: the
service posts there, and the runtime receives every delivery through the relay link (a feed).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import httpx

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.api.topics import TOPICS
from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import Secret
from walletpass_tui.errors import WalletpassError
from walletpass_tui.private_files import open_regular
from walletpass_tui.runtime.local import DeliveryRuntime, Feed
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.sim.service import SimulatedService
from walletpass_tui.tunnel.provider import Provider
from walletpass_tui.webhooks.injection import Injection
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.verify import sign

DEMO_TIME_SCALE = 0.01  # 5 s -> 50 ms, 5 min -> 3 s, 30 min -> 18 s
WRONG_SECRET = "whsec_ZGVtbzogYSBzZWNyZXQgdGhhdCBtYXRjaGVzIG5vdGhpbmc="

# Starts a relay with its data in the given directory: yields its ingress URL and the feed that
# follows it (built by the command line, which may import the relay).
RelayStarter = Callable[[Path], contextlib.AbstractAsyncContextManager[tuple[str, Feed]]]


class DemoError(WalletpassError):
    """The demo cannot start as asked; the message says what to do."""


@dataclass(frozen=True)
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


def demo_settings(settings: Settings, sim_url: str, api_key: str, port: int) -> Settings:
    """The user's settings pointed at the simulator, with the data in ``<home>/demo``."""
    return settings.with_values(
        source="demo",
        home=settings.home / "demo",
        base_url=sim_url,
        registration_url=sim_url,
        api_key=Secret(api_key),
        allow_http=True,
        receiver_host="127.0.0.1",
        receiver_port=port,
        public_url=None,
    )


@contextlib.contextmanager
def data_lock(home: Path, what: str = "demo") -> Iterator[Path]:
    """Hold ``<home>/<what>.lock`` while the block runs; raises DemoError when another process
    holds it (the lock dies with its process, so a crash never leaves it stuck)."""
    import fcntl

    home.mkdir(parents=True, exist_ok=True)
    path = home / f"{what}.lock"
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, follow_links=False, own=True)
    except OSError as exc:
        raise DemoError(
            f"Cannot open {path} ({exc.strerror or exc}); remove it and start again."
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            raise DemoError(
                f"Another {what} is running on {home} (pid {holder}); its data would be wiped. "
                f"Stop it first, or give this one its own --home."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock


async def trickle(
    sim: SimulatedService,
    runtime: DeliveryRuntime,
    interval: float,
    rng: random.Random,
    url: str | None = None,
) -> None:
    """Emit events until cancelled; now and then post one signed with the wrong secret (to
    ``url``, the endpoint's: the receiver or the relay)."""
    while not runtime.serving:  # noqa: ASYNC110  the dashboard serves after its first frame
        await asyncio.sleep(0.05)
    url = url or runtime.url
    assert url is not None
    async with httpx.AsyncClient(timeout=5) as client:
        count = 0
        while True:
            count += 1
            topic = rng.choice(TOPICS)
            if count % 9 == 0:
                await _forged(client, url, topic, f"msg_forged{count:05d}")
            else:
                sim.emit(topic)
            await asyncio.sleep(rng.uniform(0.4, 1.6) * interval)


async def _forged(client: httpx.AsyncClient, url: str, topic: str, msg_id: str) -> None:
    body = b'{"type": "' + topic.encode() + b'", "note": "signed with the wrong secret"}'
    headers = {
        **sign(WRONG_SECRET, msg_id, body, datetime.now(UTC)),
        "Content-Type": "application/json",
    }
    with contextlib.suppress(httpx.HTTPError):  # a forged post not taken: the demo goes on
        await client.post(url, content=body, headers=headers)


@dataclass(frozen=True)
class Demo:
    """A running demo: the simulator, the open runtime on the demo's data, the API client."""

    sim: SimulatedService
    runtime: DeliveryRuntime
    client: WalletPassClient
    settings: Settings


@contextlib.asynccontextmanager
async def running_demo(
    settings: Settings,
    port: int,
    interval: float,
    relay: RelayStarter | None = None,
    tunnel: Provider | None = None,
) -> AsyncIterator[Demo]:
    """Lock the demo's data, empty it, start the simulator and the runtime (port bound: a port in
    use raises ReceiverError here), register the endpoint, and trickle events until the block
    ends; everything is stopped in reverse order. ``relay``: start a relay in ``<demo>/relay`` and
    send every delivery through it. ``tunnel``: give the demo's receiver a public URL too."""
    with data_lock(settings.home):
        sim = SimulatedService(time_scale=DEMO_TIME_SCALE)
        sim_url = await sim.start("127.0.0.1", 0)
        try:
            demo = demo_settings(settings, sim_url, sim.api_key, port)
            shutil.rmtree(demo.home, ignore_errors=True)
            options = ReceiverOptions(
                host="127.0.0.1",
                port=port,
                path=demo.receiver_path,
                tolerance_s=demo.tolerance_s,
                max_body=demo.max_body,
                injection=DemoInjection(),
            )
            async with contextlib.AsyncExitStack() as stack:
                ingress = None
                feeds: tuple[Feed, ...] = ()
                if relay is not None:
                    ingress, feed = await stack.enter_async_context(relay(demo.home / "relay"))
                    feeds = (feed,)
                setup = DeliverySetup(options=options, tunnel=tunnel)
                runtime = await stack.enter_async_context(DeliveryRuntime(demo, setup, feeds=feeds))
                assert runtime.bound is not None
                demo = demo.with_values(receiver_port=runtime.bound[1])
                target = ingress or demo.receiver_url()
                registry = runtime.registry
                async with WalletPassClient(
                    demo, on_endpoint_created=registry.record_created
                ) as client:
                    await client.create_webhook_endpoint(target, list(TOPICS), enabled=True)
                    driver = asyncio.create_task(
                        trickle(sim, runtime, interval, random.Random(), target),
                        name="demo trickle",
                    )
                    try:
                        yield Demo(sim, runtime, client, demo)
                    finally:
                        driver.cancel()
                        with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                            await driver
        finally:
            await sim.stop()
