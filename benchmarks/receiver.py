"""Receiver benchmark: durable deliveries per second, acknowledgement latency and memory.

    python benchmarks/receiver.py                 # full run (about 3 minutes on 2 cores)
    python benchmarks/receiver.py --rounds 3 --duration 5 --memory 0    # quicker

What it measures, over loopback, with pre-signed deliveries (a unique webhook-id each):

1. Throughput at a fixed concurrency: Debian's ``wrk`` (C, epoll; ``apt-get install -y wrk``)
   cycles through requests signed at the start of each round (``receiver.lua`` next to this file
   formats them once, so the generator is not the bottleneck). Our receiver
   (``python -m walletpass_tui listen``) and a naive baseline (below) run as separate processes in
   alternating rounds; each round prints deliveries/s (2xx answers per second), p50/p99
   acknowledgement latency and the receiver's peak RSS, and checks that every 2xx is in its database.
   The summary gives the median throughput of each and the ratio ours/baseline.
2. Latency at a steady 200 deliveries/s (``--steady-runs`` runs of each, alternating; the summary
   gives the median p99 of each and their ratio): ``wrk2`` (constant rate) is not packaged, and plain wrk
   only throttles through ``delay()``, which measures from the moment a request is actually sent and
   so hides queueing (coordinated omission). Instead an open-loop asyncio client in this process
   sends each request at its scheduled time (on one of many keep-alive connections) and measures
   from that *scheduled* time to the last byte of the answer: p50/p99/max.
3. Memory over 100,000 deliveries: one receiver process, wrk sends 10,000 deliveries, RSS sampled;
   then 90,000 more, RSS sampled again.
4. CPU per delivery (``--cpu N``, alternating rounds): wrk sends N deliveries to a fresh receiver,
   which is then left until it is idle again (its background work, such as indexing and learning,
   done); user + system time of the whole process from ``/proc``, divided by N. On a machine that
   other work keeps busy this, not the rate, says what a delivery costs. With ``py-spy`` installed
   the time is also split by thread (by name).

The baseline is what a first version would look like: aiohttp + the standardwebhooks package +
aiosqlite, one INSERT and one ``commit()`` per request on one shared connection, WAL and
``synchronous=FULL`` like ours (so a 2xx is as durable). Note that aiosqlite runs one connection's
calls in order on one thread, so concurrent requests' commits can already coalesce a little: the
baseline is naive, not crippled.

Figures, never assertions: see docs/performance.md for the last results.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LUA = HERE / "receiver.lua"
PATH = "/webhooks"
BASELINE_MODE = "autocommit"
SECRET = "whsec_" + base64.b64encode(hashlib.sha256(b"walletpass-bench").digest()).decode()


# ---------------------------------------------------------------------------------------------
# The naive baseline (run as its own process: ``receiver.py baseline-server --port P --db F``)


def baseline_server(port: int, db_path: str, mode: str) -> None:
    """``autocommit``: each INSERT is its own transaction, exactly one commit (fsync) per request.
    ``shared``: INSERT then ``await db.commit()`` in a deferred transaction on the shared connection:
    a commit() that finds nothing pending does nothing, so concurrent requests coalesce by accident.
    """
    import aiosqlite
    from aiohttp import web
    from standardwebhooks import Webhook
    from standardwebhooks.webhooks import WebhookVerificationError

    async def main() -> None:
        if mode == "autocommit":
            db = await aiosqlite.connect(db_path, isolation_level=None)
        else:
            db = await aiosqlite.connect(db_path)
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = FULL")
        await db.execute(
            "CREATE TABLE IF NOT EXISTS deliveries (id INTEGER PRIMARY KEY, webhook_id TEXT, "
            "received_at_ms INTEGER, headers TEXT, body BLOB)"
        )
        await db.commit()
        hook = Webhook(SECRET)

        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            headers = dict(request.headers)
            try:
                hook.verify(body, headers)
            except WebhookVerificationError as exc:
                return web.Response(status=401, text=str(exc))
            await db.execute(
                "INSERT INTO deliveries (webhook_id, received_at_ms, headers, body) "
                "VALUES (?, ?, ?, ?)",
                (headers.get("webhook-id"), int(time.time() * 1000), json.dumps(headers), body),
            )
            if mode != "autocommit":
                await db.commit()
            return web.Response(text="OK")

        app = web.Application(client_max_size=1024 * 1024)
        app.router.add_post(PATH, handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await runner.cleanup()
        await db.close()

    asyncio.run(main())


# ---------------------------------------------------------------------------------------------
# Requests


def sign_requests(n: int, prefix: str, ts: int | None = None) -> list[tuple[str, str, str, str]]:
    """(id, timestamp, signature, body) for ``n`` deliveries, signed now (spec section 5)."""
    key = base64.b64decode(SECRET.split("_", 1)[1])
    ts_text = str(ts if ts is not None else int(time.time()))
    out = []
    for i in range(n):
        msg_id = f"msg_{prefix}_{i:07d}"
        body = (
            '{"type":"pass.activated","createdAt":"2026-11-23T10:00:00.000Z","data":'
            f'{{"passId":"pass_{i:07d}","templateId":"tpl_bench","platform":"apple"}}}}'
        )
        signed = f"{msg_id}.{ts_text}.{body}".encode()
        sig = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        out.append((msg_id, ts_text, "v1," + sig, body))
    return out


def write_requests(path: Path, requests: list[tuple[str, str, str, str]]) -> None:
    with path.open("w") as fh:
        for row in requests:
            fh.write("\t".join(row) + "\n")


def raw_request(port: int, row: tuple[str, str, str, str]) -> bytes:
    msg_id, ts, sig, body = row
    data = body.encode()
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"webhook-id: {msg_id}\r\nwebhook-timestamp: {ts}\r\nwebhook-signature: {sig}\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data


# ---------------------------------------------------------------------------------------------
# Processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    db: Path
    table: str

    def rss_kib(self) -> tuple[int, int]:
        """(current RSS, peak RSS) in KiB, from /proc."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        rss = int(re.search(r"VmRSS:\s+(\d+)", text)[1])  # type: ignore[index]
        hwm = int(re.search(r"VmHWM:\s+(\d+)", text)[1])  # type: ignore[index]
        return rss, hwm

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def rows(self) -> int:
        with contextlib.closing(sqlite3.connect(self.db)) as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])


def start(name: str, workdir: Path) -> Server:
    port = free_port()
    home = workdir / f"{name}-{port}"
    home.mkdir()
    if name == "ours":
        cmd = [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port)]
        cmd += ["--secret", SECRET, "--tolerance", "3600"]
        env = {**os.environ, "WALLETPASS_HOME": str(home)}
        db, table = home / "deliveries.sqlite3", "attempts"
    else:
        db, table = home / "baseline.sqlite3", "deliveries"
        cmd = [sys.executable, str(Path(__file__).resolve()), "baseline-server"]
        cmd += ["--port", str(port), "--db", str(db), "--baseline-mode", BASELINE_MODE]
        env = dict(os.environ)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return Server(name, proc, port, db, table)
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{name} did not start listening")


def run_wrk(
    server: Server,
    requests: Path,
    *,
    duration: float,
    connections: int,
    threads: int,
    limit: int = 0,
) -> dict[str, float]:
    env = {**os.environ, "WRK_REQUESTS": str(requests), "WRK_THREADS": str(threads)}
    if limit:
        env["WRK_LIMIT"] = str(limit // threads)
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration:g}s", "--timeout", "15s"]
    cmd += ["-s", str(LUA), f"http://127.0.0.1:{server.port}{PATH}"]
    if not limit:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    else:
        # wrk's threads stop after `limit` answers, but wrk itself sleeps out its duration: stop
        # it (SIGINT makes it print its summary) once the receiver has stored that many.
        target = server.rows() + limit
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        while proc.poll() is None and server.rows() < target:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    line = next((x for x in out.splitlines() if x.startswith("WRKJSON ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no summary:\n{out}")
    return json.loads(line[len("WRKJSON ") :])


def saturated(
    name: str, workdir: Path, requests: Path, *, duration: float, connections: int, threads: int
) -> tuple[dict[str, float], float, int, int]:
    """One wrk round against a fresh receiver: (wrk's summary, 2xx per second, peak RSS in KiB,
    rows stored)."""
    server = start(name, workdir)
    try:
        wrk = run_wrk(server, requests, duration=duration, connections=connections, threads=threads)
        _, peak = server.rss_kib()
    finally:
        server.stop()
    ok = wrk["requests"] - wrk["status_errors"]
    return wrk, ok / (wrk["duration_us"] / 1e6), peak, server.rows()


# ---------------------------------------------------------------------------------------------
# CPU per delivery


def cpu_seconds(pid: int, task: str | None = None) -> float:
    """User + system CPU time of a process (or of one of its threads) so far, from /proc."""
    where = f"/proc/{pid}/task/{task}/stat" if task else f"/proc/{pid}/stat"
    fields = Path(where).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_seconds(pid: int) -> dict[str, float]:
    """CPU time so far of each thread of ``pid`` by its Python name (``py-spy dump`` tells the
    names); {} without py-spy."""
    beside = Path(sys.executable).with_name("py-spy")  # installed in this interpreter's venv
    spy = str(beside) if beside.exists() else shutil.which("py-spy")
    if spy is None:
        return {}
    dump = subprocess.run([spy, "dump", "-p", str(pid)], capture_output=True, text=True).stdout
    names = dict(re.findall(r'^Thread (\S+) \(.*\): "([^"]+)"', dump, re.MULTILINE))
    seconds: dict[str, float] = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        name = re.sub(r"_\d+$", "", names.get(task, "other"))
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            seconds[name] = seconds.get(name, 0.0) + cpu_seconds(pid, task)
    return seconds


def cpu_per_delivery(
    name: str, workdir: Path, requests: Path, n: int, connections: int
) -> dict[str, Any]:
    """N deliveries through wrk, then the receiver left until idle: CPU µs per delivery, whole
    process and by thread."""
    server = start(name, workdir)
    try:
        time.sleep(1.0)  # started: its start-up is not counted
        before, threads_before = cpu_seconds(server.proc.pid), thread_seconds(server.proc.pid)
        run_wrk(server, requests, duration=600, connections=connections, threads=1, limit=n)
        last = cpu_seconds(server.proc.pid)
        while True:  # idle: less than 20 ms of CPU in a second
            time.sleep(1.0)
            now = cpu_seconds(server.proc.pid)
            if now - last < 0.02:
                break
            last = now
        threads_after = thread_seconds(server.proc.pid)
        after = cpu_seconds(server.proc.pid)
    finally:
        server.stop()
    by_thread = {k: (v - threads_before.get(k, 0.0)) / n * 1e6 for k, v in threads_after.items()}
    return {"total": (after - before) / n * 1e6, "threads": by_thread}


# ---------------------------------------------------------------------------------------------
# Open-loop paced client


async def paced(port: int, requests: list[bytes], rate: float, connections: int) -> list[float]:
    """Send request k at start + k/rate; latency from that scheduled time to the full answer (ms)."""
    pool: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(await asyncio.open_connection("127.0.0.1", port))
    latencies: list[float] = []
    failures = 0

    async def one(data: bytes, scheduled: float) -> None:
        nonlocal failures
        reader, writer = await pool.get()
        writer.write(data)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])  # type: ignore[index]
        await reader.readexactly(length)
        latencies.append((time.perf_counter() - scheduled) * 1000)
        if not head.startswith(b"HTTP/1.1 2"):
            failures += 1
        pool.put_nowait((reader, writer))

    tasks = []
    begin = time.perf_counter() + 0.05
    for k, data in enumerate(requests):
        scheduled = begin + k / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(data, scheduled)))
    await asyncio.gather(*tasks)
    while not pool.empty():
        _, writer = pool.get_nowait()
        writer.close()
    if failures:
        raise SystemExit(f"{failures} paced deliveries were not answered 2xx")
    return latencies


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=("bench", "baseline-server"))
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--db", default="", help=argparse.SUPPRESS)
    parser.add_argument(
        "--baseline-mode",
        choices=("autocommit", "shared"),
        default="autocommit",
        help="autocommit: one commit per request (default); shared: commit() per request on a "
        "shared deferred transaction, which coalesces concurrent commits by accident",
    )
    parser.add_argument("--rounds", type=int, default=5, help="throughput rounds per receiver")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per round")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections")
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--requests", type=int, default=200_000, help="pre-signed per round")
    parser.add_argument("--rate", type=float, default=200.0, help="paced deliveries/s")
    parser.add_argument("--rate-seconds", type=float, default=10.0, help="paced run length")
    parser.add_argument(
        "--steady-runs", type=int, default=3, help="paced runs of each receiver (median p99)"
    )
    parser.add_argument("--memory", type=int, default=100_000, help="deliveries (0: skip)")
    parser.add_argument(
        "--cpu", type=int, default=0, help="deliveries per CPU-per-delivery round (0: skip)"
    )
    parser.add_argument("--cpu-rounds", type=int, default=3, help="CPU rounds per receiver")
    parser.add_argument(
        "--only", choices=("ours", "baseline"), help="throughput of one receiver only"
    )
    args = parser.parse_args()
    if args.mode == "baseline-server":
        baseline_server(args.port, args.db, args.baseline_mode)
        return
    global BASELINE_MODE
    BASELINE_MODE = args.baseline_mode
    if shutil.which("wrk") is None:
        raise SystemExit(
            "wrk is not installed: apt-get install -y wrk (Debian/Ubuntu), brew install wrk (macOS)"
        )

    names = [args.only] if args.only else ["ours", "baseline"]
    results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="wp-bench-") as tmp:
        workdir = Path(tmp)
        tsv = workdir / "requests.tsv"
        print(
            f"throughput: wrk -t{args.wrk_threads} -c{args.connections} -d{args.duration:g}s, "
            f"{args.rounds} alternating rounds, {args.requests} pre-signed deliveries each"
        )
        for rnd in range(args.rounds):
            order = names if rnd % 2 == 0 else names[::-1]
            for name in order:
                write_requests(tsv, sign_requests(args.requests, f"r{rnd}{name}"))
                wrk, rate, peak, rows = saturated(
                    name,
                    workdir,
                    tsv,
                    duration=args.duration,
                    connections=args.connections,
                    threads=args.wrk_threads,
                )
                ok = wrk["requests"] - wrk["status_errors"]
                row = {"rate": rate, "p50": wrk["p50_us"] / 1000, "p99": wrk["p99_us"] / 1000}
                row["peak_mib"] = peak / 1024
                results[name].append(row)
                errors = {
                    k: int(wrk[k])
                    for k in ("status_errors", "connect_errors", "read_errors", "timeouts")
                    if wrk[k]
                }
                print(
                    f"  round {rnd + 1} {name:8s} {rate:8.0f} deliveries/s  "
                    f"p50 {row['p50']:6.2f} ms  p99 {row['p99']:6.2f} ms  "
                    f"peak RSS {row['peak_mib']:5.1f} MiB  rows {rows} >= 2xx {ok:.0f}"
                    + (f"  errors {errors}" if errors else "")
                )
                if rows < ok:
                    print(f"  !! {name}: {ok - rows:.0f} acknowledged deliveries are not stored")

        medians = {n: statistics.median(r["rate"] for r in results[n]) for n in names if results[n]}
        print()
        for n in names if args.rounds else []:
            p99 = statistics.median(r["p99"] for r in results[n])
            print(f"median {n:8s} {medians[n]:8.0f} deliveries/s  (median p99 {p99:.2f} ms)")
        if len(names) == 2 and args.rounds:
            ratios = [
                o["rate"] / b["rate"]
                for o, b in zip(results["ours"], results["baseline"], strict=True)
            ]
            print(
                f"throughput ratio ours/baseline: {medians['ours'] / medians['baseline']:.2f}x "
                f"(median of medians; per round: {', '.join(f'{r:.2f}' for r in ratios)})"
            )

        # Steady rate: --steady-runs runs of each receiver, alternating which goes first.
        count = int(args.rate * args.rate_seconds)
        runs = args.steady_runs if count else 0
        if runs:
            print(
                f"\nsteady {args.rate:g} deliveries/s for {args.rate_seconds:g} s, 64 connections, "
                f"{runs} alternating run{'s' if runs != 1 else ''}:"
            )
        p99s: dict[str, list[float]] = {"ours": [], "baseline": []}
        for run in range(runs):
            for name in ["ours", "baseline"] if run % 2 == 0 else ["baseline", "ours"]:
                server = start(name, workdir)
                try:
                    rows = sign_requests(count, f"paced{run}{name}")
                    data = [raw_request(server.port, r) for r in rows]
                    lat = asyncio.run(paced(server.port, data, args.rate, 64))
                finally:
                    server.stop()
                p99s[name].append(pct(lat, 99))
                print(
                    f"  run {run + 1} {name:8s} p50 {pct(lat, 50):6.2f} ms  p99 {pct(lat, 99):6.2f} ms  "
                    f"max {max(lat):6.2f} ms  ({len(lat)} deliveries)"
                )
        if runs:
            ours, base = statistics.median(p99s["ours"]), statistics.median(p99s["baseline"])
            print(
                f"median p99 ours {ours:.2f} ms, baseline {base:.2f} ms: {ours / base:.2f}x "
                f"(per run: {', '.join(f'{o / b:.2f}' for o, b in zip(p99s['ours'], p99s['baseline'], strict=True))})"
            )

        # CPU per delivery, background work included.
        if args.cpu:
            print(
                f"\nCPU per delivery over {args.cpu} deliveries, until idle again "
                f"({args.cpu_rounds} alternating rounds):"
            )
            spent: dict[str, list[float]] = {"ours": [], "baseline": []}
            for rnd in range(args.cpu_rounds):
                for name in ["ours", "baseline"] if rnd % 2 == 0 else ["baseline", "ours"]:
                    write_requests(tsv, sign_requests(args.cpu, f"cpu{rnd}{name}"))
                    found = cpu_per_delivery(name, workdir, tsv, args.cpu, args.connections)
                    spent[name].append(found["total"])
                    split = sorted(found["threads"].items(), key=lambda kv: -kv[1])
                    print(
                        f"  round {rnd + 1} {name:8s} {found['total']:5.0f} µs"
                        + (
                            ": " + ", ".join(f"{k} {v:.0f}" for k, v in split if v >= 1)
                            if split
                            else ""
                        )
                    )
            ours, base = statistics.median(spent["ours"]), statistics.median(spent["baseline"])
            print(
                f"median ours {ours:.0f} µs, baseline {base:.0f} µs a delivery: {ours / base:.2f}x"
            )

        # Memory.
        if args.memory:
            first = min(10_000, args.memory)
            print(f"\nmemory over {args.memory} deliveries (RSS of the receiver process):")
            for name in ["ours", "baseline"]:
                server = start(name, workdir)
                try:
                    write_requests(tsv, sign_requests(args.memory, f"mem{name}"))
                    # The first `first` lines, then the rest: ids never repeat.
                    lines = tsv.read_text().splitlines(keepends=True)
                    part = workdir / "part.tsv"
                    part.write_text("".join(lines[:first]))
                    kw = {"duration": 600, "connections": args.connections, "threads": 1}
                    run_wrk(server, part, limit=first, **kw)
                    rss_a, _ = server.rss_kib()
                    part.write_text("".join(lines[first:]))
                    run_wrk(server, part, limit=args.memory - first, **kw)
                    rss_b, hwm = server.rss_kib()
                finally:
                    server.stop()
                print(
                    f"  {name:8s} RSS at {first}: {rss_a / 1024:6.1f} MiB   at {server.rows()}: "
                    f"{rss_b / 1024:6.1f} MiB   growth {(rss_b - rss_a) / 1024:+.1f} MiB   "
                    f"peak {hwm / 1024:.1f} MiB"
                )


if __name__ == "__main__":
    main()
