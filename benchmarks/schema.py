"""Payload schemas: rebuilding from a stored history against exporting it, and learning's cost.

    python benchmarks/schema.py                    # 100,000 stored, 3 alternated rounds
    python benchmarks/schema.py --stored 20000 --rounds 1      # a quicker look

Figures, never assertions:

* ``rebuild`` (a fresh process running ``walletpass_tui.schemas.rebuild`` over the history, the
  schema file deleted first) against ``walletpass-tui events export --format jsonl > /dev/null``
  over the same history, alternated, medians; target: at most 2x;
* learning's cost per delivery: in memory (``Catalog.learn``, the pure part) and through the
  schema file (the rebuild's time per verified delivery), so ``listen``'s throughput with learning
  on can be judged: at N deliveries/s the learner's thread takes N x cost of a core.

The history holds the simulator's event bodies (``sim/events.py``), one in 20 rejected.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
BATCH = 500


async def populate(home: Path, count: int) -> None:
    from walletpass_tui.sim.events import event_body
    from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt
    from walletpass_tui.webhooks.store import Store

    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    store = await Store.open(home / "deliveries.sqlite3")
    rng = random.Random(7)
    base = int(time.time() * 1000) - count * 50
    when = datetime(2026, 11, 23, tzinfo=UTC)

    def make(n: int) -> Attempt:
        topic = ("pass.activated", "pass.deactivated")[n % 3 == 0]
        body = json.dumps(event_body(topic, when=when, rng=rng)).encode()
        rejected = n % 20 == 19
        msg = f"msg_schema{n:09d}"
        return Attempt(
            received_at_ms=base + n * 50,
            method="POST",
            path="/webhooks",
            headers=(("content-type", "application/json"), ("webhook-id", msg)),
            body=body,
            verdict=REJECTED if rejected else VERIFIED,
            reason="no signature matches" if rejected else "verified",
            status=401 if rejected else 200,
            webhook_id=msg,
            topic=topic,
        )

    for start in range(0, count, BATCH):
        await asyncio.gather(
            *(store.record(make(n)) for n in range(start, min(count, start + BATCH)))
        )
    await store.settled()
    await store.close()


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of ``argv``."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read() if child.stderr else b""
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {stderr.decode(errors='replace')}")
    return elapsed, usage.ru_utime + usage.ru_stime


def rebuild_argv(history: Path) -> list[str]:
    code = (
        "import sys; from pathlib import Path; from walletpass_tui.schemas import rebuild\n"
        "from walletpass_tui.schemas.storage import schemas_path\nfor f in schemas_path(Path(sys.argv[1])).parent.glob("
        "schemas_path(Path(sys.argv[1])).name + '*'): f.unlink()\n"
        "print(rebuild(Path(sys.argv[1])))"
    )
    return [sys.executable, "-c", code, str(history)]


def in_memory_cost(count: int) -> float:
    """CPU microseconds per delivery of Catalog.learn over simulator bodies (median of 5)."""
    from walletpass_tui.schemas.catalog import Catalog, Delivery
    from walletpass_tui.sim.events import event_body

    rng = random.Random(3)
    topics = ("pass.activated", "pass.deactivated")
    bodies = [
        (topics[n % 2], json.dumps(event_body(topics[n % 2], rng=rng)).encode())
        for n in range(count)
    ]
    rounds = []
    for _ in range(5):
        catalog = Catalog()
        started = time.process_time()
        for n, (topic, body) in enumerate(bodies):
            catalog.learn(Delivery(n + 1, f"msg_{n}", n, topic, "verified", body))
        rounds.append((time.process_time() - started) / count * 1e6)
    return statistics.median(rounds)


def fresh_in_memory_cost(count: int) -> float:
    """in_memory_cost in a fresh process: this one's heap (the history it wrote) would make the
    collector's passes, and so the figure, larger than a receiver's."""
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import schema; print(schema.in_memory_cost({count}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, default=100_000, help="stored deliveries")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds of each")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores; load {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="walletpass-schema-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        started = time.perf_counter()
        asyncio.run(populate(home, args.stored))
        print(f"{args.stored:,} deliveries stored in {time.perf_counter() - started:.0f} s")
        history = home / "deliveries.sqlite3"
        env = {**os.environ, "WALLETPASS_HOME": str(home), "XDG_CONFIG_HOME": str(tmp / "xdg")}
        env.pop("WALLETPASS_API_KEY", None)
        export = [
            str(Path(sys.executable).with_name("walletpass-tui")),
            "events",
            "export",
            "--format",
            "jsonl",
        ]
        wall: dict[str, list[float]] = {"rebuild": [], "export": []}
        cpu: dict[str, list[float]] = {"rebuild": [], "export": []}
        timed(export, env)  # warm the page cache
        for rnd in range(args.rounds):
            order = ("rebuild", "export") if rnd % 2 == 0 else ("export", "rebuild")
            for name in order:
                argv = rebuild_argv(history) if name == "rebuild" else export
                elapsed, used = timed(argv, env)
                wall[name].append(elapsed)
                cpu[name].append(used)
                print(f"  round {rnd + 1} {name}: {elapsed:.2f} s ({used:.2f} s CPU)")
        verified = args.stored - args.stored // 20
        memory_us = fresh_in_memory_cost(20_000)
    print(f"\nload at the end {os.getloadavg()}\n")
    print("| what | ours | peer (same run) | figure | target | |")
    print("|---|---|---|---|---|---|")
    for label, times in (("wall", wall), ("CPU", cpu)):
        ours, peer = statistics.median(times["rebuild"]), statistics.median(times["export"])
        ratio = ours / peer
        verdict = "met" if ratio <= 2 else "NOT MET"
        print(
            f"| schema rebuild over {args.stored:,}, {label} time (median of {args.rounds}) | "
            f"{ours:.2f} s | `events export --format jsonl` {peer:.2f} s | {ratio:.2f}x | <= 2x "
            f"| {verdict} |"
        )
    per_delivery = statistics.median(cpu["rebuild"]) / verified * 1e6
    print(
        f"| learning per delivery, CPU, through the schema file (rebuild / {verified:,} "
        f"verified, start-up included) | {per_delivery:.0f} us | | | | |"
    )
    print(f"| learning per delivery, CPU, in memory (Catalog.learn) | {memory_us:.0f} us | | | | |")
    print(
        f"\nAt 1,000 deliveries/s the learner's thread takes about {memory_us / 10:.1f}% of a "
        f"core in memory ({per_delivery / 10:.1f}% with the schema file's reads and writes)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
