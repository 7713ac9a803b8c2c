"""Relay benchmark: ingress throughput against ``listen``, fan-out latency, memory per subscriber.

    python benchmarks/relay.py                          # full run (about 2 minutes on 2 cores)
    python benchmarks/relay.py --rounds 1 --duration 3 --latency-seconds 5   # quicker
    python benchmarks/relay.py --only postgres      # 6 alone

1. Ingress throughput: ``wrk`` (``receiver.lua``, pre-signed deliveries, 32 connections) against
   ``walletpass-tui listen`` and ``walletpass-tui relay serve`` (one channel, no edge secret) as
   separate processes, in alternating rounds; durable deliveries/s (2xx per second, every 2xx
   checked in the database). Summary: the median of each and the ratio relay/listen.
2. Fan-out latency: a relay process, 10 subscribers and an open-loop client posting at a steady
   100/s. By default (``--latency-to store``) each subscriber is the whole laptop side, in a
   process of its own: a ``DeliveryRuntime`` with its own home and a ``RelayLink``; the time is from
   the moment the 2xx was read by the poster to the moment the delivery's row was committed in
   that subscriber's store (verified with the secret), as ``listen --relay`` does it. With
   ``--latency-to receipt`` the subscribers are bare ``RelaySubscriber``s (all in one child
   process) and the time ends when ``on_delivery`` ran. ``time.monotonic`` is system-wide on Linux, so both processes share it;
   negative values mean the row existed before the poster had read its answer.
3. Memory: a fresh relay process, RSS before and after 100 subscribers connect and sit idle
   through a few heartbeats.
4. Catch-up: a relay process holds N deliveries a laptop slept through; a laptop side (runtime +
   relay link, own home, this process) starts and stores them all, verified: deliveries/s from
   its start to the last row committed.
5. Stalled subscribers (``--only stalled``): a relay process holds a backlog of deliveries with
   64 KiB bodies; 100 subscribers (raw sockets, a 4 KiB receive buffer) ask for it and never read.
   RSS growth per stalled subscriber, once ``/healthz`` counts them all as stalled (or RSS has
   not moved for 3 s), then again after 100 more deliveries arrive while they stall; the time
   those 100 take, and the time 100 took before anyone subscribed.
6. PostgreSQL (``--only postgres``; needs PostgreSQL's server binaries, as the tests do): a
   throwaway cluster with fsync on (as SQLite's synchronous=FULL), then
   a. ingress throughput of one relay process on PostgreSQL and one on SQLite, wrk as in 1, in
      alternating rounds of the same run: the ratio PostgreSQL/SQLite;
   b. cross-instance fan-out: two relay processes on one database, 10 laptop sides (processes,
      as in 2), half subscribed to instance A and half to B, posts at 100/s to B: 2xx -> row in
      each laptop's store (with ``--latency-to receipt``: bare subscribers, one process on each
      instance);
   c. memory: 1,000 idle subscribers split over two instances (10 channels, 50 streams per
      channel on each): each instance's RSS.

Figures, never assertions. The machine is shared: other processes may load it during a run.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import contextlib
import json
import math
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from receiver import LUA, SECRET, sign_requests, write_requests  # noqa: E402

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url  # noqa: E402
from walletpass_tui.relay.server.storage import open_storage  # noqa: E402
from walletpass_tui.relay.server.storage.base import IssuedChannel  # noqa: E402
from walletpass_tui.relay.server.storage.sqlite.database import RelayDB  # noqa: E402
from walletpass_tui.relay.server.storage.target import (  # noqa: E402
    database_path,
    database_target,
)

if TYPE_CHECKING:
    from pg_cluster import PgCluster


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Proc:
    def __init__(self, cmd: list[str], env: dict[str, str], port: int) -> None:
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.port = port
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{cmd[3:5]} exited: {self.proc.stderr.read().decode()}")  # type: ignore[union-attr]
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                return
            time.sleep(0.05)
        self.proc.kill()
        raise SystemExit(f"{cmd} did not start")

    def cpu_seconds(self) -> float:
        """CPU time the process has used so far (user and system)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kib(self) -> int:
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", text)[1])  # type: ignore[index]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_listen(workdir: Path) -> tuple[Proc, str, Path, str]:
    port = free_port()
    home = Path(tempfile.mkdtemp(dir=workdir))
    cmd = [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port)]
    cmd += ["--secret", SECRET, "--tolerance", "3600"]
    env = {**os.environ, "WALLETPASS_HOME": str(home)}
    proc = Proc(cmd, env, port)
    return proc, f"http://127.0.0.1:{port}/webhooks", home / "deliveries.sqlite3", "attempts"


def add_channels(home: Path, database: str | None, names: list[str]) -> list[IssuedChannel]:
    """Channels made through the relay's own storage (SQLite file or PostgreSQL)."""

    async def add() -> list[IssuedChannel]:
        storage = await open_storage(database_target(database, home), serving=False)
        try:
            return [await storage.add_channel(name) for name in names]
        finally:
            await storage.close()

    return asyncio.run(add())


def relay_process(home: Path, heartbeat: float, database: str | None, *extra: str) -> Proc:
    port = free_port()
    cmd = [sys.executable, "-m", "walletpass_tui", "relay", "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--tolerance", "3600", "--heartbeat", str(heartbeat), *extra]
    env = {**os.environ, "WALLETPASS_HOME": str(home)}
    env.pop("WALLETPASS_RELAY_DATABASE", None)
    if database:
        env["WALLETPASS_RELAY_DATABASE"] = database
    return Proc(cmd, env, port)


def start_relay(
    workdir: Path, heartbeat: float = 15.0, database: str | None = None
) -> tuple[Proc, str, str, Path]:
    """A relay with one channel: (process, ingress URL, subscribe URL, database); token in env."""
    home = Path(tempfile.mkdtemp(dir=workdir))
    if database:
        issued = add_channels(home, database, ["bench"])[0]
    else:
        db = RelayDB(database_path(home))
        issued = db.add_channel("bench")
        db.close()
    os.environ["BENCH_RELAY_TOKEN"] = issued.token
    proc = relay_process(home, heartbeat, database)
    port = proc.port
    base = f"http://127.0.0.1:{port}"
    slug = issued.channel.slug
    return proc, ingress_url(base, slug), subscribe_url(base, slug), database_path(home)


def rows(db: Path, table: str) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def wrk(url: str, requests: Path, duration: float, connections: int) -> dict[str, float]:
    env = {**os.environ, "WRK_REQUESTS": str(requests), "WRK_THREADS": "1"}
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", "--timeout", "15s"]
    cmd += ["-s", str(LUA), url]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    line = next((x for x in out.splitlines() if x.startswith("WRKJSON ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no summary:\n{out}")
    return json.loads(line[len("WRKJSON ") :])


def throughput(workdir: Path, rounds: int, duration: float, connections: int) -> None:
    print(f"1. ingress throughput, wrk -c{connections} -d{duration:g}s, {rounds} round(s) each")
    results: dict[str, list[float]] = {"listen": [], "relay": []}
    for r in range(rounds):
        for name in ("listen", "relay"):
            requests = workdir / f"req-{name}-{r}.tsv"
            write_requests(requests, sign_requests(int(duration * 12_000), f"{name}{r}"))
            if name == "listen":
                proc, url, db, table = start_listen(workdir)
            else:
                proc, url, _, db = start_relay(workdir)
                table = "deliveries"
            try:
                out = wrk(url, requests, duration, connections)
                stored = rows(db, table)
            finally:
                proc.stop()
            ok = int(out["requests"] - out["status_errors"])
            rate = ok / (out["duration_us"] / 1e6)
            results[name].append(rate)
            print(
                f"   round {r + 1} {name:6s} {rate:8.0f}/s  2xx {ok}  stored {stored}  "
                f"p50 {out['p50_us'] / 1000:.1f} ms  p99 {out['p99_us'] / 1000:.1f} ms"
            )
    med = {k: statistics.median(v) for k, v in results.items()}
    print(
        f"   median: listen {med['listen']:.0f}/s, relay {med['relay']:.0f}/s, "
        f"ratio relay/listen {med['relay'] / med['listen']:.2f}x (target >= 0.9x)"
    )


# -- fan-out latency ------------------------------------------------------------------------------


async def _paced_posts(url: str, rate: float, seconds: float) -> dict[str, float]:
    import aiohttp

    from walletpass_tui.webhooks.verify import sign

    n = int(rate * seconds)
    acked: dict[str, float] = {}
    payloads = []
    now = datetime.now(UTC)
    for i in range(n):
        body = json.dumps({"type": "pass.activated", "data": {"passId": f"p{i}"}}).encode()
        payloads.append((body, sign(SECRET, f"msg_lat_{i:06d}", body, now)))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:

        async def one(body: bytes, headers: dict[str, str]) -> None:
            async with session.post(url, data=body, headers=headers) as r:
                await r.read()
                if r.status == 200:
                    acked[headers["webhook-id"]] = time.monotonic()

        begin = time.monotonic() + 0.05
        tasks = []
        for k, (body, headers) in enumerate(payloads):
            delay = begin + k / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(body, headers)))
        await asyncio.gather(*tasks)
    return acked


def busy_seconds() -> float:
    """CPU time the whole machine spent busy so far (every core, every program)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_seconds() -> float:
    """CPU time of this process and of its children that have been waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def latency(
    workdir: Path,
    rate: float,
    seconds: float,
    count: int,
    to: str = "store",
    *,
    database: str | None = None,
    title: str = "2.",
) -> tuple[float, int]:
    what = "row in a subscriber's store" if to == "store" else "subscriber receipt"
    where = ""
    procs: list[Proc] = []
    if database:  # two instances on one database: post to B, half the laptops on A
        home = Path(tempfile.mkdtemp(dir=workdir))
        issued = add_channels(home, database, ["bench"])[0]
        os.environ["BENCH_RELAY_TOKEN"] = issued.token
        slug = issued.channel.slug
        procs = [relay_process(home / name, 15.0, database) for name in ("a", "b")]
        bases = [f"http://127.0.0.1:{p.port}" for p in procs]
        ingress = ingress_url(bases[1], slug)
        # Laptop (or group of bare subscribers) i subscribes to instance A if i is even, else B.
        sub_urls = [subscribe_url(bases[i % 2], slug) for i in range(count)]
        where = ", posted to instance B, laptops half on A and half on B"
    print(
        f"{title} ingress 2xx -> {what}, {rate:g}/s for {seconds:g} s, {count} subscribers{where}"
    )
    busy0, own0, wall0 = busy_seconds(), own_seconds(), time.monotonic()
    if not database:
        proc, ingress, sub_url, _ = start_relay(workdir)
        procs = [proc]
        sub_urls = [sub_url] * count
    expect = int(rate * seconds)
    # Laptops are separate machines: one process each. Bare subscribers share one process (one
    # per instance when there are two).
    if to == "store":
        groups = [1] * count
    else:
        groups = [count - count // 2, count // 2] if database else [count]
    outs = [workdir / f"latency-{i}.json" for i in range(len(groups))]
    children = [
        subprocess.Popen(
            [
                sys.executable,
                HERE / "relay_subscribers.py",
                to,
                sub_urls[i],
                str(n),
                str(expect),
                str(out),
            ],
            env=dict(os.environ),
        )
        for i, (n, out) in enumerate(zip(groups, outs, strict=True))
    ]
    try:
        deadline = time.monotonic() + 60
        for out in outs:
            ready = Path(str(out) + ".ready")
            while not ready.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        acked = asyncio.run(_paced_posts(ingress, rate, seconds))
        for child in children:
            child.wait(timeout=seconds + 180)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait()
        for proc in procs:
            proc.stop()
    wall = time.monotonic() - wall0
    busy, own = busy_seconds() - busy0, own_seconds() - own0
    times = [sub for out in outs for sub in json.loads(out.read_text())]
    deltas = [(sub[msg] - acked[msg]) * 1000 for sub in times for msg in acked if msg in sub]
    missing = len(acked) * count - len(deltas)
    summary = (pct(deltas, 95) if deltas else math.nan, missing)
    print(
        f"   {len(acked)} acked, {len(deltas)} receipts ({missing} missing): "
        f"p50 {pct(deltas, 50):.1f} ms, p95 {pct(deltas, 95):.1f} ms, p99 {pct(deltas, 99):.1f} ms, "
        f"max {max(deltas):.1f} ms (target p95 < 50 ms)"
    )
    if to == "store":  # where the time goes: the relay and the wire, then the laptop's own work
        got = [sub for out in outs for sub in json.loads(Path(str(out) + ".received").read_text())]
        wire, local = [], []
        for sub, seen in zip(times, got, strict=True):
            for msg in acked:
                if msg in sub and msg in seen:
                    wire.append((seen[msg] - acked[msg]) * 1000)
                    local.append((sub[msg] - seen[msg]) * 1000)
        print(
            f"   of which 2xx -> read off the stream: p50 {pct(wire, 50):.1f} ms, "
            f"p95 {pct(wire, 95):.1f} ms; read -> committed: p50 {pct(local, 50):.1f} ms, "
            f"p95 {pct(local, 95):.1f} ms"
        )
    cores = os.cpu_count() or 1
    print(
        f"   CPU over the {wall:.0f} s: this benchmark's processes {own / wall:.2f} cores, other "
        f"programs {max(0.0, busy - own) / wall:.2f} cores, of {cores}"
    )
    return summary


# -- memory ---------------------------------------------------------------------------------------


async def _idle(
    sub_url: str, health: str, count: int, settle: float, proc: Proc
) -> tuple[int, int]:
    import aiohttp

    token = os.environ["BENCH_RELAY_TOKEN"]
    before = proc.rss_kib()
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=None)
    ) as session:
        responses = []
        for _ in range(count):
            r = await session.get(sub_url, headers={"Authorization": f"Bearer {token}"})
            assert r.status == 200, r.status
            responses.append(r)
        while True:
            async with session.get(health) as h:
                if (await h.json())["subscribers"] >= count:
                    break
            await asyncio.sleep(0.1)
        await asyncio.sleep(settle)  # a few heartbeats go out to each
        after = proc.rss_kib()
        for r in responses:
            r.close()
    return before, after


def memory(workdir: Path, count: int) -> None:
    print(f"3. relay RSS with {count} idle subscribers (heartbeat every 1 s, 3 s idle)")
    proc, _, sub_url, _ = start_relay(workdir, heartbeat=1.0)
    try:
        health = f"http://127.0.0.1:{proc.port}/healthz"
        before, after = asyncio.run(_idle(sub_url, health, count, 3.0, proc))
    finally:
        proc.stop()
    print(
        f"   RSS {before / 1024:.1f} MiB idle -> {after / 1024:.1f} MiB with {count} subscribers "
        f"(+{(after - before) / count:.0f} KiB each; target < 100 MB)"
    )


# -- catch-up -------------------------------------------------------------------------------------


async def _catch_up(ingress: str, sub_url: str, workdir: Path, count: int) -> tuple[float, int]:
    import aiohttp

    from walletpass_tui.config import Settings
    from walletpass_tui.relay.link.feed import RelayLink
    from walletpass_tui.runtime.local import DeliveryRuntime
    from walletpass_tui.runtime.setup import DeliverySetup
    from walletpass_tui.webhooks.listening import ReceiverOptions
    from walletpass_tui.webhooks.verify import SigningKey, sign

    now = datetime.now(UTC)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as session:

        async def one(i: int) -> None:
            body = json.dumps({"type": "pass.activated", "data": {"passId": f"p{i}"}}).encode()
            headers = sign(SECRET, f"msg_cu_{i:06d}", body, now)
            async with session.post(ingress, data=body, headers=headers) as r:
                if r.status != 200:
                    raise RuntimeError(f"subscribe answered {r.status}")

        for start in range(0, count, 500):
            await asyncio.gather(*(one(i) for i in range(start, min(count, start + 500))))
    verified = 0
    done = asyncio.Event()

    def stored(batch) -> None:  # type: ignore[no-untyped-def]
        nonlocal verified
        verified += sum(1 for a in batch if a.verified)
        if verified >= count:
            done.set()

    options = ReceiverOptions(
        host="127.0.0.1", port=0, tolerance_s=3600, secrets=[SigningKey.from_secret(SECRET)]
    )
    link = RelayLink(sub_url, os.environ["BENCH_RELAY_TOKEN"])
    runtime = DeliveryRuntime(
        Settings(home=workdir / "catch-up-laptop", receiver_port=0),
        DeliverySetup(options=options),
        feeds=[link],
    )
    began = time.monotonic()
    async with runtime:
        runtime.subscribe(stored)
        await runtime.serve()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 600)
    return time.monotonic() - began, verified


def catch_up(workdir: Path, count: int) -> None:
    print(f"4. a laptop catching up on {count} deliveries it slept through")
    proc, ingress, sub_url, _ = start_relay(workdir)
    try:
        seconds, verified = asyncio.run(_catch_up(ingress, sub_url, workdir, count))
    finally:
        proc.stop()
    print(
        f"   {verified} stored, verified, in {seconds:.1f} s from the laptop's start "
        f"({verified / seconds:.0f}/s)"
    )


# -- stalled subscribers ---------------------------------------------------------------------------


def _stalled_socket(port: int, path: str, token: str) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n"
    s.sendall(head.encode())
    return s


async def _post_padded(ingress: str, count: int, pad: int) -> float:
    import aiohttp

    from walletpass_tui.webhooks.verify import sign

    body = b'{"type":"pass.activated","pad":"' + b"x" * pad + b'"}'
    now = datetime.now(UTC)
    began = time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as session:

        async def one(i: int) -> None:
            headers = sign(SECRET, f"msg_st_{i:06d}_{began}", body, now)
            async with session.post(ingress, data=body, headers=headers) as r:
                if r.status != 200:
                    raise RuntimeError(f"subscribe answered {r.status}")

        for start in range(0, count, 16):
            await asyncio.gather(*(one(i) for i in range(start, min(count, start + 16))))
    return time.monotonic() - began


def _health(port: int) -> dict[str, int]:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
        return dict(json.loads(r.read()))


def stalled(workdir: Path, count: int, backlog: int) -> None:
    pad = 64 * 1024
    print(f"5. relay RSS with {count} stalled subscribers, a backlog of {backlog} x 64 KiB bodies")
    proc, ingress, sub_url, _ = start_relay(workdir, heartbeat=600.0)
    token = os.environ["BENCH_RELAY_TOKEN"]
    path = sub_url.split(str(proc.port), 1)[1]
    socks: list[socket.socket] = []
    try:
        asyncio.run(_post_padded(ingress, backlog, pad))
        alone = asyncio.run(_post_padded(ingress, 100, pad))
        before = proc.rss_kib()
        socks = [_stalled_socket(proc.port, path, token) for _ in range(count)]
        began, last, still = time.monotonic(), -1, 0.0
        while time.monotonic() - began < 120:
            rss = proc.rss_kib()
            if _health(proc.port).get("stalled", -1) >= count:
                break
            still = still + 0.5 if rss == last else 0.0
            if still >= 3:
                break
            last = rss
            time.sleep(0.5)
        after = proc.rss_kib()
        health = _health(proc.port)
        seconds = asyncio.run(_post_padded(ingress, 100, pad))
        later = proc.rss_kib()
    finally:
        for s in socks:
            s.close()
        proc.stop()
    print(
        f"   RSS {before / 1024:.1f} MiB -> {after / 1024:.1f} MiB with {count} stalled "
        f"(+{(after - before) / count:.0f} KiB each; {health.get('stalled', '?')} counted stalled "
        f"of {health['subscribers']})"
    )
    print(
        f"   100 more deliveries while they stall: {seconds:.2f} s (without them: {alone:.2f} s), "
        f"RSS {later / 1024:.1f} MiB (+{(later - before) / count:.0f} KiB each)"
    )


# -- PostgreSQL -----------------------------------------------------------------------------------


def pg_rows(url: str, table: str) -> int:
    import asyncpg

    async def count() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval(f"SELECT COUNT(*) FROM {table}"))
        finally:
            await conn.close()

    return asyncio.run(count())


def pg_throughput(
    workdir: Path, cluster: PgCluster, rounds: int, duration: float, conns: int
) -> None:
    print(f"6a. ingress throughput on PostgreSQL and on SQLite, wrk -c{conns} -d{duration:g}s")
    results: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    for r in range(rounds):
        for name in ("sqlite", "postgres"):
            requests = workdir / f"req-pg-{name}-{r}.tsv"
            write_requests(requests, sign_requests(int(duration * 12_000), f"pg{name}{r}"))
            database = cluster.new_database() if name == "postgres" else None
            proc, url, _, db = start_relay(workdir, database=database)
            try:
                out = wrk(url, requests, duration, conns)
                stored = pg_rows(database, "deliveries") if database else rows(db, "deliveries")
            finally:
                proc.stop()
            ok = int(out["requests"] - out["status_errors"])
            rate = ok / (out["duration_us"] / 1e6)
            results[name].append(rate)
            print(
                f"   round {r + 1} {name:8s} {rate:8.0f}/s  2xx {ok}  stored {stored}  "
                f"p50 {out['p50_us'] / 1000:.1f} ms  p99 {out['p99_us'] / 1000:.1f} ms"
            )
    med = {k: statistics.median(v) for k, v in results.items()}
    print(
        f"   median: sqlite {med['sqlite']:.0f}/s, postgres {med['postgres']:.0f}/s, "
        f"ratio postgres/sqlite {med['postgres'] / med['sqlite']:.2f}x (target >= 0.7x)"
    )


async def _idle_split(procs: list[Proc], urls: list[list[str]], tokens: list[str]) -> list[int]:
    import aiohttp

    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=None)
    ) as session:
        responses = []
        for per_proc in urls:
            for i, url in enumerate(per_proc):
                r = await session.get(url, headers={"Authorization": f"Bearer {tokens[i]}"})
                if r.status != 200:
                    raise RuntimeError(f"subscribe answered {r.status}")
                responses.append(r)
        for proc, per_proc in zip(procs, urls, strict=True):
            while True:
                async with session.get(f"http://127.0.0.1:{proc.port}/healthz") as h:
                    if (await h.json())["subscribers"] >= len(per_proc):
                        break
                await asyncio.sleep(0.1)
        await asyncio.sleep(3.0)  # a few heartbeats go out to each
        after = [proc.rss_kib() for proc in procs]
        for r in responses:
            r.close()
    return after


def pg_memory(workdir: Path, cluster: PgCluster, count: int) -> None:
    print(f"6c. RSS of two instances on one database, {count} idle subscribers split over them")
    database = cluster.new_database()
    home = Path(tempfile.mkdtemp(dir=workdir))
    channels = add_channels(home, database, [f"bench{i}" for i in range(10)])
    procs = [relay_process(home / name, 1.0, database) for name in ("a", "b")]
    try:
        before = [proc.rss_kib() for proc in procs]
        per = count // len(procs)
        urls = [
            [
                subscribe_url(f"http://127.0.0.1:{proc.port}", channels[i % 10].channel.slug)
                for i in range(per)
            ]
            for proc in procs
        ]
        tokens = [channels[i % 10].token for i in range(per)]
        after = asyncio.run(_idle_split(procs, urls, tokens))
    finally:
        for proc in procs:
            proc.stop()
    for name, b, a in zip("AB", before, after, strict=True):
        print(
            f"   instance {name}: RSS {b / 1024:.1f} MiB idle -> {a / 1024:.1f} MiB with "
            f"{count // 2} subscribers (+{(a - b) / (count // 2):.0f} KiB each; target < 150 MB)"
        )


async def _posts_to_both(urls: list[str], rate: float, count: int) -> list[float]:
    """``count`` deliveries at ``rate``/s, alternately to each URL (``msg_fan_NNNNNN``): the
    moment each 2xx was read (NaN: not acknowledged)."""
    import aiohttp

    from walletpass_tui.webhooks.verify import sign

    now = datetime.now(UTC)
    payloads = []
    for i in range(count):
        body = json.dumps({"type": "pass.activated", "data": {"passId": f"p{i}"}}).encode()
        payloads.append((body, sign(SECRET, f"msg_fan_{i:06d}", body, now)))
    acked = [math.nan] * count
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:

        async def one(i: int, body: bytes, headers: dict[str, str]) -> None:
            async with session.post(urls[i % len(urls)], data=body, headers=headers) as r:
                await r.read()
                if r.status == 200:
                    acked[i] = time.monotonic()

        begin = time.monotonic() + 0.05
        tasks = []
        for i, (body, headers) in enumerate(payloads):
            delay = begin + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i, body, headers)))
        await asyncio.gather(*tasks)
    return acked


def fanout(
    workdir: Path, cluster: PgCluster, sizes: list[int], rate: float, seconds: float
) -> dict[int, tuple[float, int]]:
    """The relay's own fan-out: p95 and missing receipts for each number of subscribers."""
    print(
        f"6d. the relay's fan-out: light subscribers in one process, half on each of two "
        f"instances on one database, {rate:g}/s posted half to each, for {seconds:g} s"
    )
    results: dict[int, tuple[float, int]] = {}
    expect = int(rate * seconds)
    for size in sizes:
        database = cluster.new_database()
        home = Path(tempfile.mkdtemp(dir=workdir))
        issued = add_channels(home, database, ["fanout"])[0]
        os.environ["BENCH_RELAY_TOKEN"] = issued.token
        limits = ("--quiet", "--max-subscribers", str(size), "--max-channel-subscribers", str(size))
        procs = [relay_process(home / name, 15.0, database, *limits) for name in ("a", "b")]
        bases = [f"http://127.0.0.1:{p.port}" for p in procs]
        slug = issued.channel.slug
        out = workdir / f"fanout-{size}.bin"
        busy0, own0, wall0 = busy_seconds(), own_seconds(), time.monotonic()
        child = subprocess.Popen(
            [
                sys.executable,
                HERE / "relay_subscribers.py",
                "light",
                ",".join(subscribe_url(base, slug) for base in bases),
                str(size),
                str(expect),
                str(out),
            ],
            env=dict(os.environ),
        )
        try:
            ready = Path(str(out) + ".ready")
            deadline = time.monotonic() + 120
            while not ready.exists() and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.05)
            cpu0 = sum(p.cpu_seconds() for p in procs)
            acked = asyncio.run(_posts_to_both([ingress_url(b, slug) for b in bases], rate, expect))
            child.wait(timeout=expect / 20 + 180)
            cpu = sum(p.cpu_seconds() for p in procs) - cpu0
            rss = [p.rss_kib() for p in procs]
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
            for proc in procs:
                proc.stop()
            cluster.release(database)
        wall = time.monotonic() - wall0
        busy, own = busy_seconds() - busy0, own_seconds() - own0
        got = array.array("d")
        with out.open("rb") as f:
            got.fromfile(f, size * expect)
        deltas: list[float] = []
        missing = 0
        for s in range(size):
            row = got[s * expect : (s + 1) * expect]
            for i, ack in enumerate(acked):
                if math.isnan(ack):
                    continue
                if math.isnan(row[i]):
                    missing += 1
                else:
                    deltas.append((row[i] - ack) * 1000)
        acks = sum(1 for a in acked if not math.isnan(a))
        p95 = pct(deltas, 95) if deltas else math.nan
        results[size] = (p95, missing)
        print(
            f"   {size:5d} subscribers: {acks} acked, {len(deltas)} receipts ({missing} missing): "
            f"p50 {pct(deltas, 50):.1f} ms, p95 {p95:.1f} ms, p99 {pct(deltas, 99):.1f} ms, "
            f"max {max(deltas):.1f} ms; RSS A {rss[0] / 1024:.1f} MiB, B {rss[1] / 1024:.1f} MiB"
        )
        print(
            f"   {'':5s} the two relays' CPU: {cpu:.2f} s, {cpu / max(1, len(deltas)) * 1e6:.1f} us "
            f"per event sent; CPU over the run: benchmark {own / wall:.2f} cores, other "
            f"programs {max(0.0, busy - own) / wall:.2f}"
        )
    return results


def postgres(workdir: Path, args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "relay"))
    from pg_cluster import PgCluster

    cluster = PgCluster.create("bench", durable=True)
    try:
        if args.only != "fanout":
            pg_throughput(workdir, cluster, args.rounds, args.duration, args.connections)
            end_to_end = latency(
                workdir,
                100.0,
                args.latency_seconds,
                args.subscribers,
                args.latency_to,
                database=cluster.new_database(),
                title="6b.",
            )
            pg_memory(workdir, cluster, args.pg_idle)
        else:
            end_to_end = None
        spread = fanout(workdir, cluster, args.fanout, 100.0, args.fanout_seconds)
    finally:
        cluster.destroy()
    print("   summary, 2xx -> subscriber at 100/s over two instances on PostgreSQL:")
    for size, (p95, missing) in spread.items():
        print(
            f"     relay fan-out, {size:5d} light subscribers: p95 {p95:.1f} ms, {missing} missing"
        )
    if end_to_end is not None:
        p95, missing = end_to_end
        print(
            f"     end to end, {args.subscribers} laptops ({args.latency_to}): p95 {p95:.1f} ms, "
            f"{missing} missing"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--idle", type=int, default=100)
    parser.add_argument(
        "--only",
        choices=["throughput", "latency", "memory", "catch-up", "stalled", "postgres", "fanout"],
    )
    parser.add_argument(
        "--fanout",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[100, 300, 1000],
        metavar="N,N,...",
        help="6d: light subscribers in each round (default 100,300,1000)",
    )
    parser.add_argument("--fanout-seconds", type=float, default=20.0, help="6d: posting time")
    parser.add_argument("--pg-idle", type=int, default=1000, help="idle subscribers, 6c")
    parser.add_argument("--missed", type=int, default=5000, help="deliveries to catch up on")
    parser.add_argument("--stalled", type=int, default=100, help="subscribers that never read")
    parser.add_argument("--backlog", type=int, default=200, help="deliveries they ask for")
    parser.add_argument(
        "--latency-to",
        choices=["store", "receipt"],
        default="store",
        help="store (default): until the row is committed in each laptop's store",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp:
        workdir = Path(tmp)
        if args.only in (None, "throughput"):
            throughput(workdir, args.rounds, args.duration, args.connections)
        if args.only in (None, "latency"):
            latency(workdir, 100.0, args.latency_seconds, args.subscribers, args.latency_to)
        if args.only in (None, "memory"):
            memory(workdir, args.idle)
        if args.only in (None, "catch-up"):
            catch_up(workdir, args.missed)
        if args.only in (None, "stalled"):
            stalled(workdir, args.stalled, args.backlog)
        if args.only in (None, "postgres", "fanout"):
            postgres(workdir, args)


if __name__ == "__main__":
    main()
