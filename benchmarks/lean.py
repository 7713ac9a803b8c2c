"""Lean live path and instant commands: every row of the table in one run, each against its peer.

    python benchmarks/lean.py                       # 100,000 stored (about 12 minutes on 2 cores)
    python benchmarks/lean.py --stored 20000 --seconds 8 --rounds 5 --paint-runs 3  # quicker

One command, one machine, one run: each figure is printed next to the peer measured in the same
run and the ratio the target is set on.

* start-up: ``python -c pass`` against ``walletpass-tui --version`` and ``events list --limit 20
  --json`` over the stored history, alternated, medians (``startup.py``'s method);
* first paint: launch to the first stored row on a 120x36 tmux screen against a one-``Static``
  Textual app launched the same way (``live.py``);
* dashboard CPU at a steady 10/s and 100/s against ``walletpass-tui listen`` at the same rate
  (``live.py``);
* 1 MiB deliveries shown while 20/s arrive: the ack p99 and the time from each big delivery's 2xx
  to its body on screen (``live.py``);
* ``listen``'s ack p99 at a steady 200/s against the one-commit-per-request baseline, the median of
  ``--latency-runs`` runs (``receiver.py``'s open-loop client), and, with ``--throughput-rounds``,
  saturated throughput against the same baseline under ``wrk``.

Figures, never assertions: the targets are printed beside them, nothing fails on a noisy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import live  # noqa: E402
import receiver  # noqa: E402
import startup  # noqa: E402


@dataclass
class Row:
    what: str
    ours: str
    peer: str
    figure: float
    target: float
    higher_is_better: bool = False
    unit: str = "x"

    @property
    def met(self) -> bool:
        return self.figure >= self.target if self.higher_is_better else self.figure <= self.target

    def line(self) -> str:
        sign = ">=" if self.higher_is_better else "<="
        if self.unit != "x":
            sign = ">=" if self.higher_is_better else "<"
        goal = f"{sign} {self.target:g}{'' if self.unit == 'x' else ' '}{self.unit}"
        value = f"{self.figure:.2f}x" if self.unit == "x" else f"{self.figure:.0f} {self.unit}"
        verdict = "met" if self.met else "NOT MET"
        return f"| {self.what} | {self.ours} | {self.peer} | {value} | {goal} | {verdict} |"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def startup_rows(home: Path, rounds: int, tmp: Path) -> list[Row]:
    env = {**os.environ, "WALLETPASS_HOME": str(home), "XDG_CONFIG_HOME": str(tmp / "xdg")}
    env.pop("WALLETPASS_API_KEY", None)
    chosen = [c for c in startup.COMMANDS if c[2] is not None or c[1] == ["-c", "pass"]]
    for _, argv, _ in chosen:  # warm the page cache
        startup.run_once(argv, env)
    times: dict[str, list[float]] = {name: [] for name, _, _ in chosen}
    for _ in range(rounds):
        for name, argv, _ in chosen:
            times[name].append(startup.run_once(argv, env))
    bare = statistics.median(times[chosen[0][0]])
    rows = []
    for name, _, target in chosen[1:]:
        median = statistics.median(times[name])
        assert target is not None
        rows.append(
            Row(f"`{name}`", ms(median), f"`python -c pass` {ms(bare)}", median / bare, target)
        )
    return rows


def paint_row(home: Path, runs: int, stored: int) -> Row:
    paint = live.first_paint_phase(home, runs)
    return Row(
        f"dashboard first paint over {stored:,}",
        ms(paint["dashboard_s"]),
        f"one-`Static` app {ms(paint['minimal_s'])}",
        paint["dashboard_s"] / paint["minimal_s"],
        2.0,
    )


def cpu_rows(home: Path, seconds: float, warmup: float) -> list[Row]:
    rows = []
    for rate, target in ((10, 4.0), (100, 2.0)):
        cpu = live.cpu_phase(home, rate, seconds, warmup)
        rows.append(
            Row(
                f"dashboard CPU at a steady {rate}/s",
                f"{cpu['dashboard']:.1f}% of a core",
                f"`listen` {cpu['listen']:.1f}%",
                cpu["dashboard"] / max(cpu["listen"], 0.1),
                target,
            )
        )
    return rows


def big_rows(home: Path, seconds: float) -> list[Row]:
    alone = live.listen_acks(home, seconds)
    big = live.big_phase(home, seconds)
    drawn = big["drawn_ms"]
    seen = f"{big['big_drawn']} of {big['big_sent']} drawn"
    return [
        Row(
            "ack p99 while 1 MiB deliveries are shown, 20/s",
            f"{big['small_ack_p99_ms']:.1f} ms",
            f"`listen` {alone['small_ack_p99_ms']:.1f} ms",
            big["small_ack_p99_ms"],
            100,
            unit="ms",
        ),
        Row(
            "1 MiB delivery: 2xx to its body drawn (max)",
            f"p50 {statistics.median(drawn):.0f} ms ({seen})" if drawn else f"never ({seen})",
            "",
            max(drawn) if drawn and len(drawn) == big["big_sent"] else float("inf"),
            300,
            unit="ms",
        ),
    ]


def steady_p99(name: str, workdir: Path, rate: float, seconds: float) -> float:
    server = receiver.start(name, workdir)
    try:
        count = int(rate * seconds)
        data = [
            receiver.raw_request(server.port, r)
            for r in receiver.sign_requests(count, f"lean{name}{time.monotonic_ns()}")
        ]
        latencies = asyncio.run(receiver.paced(server.port, data, rate, 64))
    finally:
        server.stop()
    return receiver.pct(latencies, 99)


def latency_row(workdir: Path, runs: int, seconds: float) -> Row:
    ours: list[float] = []
    peer: list[float] = []
    for run in range(runs):  # alternated: each goes first every other run
        order = ("ours", "baseline") if run % 2 == 0 else ("baseline", "ours")
        for name in order:
            (ours if name == "ours" else peer).append(steady_p99(name, workdir, 200, seconds))
    each = ", ".join(f"{o:.1f}/{p:.1f}" for o, p in zip(ours, peer, strict=True))
    return Row(
        f"`listen` ack p99 at a steady 200/s, median of {runs} (runs: {each} ms)",
        f"{statistics.median(ours):.2f} ms",
        f"one-commit peer {statistics.median(peer):.2f} ms",
        statistics.median(ours) / statistics.median(peer),
        1.25,
    )


def throughput_row(workdir: Path, rounds: int, duration: float) -> Row:
    rates: dict[str, list[float]] = {"ours": [], "baseline": []}
    tsv = workdir / "requests.tsv"
    for rnd in range(rounds):
        for name in ("ours", "baseline") if rnd % 2 == 0 else ("baseline", "ours"):
            receiver.write_requests(tsv, receiver.sign_requests(200_000, f"t{rnd}{name}"))
            _, rate, _, _ = receiver.saturated(
                name, workdir, tsv, duration=duration, connections=64, threads=1
            )
            rates[name].append(rate)
    ours, peer = statistics.median(rates["ours"]), statistics.median(rates["baseline"])
    return Row(
        f"`listen` saturated throughput, median of {rounds} rounds",
        f"{ours:,.0f}/s",
        f"one-commit peer {peer:,.0f}/s",
        ours / peer,
        1.75,
        higher_is_better=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, default=100_000, help="stored history")
    parser.add_argument("--rounds", type=int, default=11, help="start-up rounds")
    parser.add_argument("--paint-runs", type=int, default=5, help="first-paint launches each")
    parser.add_argument("--seconds", type=float, default=20, help="steady window per phase")
    parser.add_argument("--warmup", type=float, default=3, help="seconds before CPU is measured")
    parser.add_argument("--latency-runs", type=int, default=3, help="200/s runs per receiver")
    parser.add_argument("--latency-seconds", type=float, default=10, help="length of each")
    parser.add_argument(
        "--throughput-rounds", type=int, default=3, help="wrk rounds per receiver (0: skip)"
    )
    args = parser.parse_args()
    for tool in ("tmux", "wrk"):
        if shutil.which(tool) is None:
            print(f"This benchmark needs {tool} (apt-get install {tool}).", file=sys.stderr)
            return 1
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores; load {os.getloadavg()}")
    print(startup.compile_bytecode())
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="walletpass-lean-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        started = time.perf_counter()
        asyncio.run(live.populate(home, args.stored))
        print(f"{args.stored:,} deliveries stored in {time.perf_counter() - started:.0f} s")
        phases: list[tuple[str, Callable[[], list[Row]]]] = [
            ("start-up", lambda: startup_rows(home, args.rounds, tmp)),
            ("first paint", lambda: [paint_row(home, args.paint_runs, args.stored)]),
            ("CPU", lambda: cpu_rows(home, args.seconds, args.warmup)),
            ("1 MiB bodies", lambda: big_rows(home, args.seconds)),
            ("200/s tail", lambda: [latency_row(tmp, args.latency_runs, args.latency_seconds)]),
        ]
        if args.throughput_rounds:
            phases.append(("throughput", lambda: [throughput_row(tmp, args.throughput_rounds, 8)]))
        for name, phase in phases:
            began = time.perf_counter()
            new = phase()
            rows += new
            print(f"{name}: {time.perf_counter() - began:.0f} s")
            for row in new:
                print("  " + row.line())
    print(f"\nload at the end {os.getloadavg()}\n")
    print("| what | ours | peer (same run) | figure | target | |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(row.line())
    met = sum(row.met for row in rows)
    print(f"\n{met} of {len(rows)} rows meet their target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
