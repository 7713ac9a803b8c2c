"""Start-up benchmark: how much a command costs over a bare Python, measured in the same run.

    python benchmarks/startup.py                  # 15 alternated rounds, 100,000 deliveries stored
    python benchmarks/startup.py --rounds 5 --deliveries 10000      # quicker

Each round runs, one after the other in the same order, ``python -c pass`` and each command as a
fresh process (``python -m walletpass_tui ...``, what the ``walletpass-tui`` script runs), and
records its wall time from spawn to exit. The summary prints the median of each and its ratio to
the bare interpreter's median, beside the targets (``--version`` <= 3x, ``events list --limit 20
--json`` over a 100k-delivery history <= 6x). The history is made once through the real store in
a temporary directory (``--home`` to reuse one).

Figures, never assertions: the module-loading test (tests/test_startup.py) is what guards the
lazy imports in CI; this script shows what they buy.
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
import time
from pathlib import Path

BATCH = 2000

COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("python -c pass", ["-c", "pass"], None),
    ("walletpass-tui --version", ["-m", "walletpass_tui", "--version"], 3.0),
    ("walletpass-tui --help", ["-m", "walletpass_tui", "--help"], None),
    (
        "walletpass-tui config show --json",
        ["-m", "walletpass_tui", "config", "show", "--json"],
        None,
    ),
    (
        "walletpass-tui events list --limit 20 --json",
        ["-m", "walletpass_tui", "events", "list", "--limit", "20", "--json"],
        6.0,
    ),
]


async def populate(home: Path, count: int) -> float:
    from walletpass_tui.webhooks.models import VERIFIED, Attempt
    from walletpass_tui.webhooks.store import Store

    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    store = await Store.open(home / "deliveries.sqlite3")
    base = int(time.time() * 1000) - count * 50
    started = time.perf_counter()

    def make(n: int) -> Attempt:
        topic = ("pass.activated", "pass.deactivated")[n % 3 == 0]
        body = json.dumps({"type": topic, "data": {"passId": f"pass_{n:07d}"}}).encode()
        msg = f"msg_start{n:09d}"
        return Attempt(
            received_at_ms=base + n * 50,
            method="POST",
            path="/webhooks",
            headers=(("content-type", "application/json"), ("webhook-id", msg)),
            body=body,
            verdict=VERIFIED,
            reason="verified",
            status=200,
            webhook_id=msg,
            topic=topic,
            pass_id=f"pass_{n:07d}",
        )

    for start in range(0, count, BATCH):
        await asyncio.gather(
            *(store.record(make(n)) for n in range(start, min(count, start + BATCH)))
        )
    await store.settled()
    await store.close()
    return time.perf_counter() - started


def run_once(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode(errors='replace')}")
    return elapsed


def compile_bytecode() -> str:
    """Compile walletpass_tui's modules to .pyc first, as ``pip install`` does: from an editable
    install, or with PYTHONDONTWRITEBYTECODE=1 set, every launch would otherwise compile them
    from source (tens of milliseconds that Textual, installed normally, does not pay). Returns
    a line saying so."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("walletpass_tui")
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    compileall.compile_dir(root, quiet=1)
    return f"bytecode compiled for {root} (as pip install does)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--deliveries", type=int, default=100_000)
    parser.add_argument("--home", type=Path, help="reuse this data directory (made if missing)")
    opts = parser.parse_args()
    print(compile_bytecode(), file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="wp-startup-") as tmp:
        home = opts.home or Path(tmp) / "home"
        if not (home / "deliveries.sqlite3").exists():
            took = asyncio.run(populate(home, opts.deliveries))
            print(f"stored {opts.deliveries} deliveries in {took:.1f} s", file=sys.stderr)
        env = {
            **os.environ,
            "WALLETPASS_HOME": str(home),
            "XDG_CONFIG_HOME": str(Path(tmp) / "xdg"),
        }
        env.pop("WALLETPASS_API_KEY", None)
        for _, argv, _ in COMMANDS:  # warm the page cache and .pyc files
            run_once(argv, env)
        times: dict[str, list[float]] = {name: [] for name, _, _ in COMMANDS}
        for _ in range(opts.rounds):
            for name, argv, _ in COMMANDS:  # alternated: every command once per round
                times[name].append(run_once(argv, env))

    base = statistics.median(times[COMMANDS[0][0]])
    print(f"{'command':<46} {'median':>9} {'ratio':>7}  target")
    for name, _, target in COMMANDS:
        median = statistics.median(times[name])
        ratio = median / base
        goal = f"<= {target:g}x {'ok' if ratio <= target else 'MISSED'}" if target else ""
        print(f"{name:<46} {median * 1000:7.1f} ms {ratio:6.2f}x  {goal}")
    print(f"({opts.rounds} alternated rounds, {opts.deliveries} deliveries stored)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
