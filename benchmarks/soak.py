"""Soak: one history under saturation for minutes, then a steady rate; is the tail flat?

    python benchmarks/soak.py                     # 10 minutes saturated, then 2 at 200/s
    python benchmarks/soak.py --minutes 3 --steady-minutes 1     # a quicker look

One ``listen`` process (``python -m walletpass_tui listen``, as in receiver.py) keeps one history
for the whole run:

1. Saturated: Debian's ``wrk`` with receiver.lua (64 connections) sends deliveries signed before
   the run starts, every webhook-id unique. One wrk process per minute, so each minute has its own
   latency percentiles; the next one is started ahead and loads its requests while the previous
   one still sends, and the previous one is stopped the moment the next one begins sending, so
   the receiver never sees a pause between minutes (a pause would let background work catch up
   and hide what continuous load does).
2. Steady: the open-loop client of receiver.py at ``--rate`` deliveries/s (latency measured from
   each request's scheduled time, so queueing is not hidden).

Every 100 ms the history's write-ahead log (``deliveries.sqlite3-wal``) is measured. Printed per
minute: 2xx per second, p50/p99/max acknowledgement latency and the log's largest size; then the
log's peak over the run, whether every 2xx is stored, and the machine's load average (the machine
may be shared: say so next to the figures).

Targets: every minute's p99 under 100 ms, the last saturated minute's p99 at most 2x the first's,
the log under 64 MB. Figures, never assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from receiver import (  # a script next to this one
    LUA,
    PATH,
    SECRET,
    Server,
    pct,
    raw_request,
    sign_requests,
    start,
    write_requests,
)

MIB = 1024 * 1024
P99_TARGET_MS = 100.0
LOG_TARGET_BYTES = 64 * MIB


@dataclass
class LogSampler:
    """The write-ahead log's size every ``every_s`` seconds, on a thread of its own."""

    path: Path
    every_s: float = 0.1
    peak: int = 0
    window_peak: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                size = os.path.getsize(self.path)
            except OSError:
                size = 0
            self.samples += 1
            self.peak = max(self.peak, size)
            self.window_peak = max(self.window_peak, size)

    def take_window(self) -> int:
        """The largest size since the last call."""
        peak, self.window_peak = self.window_peak, 0
        return peak

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@dataclass
class Minute:
    phase: str
    ok: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    log_peak: int
    errors: dict[str, int]

    def line(self, number: int) -> str:
        errors = f"  errors {self.errors}" if self.errors else ""
        return (
            f"  minute {number:2d} {self.phase:9s} {self.ok / self.seconds:7.0f}/s  "
            f"p50 {self.p50_ms:7.2f} ms  p99 {self.p99_ms:7.2f} ms  max {self.max_ms:8.2f} ms  "
            f"log peak {self.log_peak / MIB:6.1f} MB{errors}"
        )


def sign_padded(count: int, prefix: str, pad: int) -> list[tuple[str, str, str, str]]:
    """receiver.py's deliveries, each body padded with ``pad`` bytes (a ``note`` field)."""
    if pad <= 0:
        return sign_requests(count, prefix)
    key = base64.b64decode(SECRET.split("_", 1)[1])
    ts = str(int(time.time()))
    note = "n" * pad
    out = []
    for i in range(count):
        msg_id = f"msg_{prefix}_{i:07d}"
        body = (
            '{"type":"pass.activated","createdAt":"2026-11-23T10:00:00.000Z","data":'
            f'{{"passId":"pass_{i:07d}","templateId":"tpl_bench","platform":"apple",'
            f'"note":"{note}"}}}}'
        )
        digest = hmac.new(key, f"{msg_id}.{ts}.{body}".encode(), hashlib.sha256).digest()
        out.append((msg_id, ts, "v1," + base64.b64encode(digest).decode(), body))
    return out


def sign_chunk(args: tuple[Path, int, str, int]) -> Path:
    path, count, prefix, pad = args
    write_requests(path, sign_padded(count, prefix, pad))
    return path


class Wrk:
    """One wrk process sending one minute's deliveries (stopped by SIGINT: it then prints its
    summary, the WRKJSON line receiver.lua writes)."""

    def __init__(self, server: Server, requests: Path, connections: int) -> None:
        env = {**os.environ, "WRK_REQUESTS": str(requests), "WRK_THREADS": "1"}
        cmd = ["stdbuf", "-oL", "wrk", "-t1", f"-c{connections}", "-d3600s", "--timeout", "15s"]
        cmd += ["-s", str(LUA), f"http://127.0.0.1:{server.port}{PATH}"]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        self.sending_at = 0.0

    def wait_sending(self) -> float:
        """Block until wrk has loaded its requests and begins sending; returns how long that took.
        (wrk prints "Running ..." once init() has run for every thread.)"""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("Running"):
                self.sending_at = time.monotonic()
                return self.sending_at - self.started
        raise SystemExit("wrk exited before sending")

    def stop(self) -> dict[str, float]:
        self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=60)
        line = next((x for x in out.splitlines() if x.startswith("WRKJSON ")), None)
        if line is None:
            raise SystemExit(f"wrk printed no summary:\n{out}")
        return json.loads(line[len("WRKJSON ") :])


def saturated(
    server: Server, files: list[Path], sampler: LogSampler, connections: int
) -> list[Minute]:
    minutes: list[Minute] = []
    current = Wrk(server, files[0], connections)
    load_s = current.wait_sending()
    sampler.take_window()
    for k in range(len(files)):
        deadline = current.sending_at + 60.0
        following: Wrk | None = None
        if k + 1 < len(files):
            # Started ahead by twice what loading took, plus a margin, so it is ready in time.
            time.sleep(max(0.0, deadline - 2 * load_s - 2.0 - time.monotonic()))
            following = Wrk(server, files[k + 1], connections)
            load_s = max(load_s, following.wait_sending())
        else:
            time.sleep(max(0.0, deadline - time.monotonic()))
        summary = current.stop()
        seconds = summary["duration_us"] / 1e6
        ok = int(summary["requests"] - summary["status_errors"])
        errors = {
            key: int(summary[key])
            for key in ("status_errors", "connect_errors", "read_errors", "timeouts")
            if summary[key]
        }
        minute = Minute(
            "saturated",
            ok,
            seconds,
            summary["p50_us"] / 1000,
            summary["p99_us"] / 1000,
            summary["max_us"] / 1000,
            sampler.take_window(),
            errors,
        )
        minutes.append(minute)
        print(minute.line(len(minutes)), flush=True)
        if following is not None:
            current = following
    return minutes


def steady(
    server: Server, minutes: int, rate: float, sampler: LogSampler, first: int, pad: int
) -> list[Minute]:
    from receiver import paced

    out: list[Minute] = []
    per_minute = int(rate * 60)
    for m in range(minutes):
        rows = sign_padded(per_minute, f"steady{m}", pad)
        data = [raw_request(server.port, r) for r in rows]
        began = time.monotonic()
        latencies = asyncio.run(paced(server.port, data, rate, 64))
        seconds = time.monotonic() - began
        minute = Minute(
            f"{rate:g}/s",
            len(latencies),
            seconds,
            pct(latencies, 50),
            pct(latencies, 99),
            max(latencies),
            sampler.take_window(),
            {},
        )
        out.append(minute)
        print(minute.line(first + len(out)), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=int, default=10, help="saturated minutes (default 10)")
    parser.add_argument(
        "--steady-minutes", type=int, default=2, help="minutes at --rate after (default 2)"
    )
    parser.add_argument("--rate", type=float, default=200.0, help="steady deliveries/s")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections")
    parser.add_argument(
        "--per-minute",
        type=int,
        default=420_000,
        help="deliveries signed for each saturated minute (past them, ids repeat)",
    )
    parser.add_argument(
        "--body-bytes",
        type=int,
        default=0,
        help="pad each delivery's body by this many bytes (default 0: receiver.py's ~150-byte "
        "bodies); larger bodies make the log grow faster",
    )
    parser.add_argument(
        "--workdir", help="where the history and the requests go (default: a temp dir)"
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None or shutil.which("stdbuf") is None:
        raise SystemExit("wrk (and coreutils' stdbuf) are needed: apt-get install -y wrk")

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="wp-soak-", dir=args.workdir) as tmp:
        workdir = Path(tmp)
        jobs = [
            (workdir / f"minute{k}.tsv", args.per_minute, f"soak{k}", args.body_bytes)
            for k in range(args.minutes)
        ]
        began = time.monotonic()
        with ProcessPoolExecutor(max(1, (os.cpu_count() or 2))) as pool:
            files = list(pool.map(sign_chunk, jobs))
        print(
            f"signed {args.minutes} x {args.per_minute} deliveries in "
            f"{time.monotonic() - began:.0f} s",
            flush=True,
        )
        server = start("ours", workdir)
        sampler = LogSampler(server.db.with_name(server.db.name + "-wal"))
        sampler.start()
        try:
            print(
                f"saturated: wrk -t1 -c{args.connections}, one process per minute, "
                f"then {args.rate:g}/s for {args.steady_minutes} min (open loop)",
                flush=True,
            )
            hot = saturated(server, files, sampler, args.connections)
            calm = steady(
                server, args.steady_minutes, args.rate, sampler, len(hot), args.body_bytes
            )
        finally:
            sampler.stop()
            server.stop()
        rows = server.rows()
        acked = sum(m.ok for m in hot + calm)
        print()
        print(f"deliveries acknowledged {acked}, rows stored {rows}", end="")
        print("" if rows >= acked else f"  !! {acked - rows} acknowledged but not stored")
        print(
            f"log peak {sampler.peak / MIB:.1f} MB over {sampler.samples} samples "
            f"(target < {LOG_TARGET_BYTES / MIB:.0f} MB)"
        )
        if hot:
            worst = max(m.p99_ms for m in hot + calm)
            ratio = hot[-1].p99_ms / hot[0].p99_ms if hot[0].p99_ms else float("inf")
            print(
                f"worst minute p99 {worst:.1f} ms (target < {P99_TARGET_MS:.0f}); "
                f"last saturated minute's p99 / first's: {ratio:.2f}x (target <= 2x); "
                f"rate first {hot[0].ok / hot[0].seconds:.0f}/s, last "
                f"{hot[-1].ok / hot[-1].seconds:.0f}/s"
            )
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
