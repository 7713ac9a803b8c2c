"""Dashboard benchmark: first paint, key presses, live latency and memory over a large history.

    python benchmarks/dashboard.py                       # 100,000 stored deliveries (~1 minute)
    python benchmarks/dashboard.py --deliveries 20000 --seconds 5      # quicker

For each history size (100, then ``--deliveries``) a data directory is filled in a child process
through the real store (``Store.record`` in big concurrent batches: the real schema, indexes and
full-text index), then the dashboard runs in a *fresh* child process, headless (``App.run_test``,
120x36), with its receiver on a free port, and prints:

* start to first painted log row: from launching the process (interpreter start and imports
  included) and from building the app;
* key presses, each from the press to the repaint of what it changes: moving the cursor (``j``),
  opening a delivery (Enter, until its detail is loaded and the next frame drawn), applying a text
  filter (Enter in the filter bar, until the filtered rows are painted) for a selective word and for
  one every delivery holds (the worst case for the full-text index);
* deliveries arriving at ``--rate`` per second for ``--seconds``: signed POSTs from another thread
  to the in-process receiver; for each, the delay from its 2xx answer to the first paint of its row;
* memory: peak RSS, and RSS after the run, for each history size (it should not grow with it).

Times come from ``LogLines.paint_observer``, a hook called for every log line drawn. Figures only;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"
ENDPOINT = "ep_bench01"
BATCH = 4_000


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- filling a data directory (child process) ------------------------------------------------------


async def populate(home: Path, count: int) -> None:
    from walletpass_tui.webhooks.body_fields import labels
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
    from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt
    from walletpass_tui.webhooks.store import Store

    EndpointRegistry(home / "endpoints.json").import_endpoint(
        ENDPOINT, "https://bench.example/hooks", ["pass.activated", "pass.deactivated"], SECRET
    )
    store = await Store.open(home / "deliveries.sqlite3")
    base = int(time.time() * 1000) - count * 50
    started = time.perf_counter()

    def make(n: int) -> Attempt:
        topic = ("pass.activated", "pass.deactivated")[n % 3 == 0]
        body = json.dumps(
            {
                "type": topic,
                "timestamp": "2026-11-23T14:02:11.204Z",
                "data": {
                    "passId": f"pass_{n:07d}",
                    "passTemplateId": "tpl_7HqYb2LmN4",
                    "serialNumber": f"{n * 7919 % 10**9:09d}",
                    "platform": ("apple", "google")[n % 2],
                    "reason": "added_to_wallet",
                },
            }
        ).encode()
        ok = n % 50 != 0
        found_topic, pass_id = labels(body)
        msg = f"msg_bench{n:09d}"
        return Attempt(
            received_at_ms=base + n * 50,
            method="POST",
            path="/webhooks",
            headers=(("content-type", "application/json"), ("webhook-id", msg)),
            body=body,
            verdict=VERIFIED if ok else REJECTED,
            reason="verified" if ok else "no signature matches",
            status=200 if ok else 401,
            webhook_id=msg,
            endpoint_id=ENDPOINT if ok else None,
            remote_addr="127.0.0.1",
            topic=found_topic,
            pass_id=pass_id,
        )

    for start in range(0, count, BATCH):
        await asyncio.gather(
            *(store.record(make(n)) for n in range(start, min(count, start + BATCH)))
        )
    await store.settled()
    await store.close()
    print(json.dumps({"insert_s": time.perf_counter() - started}))


# -- measuring (child process) ------------------------------------------------------------------------


class Paints:
    """Collects, from the log view's paint hook, when each row was first and last drawn."""

    def __init__(self) -> None:
        self.first_by_webhook: dict[str, float] = {}
        self.last_by_id: dict[int, float] = {}
        self.first_paint: float | None = None

    def __call__(self, row: Any) -> None:
        now = time.perf_counter()
        if self.first_paint is None:
            self.first_paint = now
        self.last_by_id[row.id] = now
        if row.webhook_id and row.webhook_id not in self.first_by_webhook:
            self.first_by_webhook[row.webhook_id] = now


async def until(condition: Callable[[], Any], timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.0005)


def sender(
    url: str, rate: float, seconds: float, answered: dict[str, float], stop: threading.Event
) -> None:
    """Signed POSTs at ``rate`` per second from another thread; records each 2xx's arrival."""
    import httpx

    from walletpass_tui.webhooks.verify import sign

    interval = 1 / rate
    start = time.perf_counter()
    with httpx.Client(timeout=10) as http:
        n = 0
        while not stop.is_set() and time.perf_counter() - start < seconds:
            due = start + n * interval
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            msg = f"msg_live{n:07d}"
            body = json.dumps(
                {"type": "pass.activated", "data": {"passId": f"pass_live{n}"}}
            ).encode()
            headers = sign(SECRET, msg, body, datetime.now(UTC))
            headers["content-type"] = "application/json"
            response = http.post(url, content=body, headers=headers)
            if 200 <= response.status_code < 300:
                answered[msg] = time.perf_counter()
            n += 1


async def measure(home: Path, rate: float, seconds: float, launched_at: float) -> dict[str, Any]:
    from walletpass_tui.config import Settings
    from walletpass_tui.runtime.local import DeliveryRuntime
    from walletpass_tui.runtime.setup import DeliverySetup
    from walletpass_tui.ui.app import build_app
    from walletpass_tui.ui.panes.event_log import EventLogPane
    from walletpass_tui.ui.screens.detail import DetailScreen
    from walletpass_tui.ui.screens.main import MainScreen
    from walletpass_tui.ui.widgets.log_lines import LogLines
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
    from walletpass_tui.webhooks.listening import ReceiverOptions
    from walletpass_tui.webhooks.store import Store

    imported_at = time.time()
    paints = Paints()
    LogLines.paint_observer = paints
    settings = Settings(home=home, receiver_port=0)
    registry = EndpointRegistry(settings.endpoints_path)
    built = time.perf_counter()
    store = await Store.open(settings.database_path)
    setup = DeliverySetup(options=ReceiverOptions(port=0))
    runtime = DeliveryRuntime(settings, setup, store=store, registry=registry)
    await runtime.open()
    app = build_app(runtime)
    assert runtime.url is not None
    result: dict[str, Any] = {"stored": (await store.stats()).received}
    async with app.run_test(size=(120, 36)) as pilot:
        await until(lambda: paints.first_paint is not None)
        assert paints.first_paint is not None
        result["first_paint_from_launch_s"] = (
            time.time() - launched_at - (time.perf_counter() - paints.first_paint)
        )
        result["first_paint_from_build_s"] = paints.first_paint - built
        result["imports_s"] = imported_at - launched_at
        await until(lambda: isinstance(app.screen, MainScreen))
        main = app.screen
        assert isinstance(main, MainScreen)
        log = main.query_one(EventLogPane)
        await until(lambda: log.total is not None)
        await pilot.pause(0.3)

        async def press_until(key: str, done: Callable[[float], bool]) -> float:
            t0 = time.perf_counter()
            send_key(app, key)
            await until(lambda: done(t0))
            return time.perf_counter() - t0

        def cursor_painted(t0: float) -> bool:
            row = log.window.current
            return row is not None and paints.last_by_id.get(row.id, 0) > t0

        moves = [await press_until("j", cursor_painted) for _ in range(30)]
        moves += [await press_until("k", cursor_painted) for _ in range(10)]
        result["cursor_move_ms"] = summary(moves)

        opens = []
        for _ in range(10):
            drawn: list[float] = []

            def detail_drawn(t0: float, drawn: list[float] = drawn) -> bool:
                screen = app.screen
                if not isinstance(screen, DetailScreen) or not screen.query("#detail-full"):
                    return False  # pushed, not composed yet
                if screen.detail.data is None:
                    return False
                if not drawn:
                    app.call_after_refresh(lambda: drawn.append(time.perf_counter()))
                    drawn.append(0.0)
                return len(drawn) > 1

            opens.append(await press_until("enter", detail_drawn))
            await pilot.press("escape")
            await pilot.press("j")
        result["open_detail_ms"] = summary(opens)

        async def filter_for(text: str) -> float:
            await pilot.press("slash")
            field = log.filter_input
            field.value = text  # as if pasted; Enter applies it at once (no typing pause)
            t0 = time.perf_counter()
            send_key(app, "enter")
            await until(
                lambda: (
                    not log.reloading
                    and (
                        not log.window.rows or paints.last_by_id.get(log.window.rows[0].id, 0) > t0
                    )
                )
            )
            took = time.perf_counter() - t0
            await until(lambda: log.total is not None)
            counted = time.perf_counter() - t0
            result.setdefault("filters", []).append(
                {
                    "text": text,
                    "matches": log.total,
                    "paint_ms": took * 1000,
                    "count_ms": counted * 1000,
                }
            )
            await pilot.press("escape")
            await until(lambda: not log.reloading and log.total is not None)
            return took

        await filter_for("pass_0012345")
        await filter_for("pass_00123")
        await filter_for("pass")
        await filter_for("verdict:rejected")

        await pilot.press("f")
        await pilot.pause(0.2)
        answered: dict[str, float] = {}
        stop = threading.Event()
        rss_before = rss_mb()
        thread = threading.Thread(
            target=sender, args=(runtime.url, rate, seconds, answered, stop), daemon=True
        )
        thread.start()
        await asyncio.to_thread(thread.join)
        await pilot.pause(0.5)
        delays = [
            (paints.first_by_webhook[msg] - at)
            for msg, at in answered.items()
            if msg in paints.first_by_webhook
        ]
        result["live"] = {
            "sent_ok": len(answered),
            "painted": len(delays),
            "delay_ms": summary([max(0.0, d) for d in delays]),
        }
        result["rss_before_live_mb"] = rss_before
        result["rss_after_mb"] = rss_mb()
        result["window_rows"] = len(log.window)
    await runtime.close()
    await store.close()
    result["peak_rss_mb"] = rss_mb("VmHWM")
    return result


_CHARACTERS = {"enter": "\r", "escape": "\x1b", "slash": "/"}


def send_key(app: Any, key: str) -> None:
    """A key posted to the app as the terminal driver delivers it: no test-harness waiting for
    the app to go idle (Pilot.press polls for idleness, which would be timed too)."""
    from textual import events

    event = events.Key(key, _CHARACTERS.get(key, key if len(key) == 1 else None))
    event.set_sender(app)
    app.post_message(event)


def summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    if not ms:
        return {}
    return {
        "n": len(ms),
        "p50": statistics.median(ms),
        "p95": ms[min(len(ms) - 1, int(len(ms) * 0.95))],
        "max": ms[-1],
    }


# -- orchestration ---------------------------------------------------------------------------------


def child(*args: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(size: int, fill: dict[str, Any], run: dict[str, Any]) -> None:
    def fmt(s: dict[str, float]) -> str:
        return f"p50 {s['p50']:.1f} ms  p95 {s['p95']:.1f} ms  max {s['max']:.1f} ms  (n={s['n']})"

    print(f"\n== {size:,} deliveries stored (filled in {fill['insert_s']:.1f} s) ==")
    print(
        f"first painted log row: {run['first_paint_from_launch_s'] * 1000:.0f} ms from process "
        f"launch ({run['imports_s'] * 1000:.0f} ms of it imports), "
        f"{run['first_paint_from_build_s'] * 1000:.0f} ms from building the app"
    )
    print(f"cursor move (j/k) to repaint:    {fmt(run['cursor_move_ms'])}")
    print(f"Enter to detail drawn:           {fmt(run['open_detail_ms'])}")
    for f in run["filters"]:
        print(
            f"filter {f['text']!r:<20} Enter to rows painted {f['paint_ms']:6.1f} ms, "
            f"count shown {f['count_ms']:6.1f} ms ({f['matches']:,} matches)"
        )
    live = run["live"]
    print(
        f"live: {live['sent_ok']} deliveries acknowledged, {live['painted']} painted; "
        f"2xx to row on screen {fmt(live['delay_ms'])}"
    )
    print(
        f"memory: peak RSS {run['peak_rss_mb']:.0f} MB, RSS {run['rss_before_live_mb']:.0f} MB "
        f"before the live phase and {run['rss_after_mb']:.0f} MB after; "
        f"{run['window_rows']} log rows in memory"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--deliveries", type=int, default=100_000, help="stored history (default 100,000)"
    )
    parser.add_argument(
        "--rate", type=float, default=100, help="live deliveries per second (default 100)"
    )
    parser.add_argument(
        "--seconds", type=float, default=10, help="live phase length (default 10 s)"
    )
    sub = parser.add_subparsers(dest="step")
    fill = sub.add_parser("_populate")
    fill.add_argument("home", type=Path)
    fill.add_argument("count", type=int)
    run = sub.add_parser("_measure")
    run.add_argument("home", type=Path)
    run.add_argument("launched_at", type=float)
    run.add_argument("rate", type=float)
    run.add_argument("seconds", type=float)
    args = parser.parse_args()
    if args.step == "_populate":
        asyncio.run(populate(args.home, args.count))
        return 0
    if args.step == "_measure":
        print(
            json.dumps(asyncio.run(measure(args.home, args.rate, args.seconds, args.launched_at)))
        )
        return 0
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores")
    for size in (100, args.deliveries):
        with tempfile.TemporaryDirectory(prefix="walletpass-bench-") as tmp:
            home = Path(tmp) / "home"
            filled = child("_populate", str(home), str(size))
            ran = child("_measure", str(home), repr(time.time()), str(args.rate), str(args.seconds))
            report(size, filled, ran)
    return 0


if __name__ == "__main__":
    sys.exit(main())
