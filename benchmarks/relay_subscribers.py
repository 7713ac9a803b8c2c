"""The subscribers of ``relay.py``'s latency part, in processes of their own.

    python benchmarks/relay_subscribers.py store|receipt SUBSCRIBE_URL COUNT EXPECT OUT
    python benchmarks/relay_subscribers.py light URL_A,URL_B COUNT EXPECT OUT

``store``: COUNT laptop sides (a ``DeliveryRuntime`` with its own home and a ``RelayLink`` each);
OUT gets, per laptop, the moment each delivery's row was committed, and ``OUT.received`` the moment
its event was read off the stream. ``receipt``: COUNT bare ``RelaySubscriber``s; OUT gets the moment
each handler ran. ``light``: COUNT light subscribers in this one process, alternately on each URL
given: each is a raw socket reading the stream and noting when each delivery's bytes arrived
(by the number in its webhook-id, ``msg_fan_NNNNNN``), with no parsing beyond finding that id, so
what is measured is the relay, not the subscriber; OUT gets the times as raw doubles, COUNT rows of
EXPECT (NaN: never arrived). ``OUT.ready`` appears once every subscriber is connected. The token comes from
``BENCH_RELAY_TOKEN``. The laptops run on uvloop where it is installed, as ``listen --relay``
does; ``BENCH_LOOP=asyncio`` runs them on asyncio's own loop instead.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from receiver import SECRET  # noqa: E402


async def _subscribers_main(url: str, count: int, expect: int, out: Path) -> list[dict[str, float]]:
    from walletpass_tui.relay.events import RelayedDelivery
    from walletpass_tui.relay.link.subscriber import RelaySubscriber

    token = os.environ["BENCH_RELAY_TOKEN"]
    times: list[dict[str, float]] = [{} for _ in range(count)]
    done = asyncio.Event()
    connected = 0
    ready = Path(str(out) + ".ready")

    def handler(i: int):  # type: ignore[no-untyped-def]
        async def on_delivery(d: RelayedDelivery) -> None:
            times[i][d.webhook_id or ""] = time.monotonic()
            if all(len(t) >= expect for t in times):
                done.set()

        return on_delivery

    def on_state(state) -> None:  # type: ignore[no-untyped-def]
        nonlocal connected
        if state.connected and state.attempts == 1:
            connected += 1
            if connected == count:
                ready.write_text("ok")

    subs = [
        RelaySubscriber(url, token, on_delivery=handler(i), on_state=on_state) for i in range(count)
    ]
    tasks = [asyncio.create_task(s.run()) for s in subs]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), expect / 50 + 120)
    for t in tasks:
        t.cancel()
    return times


FAN_ID = re.compile(rb'"webhook-id","msg_fan_(\d{6})"')


async def _light_main(urls: list[str], count: int, expect: int, out: Path) -> None:
    """``count`` light subscribers, alternately on each of ``urls``: times into ``out``."""
    token = os.environ["BENCH_RELAY_TOKEN"]
    times = [array.array("d", [math.nan]) * expect for _ in range(count)]
    seen = [0] * count
    connected = 0
    ready = Path(str(out) + ".ready")
    done = asyncio.Event()

    async def subscriber(i: int) -> None:
        nonlocal connected
        url = urlsplit(urls[i % len(urls)])
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        writer.write(
            f"GET {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
            f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n"
            "Last-Event-ID: 0\r\n\r\n".encode()
        )
        mine, left, announced = times[i], b"", False
        while True:
            data = await reader.read(256 * 1024)
            if not data:
                return
            now = time.monotonic()
            data = left + data
            if not announced and b": connected" in data:
                announced = True
                connected += 1
                if connected == count:
                    _mark(ready)
            end = 0
            for match in FAN_ID.finditer(data):
                k = int(match[1])
                if k < expect and math.isnan(mine[k]):
                    mine[k] = now
                    seen[i] += 1
                end = match.end()
            left = data[max(end, len(data) - 64) :]
            if seen[i] >= expect and all(n >= expect for n in seen):
                done.set()

    tasks = [asyncio.create_task(subscriber(i)) for i in range(count)]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), expect / 20 + 120)
    for task in tasks:
        task.cancel()
    with out.open("wb") as f:
        for row in times:
            row.tofile(f)


_RECEIVED: list[dict[str, float]] = []  # per laptop: when each event was read off the stream


async def _laptops_main(url: str, count: int, expect: int, out: Path) -> list[dict[str, float]]:
    """``count`` laptop sides (a runtime + a relay link each, own home): the commit times."""
    from collections.abc import Sequence

    from walletpass_tui.config import Settings
    from walletpass_tui.relay.link.feed import RelayLink
    from walletpass_tui.relay.link.state import LinkState
    from walletpass_tui.runtime.local import DeliveryRuntime
    from walletpass_tui.runtime.setup import DeliverySetup
    from walletpass_tui.webhooks.listening import ReceiverOptions
    from walletpass_tui.webhooks.models import Attempt
    from walletpass_tui.webhooks.verify import SigningKey

    token = os.environ["BENCH_RELAY_TOKEN"]
    times: list[dict[str, float]] = [{} for _ in range(count)]
    received: list[dict[str, float]] = [{} for _ in range(count)]  # the event read off the stream
    done = asyncio.Event()
    connected: set[int] = set()
    ready = Path(str(out) + ".ready")
    rejected = 0

    class TimedLink(RelayLink):
        def __init__(self, i: int) -> None:
            super().__init__(url, token)
            self.i = i

        async def _deliver(self, runtime, delivery) -> None:  # type: ignore[no-untyped-def]
            received[self.i][delivery.webhook_id or ""] = time.monotonic()
            await super()._deliver(runtime, delivery)

    def on_commit(i: int):  # type: ignore[no-untyped-def]
        def stored(batch: Sequence[Attempt]) -> None:
            nonlocal rejected
            now = time.monotonic()
            for a in batch:
                if a.verified:
                    times[i][a.webhook_id or ""] = now
                else:
                    rejected += 1
            if all(len(t) >= expect for t in times):
                done.set()

        return stored

    def on_state(i: int):  # type: ignore[no-untyped-def]
        def state(s: LinkState) -> None:
            if s.connected and i not in connected:
                connected.add(i)
                if len(connected) == count:
                    ready.write_text("ok")

        return state

    key = SigningKey.from_secret(SECRET)
    async with contextlib.AsyncExitStack() as stack:
        for i in range(count):
            home = out.parent / f"{out.stem}-laptop-{i}"
            link = TimedLink(i)
            link.subscribe(on_state(i))
            options = ReceiverOptions(host="127.0.0.1", port=0, tolerance_s=3600, secrets=[key])
            runtime = DeliveryRuntime(
                Settings(home=home, receiver_port=0), DeliverySetup(options=options), feeds=[link]
            )
            await stack.enter_async_context(runtime)
            runtime.subscribe(on_commit(i))
            await runtime.serve()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), expect / 50 + 120)
    if rejected:
        print(f"   ({rejected} relayed deliveries were rejected by a laptop)", file=sys.stderr)
    _RECEIVED[:] = received
    return times


def main() -> None:
    _, mode, url, count, expect, out = sys.argv
    if mode == "light":
        _loop_run(_light_main(url.split(","), int(count), int(expect), Path(out)))
        return
    run = _subscribers_main if mode == "receipt" else _laptops_main
    # On uvloop where it is installed, as ``listen --relay`` runs (cli/listen_cmd.run_loop).
    try:
        if os.environ.get("BENCH_LOOP") == "asyncio":
            raise ImportError
        import uvloop
    except ImportError:
        times = asyncio.run(run(url, int(count), int(expect), Path(out)))
    else:
        times = uvloop.run(run(url, int(count), int(expect), Path(out)))
    Path(out).write_text(json.dumps(times))
    if _RECEIVED:
        Path(out + ".received").write_text(json.dumps(_RECEIVED))


def _mark(path: Path) -> None:
    path.write_text("ok")


def _loop_run(main: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


if __name__ == "__main__":
    main()
