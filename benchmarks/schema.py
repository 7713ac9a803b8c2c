"""Payload schemas: what learning costs ``listen``, how soon it catches up, how soon drift is
shown, and rebuilding.

    python benchmarks/schema.py                    # every part (several minutes on 2 cores)
    python benchmarks/schema.py --stored 20000 --rounds 1 --throughput-rounds 2   # quicker
    python benchmarks/schema.py --only throughput  # one part: throughput, latency or rebuild

Figures, never assertions (``uptime``'s load is printed: on a busy machine read the ratios, not
the absolute numbers). Every part sends or stores *varied* bodies (``varied_body``: 40 templates,
optional fields and objects, maps keyed by account ids, arrays of objects of 0 to 6 items, two
topics; about 9,000 distinct shapes in 20,000 bodies), so remembering a shape seldom helps:

* ``throughput``: ``listen`` saturated by ``wrk`` (``receiver.lua``, as ``receiver.py`` drives
  it) with learning on against the same build with ``--no-schemas``, in alternating rounds, a
  fresh receiver and fresh signed deliveries each round: the receiver's rate each way, its CPU a
  delivery, and how long the learner took, after the load stopped, to have learned every stored
  delivery (the catch-up), against the time the load ran (target: at most a quarter of it);
* ``latency``: a ``listen`` receiving steady deliveries, each bringing a new field (drift), at a
  steady rate: the time from each delivery's 2xx to its ``drift`` line on listen's stdout,
  p50/p95/max; target: within 1 s;
* ``rebuild``: ``schema rebuild`` (a fresh process running ``walletpass_tui.schemas.rebuild``
  over the history, the schema file deleted first) against ``walletpass-tui events export
  --format jsonl > /dev/null`` over the same history, alternated, medians; target: no dearer;
  and learning's cost per delivery, in memory (``Catalog.learn``) and through the schema file.

The rebuild's history holds varied bodies, one in 20 rejected and one in 10 a redelivery of an
earlier message (the same body again), as a service retrying would send them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
BATCH = 500
PARTS = ("throughput", "latency", "rebuild")


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
WORDS = ("tier", "color", "points", "member", "store", "city", "level", "expires", "offer", "seat")


def _id(rng: random.Random, prefix: str, length: int = 12) -> str:
    return prefix + "".join(rng.choice(ALNUM) for _ in range(length))


def varied_body(rng: random.Random, n: int) -> tuple[str, dict[str, Any]]:
    """(topic, body) of a realistic, varied delivery: one of 40 templates, optional fields and
    objects, balances keyed by account ids (every third template), the template's fields as an
    array of 0 to 6 objects whose values are numbers or text, locations (every fifth)."""
    topic = "pass.activated" if rng.random() < 0.6 else "pass.deactivated"
    template = rng.randrange(40)
    data: dict[str, Any] = {
        "passId": _id(rng, "pass_"),
        "serialNumber": str(rng.randrange(10**9)),
        "templateId": f"tpl_{template:04d}",
        "platform": rng.choice(["apple", "google"]),
    }
    if rng.random() < 0.7:
        data["deviceLibraryId"] = _id(rng, "", 32)
    if rng.random() < 0.5:
        customer = {"email": f"user{rng.randrange(10**6)}@example.com"}
        customer["tier"] = rng.choice(["gold", "silver", "bronze"])
        if rng.random() < 0.3:
            customer["phone"] = "+1555" + str(rng.randrange(10**7))
        data["customer"] = customer
    if template % 3 == 0:
        data["balances"] = {
            _id(rng, "acct_", 8): {
                "amount": rng.randrange(10_000),
                "currency": rng.choice(["EUR", "USD"]),
            }
            for _ in range(rng.randint(1, 4))
        }
    if template % 4 != 1:
        data["fields"] = [
            {
                "key": rng.choice(WORDS),
                "value": rng.choice([rng.randrange(1000), _id(rng, "", 6)]),
                "label": rng.choice(WORDS).title(),
            }
            for _ in range(rng.randint(0, 6))
        ]
    if template % 5 == 0:
        data["locations"] = [
            {
                "latitude": rng.uniform(-90, 90),
                "longitude": rng.uniform(-180, 180),
                "relevantText": "Near",
            }
            for _ in range(rng.randint(1, 3))
        ]
    if topic == "pass.deactivated":
        data["reason"] = rng.choice(["expired", "revoked", "deleted"])
    created = f"2026-11-23T10:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"
    return topic, {"type": topic, "createdAt": created, "data": data}


def signed_varied(count: int, prefix: str) -> list[tuple[str, str, str, str]]:
    """``receiver.sign_requests``'s rows with varied bodies: (id, timestamp, signature, body)."""
    import base64
    import hashlib
    import hmac

    import receiver

    key = base64.b64decode(receiver.SECRET.split("_", 1)[1])
    ts = str(int(time.time()))
    rng = random.Random(prefix)
    out = []
    for i in range(count):
        msg_id = f"msg_{prefix}_{i:07d}"
        body = json.dumps(varied_body(rng, i)[1], separators=(",", ":"))
        sig = hmac.new(key, f"{msg_id}.{ts}.{body}".encode(), hashlib.sha256).digest()
        out.append((msg_id, ts, "v1," + base64.b64encode(sig).decode(), body))
    return out


async def populate(home: Path, count: int) -> None:
    from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt
    from walletpass_tui.webhooks.store import Store

    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    store = await Store.open(home / "deliveries.sqlite3")
    rng = random.Random(7)
    base = int(time.time() * 1000) - count * 50
    sent: list[tuple[str, str, bytes]] = []

    def make(n: int) -> Attempt:
        if n % 10 == 9 and sent:  # a redelivery of an earlier message: the same body again
            msg, topic, body = sent[rng.randrange(len(sent))]
        else:
            topic, doc = varied_body(rng, n)
            msg, body = f"msg_schema{n:09d}", json.dumps(doc).encode()
            sent.append((msg, topic, body))
        rejected = n % 20 == 19
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
        batch = [make(n) for n in range(start, min(count, start + BATCH))]
        for attempt in batch:  # in order: a redelivery is stored after its first delivery
            await store.record(attempt)
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
        "from walletpass_tui.schemas.schema_file import schemas_path\nfor f in schemas_path(Path(sys.argv[1])).parent.glob("
        "schemas_path(Path(sys.argv[1])).name + '*'): f.unlink()\n"
        "print(rebuild(Path(sys.argv[1])))"
    )
    return [sys.executable, "-c", code, str(history)]


def in_memory_cost(count: int) -> float:
    """CPU microseconds per delivery of Catalog.learn over varied bodies (median of 5)."""
    from walletpass_tui.schemas.catalog import Catalog, Delivery

    rng = random.Random(3)
    bodies = [varied_body(rng, n) for n in range(count)]
    encoded = [(topic, json.dumps(doc).encode()) for topic, doc in bodies]
    rounds = []
    for _ in range(5):
        catalog = Catalog()
        started = time.process_time()
        with catalog.batch():
            for n, (topic, body) in enumerate(encoded):
                catalog.learn(Delivery(n + 1, f"msg_{n}", n, topic, "verified", body))
        rounds.append((time.process_time() - started) / count * 1e6)
    return statistics.median(rounds)


def fresh_in_memory_cost(count: int) -> float:
    """in_memory_cost in a fresh process: this one's heap (the history it wrote) would make the
    collector's passes, and so the figure, larger than a receiver's."""
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import schema; print(schema.in_memory_cost({count}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


# -- throughput: learning on against --no-schemas ------------------------------------------------


def start_listen(workdir: Path, name: str, learning: bool) -> Any:
    """``walletpass-tui listen`` on a free port in a home of its own, as receiver.py starts it."""
    import receiver

    port = receiver.free_port()
    home = workdir / f"{name}-{port}"
    home.mkdir()
    cmd = [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port)]
    cmd += ["--secret", receiver.SECRET, "--tolerance", "3600"]
    if not learning:
        cmd.append("--no-schemas")
    env = {**os.environ, "WALLETPASS_HOME": str(home), "XDG_CONFIG_HOME": str(workdir / "xdg")}
    env.pop("WALLETPASS_API_KEY", None)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"listen exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return receiver.Server(name, proc, port, home / "deliveries.sqlite3", "attempts")
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("listen did not start listening")


def learned_upto(history: Path) -> int:
    """The last history row the schema file has learned (0: none yet)."""
    path = history.with_name(history.name + "-schemas")
    if not path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=5)) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'learned_upto'").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


def history_top(history: Path) -> int:
    with contextlib.closing(sqlite3.connect(history, timeout=5)) as db:
        return int(db.execute("SELECT COALESCE(MAX(id), 0) FROM attempts").fetchone()[0])


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process (all its threads) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput(
    args: argparse.Namespace,
) -> tuple[dict[str, list[float]], dict[str, list[float]], list[float]]:
    """Alternating wrk rounds against listen with learning on and off: deliveries/s each,
    listen's CPU microseconds per delivery (the learner's catching up after the load included),
    and how long the learner took to catch up after each round with learning on (seconds)."""
    import receiver

    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk (Debian/Ubuntu)")
    rates: dict[str, list[float]] = {"on": [], "off": []}
    cpu_us: dict[str, list[float]] = {"on": [], "off": []}
    lags: list[float] = []
    print(
        f"\nthroughput: wrk -t1 -c{args.connections} -d{args.duration:g}s against listen, learning "
        f"on and off (--no-schemas), {args.throughput_rounds} alternating rounds, varied bodies"
    )
    with tempfile.TemporaryDirectory(prefix="walletpass-schema-wrk-") as tmp_name:
        workdir = Path(tmp_name)
        tsv = workdir / "requests.tsv"
        for rnd in range(args.throughput_rounds):
            for mode in ("on", "off") if rnd % 2 == 0 else ("off", "on"):
                receiver.write_requests(tsv, signed_varied(args.requests, f"s{rnd}{mode}"))
                server = start_listen(workdir, mode, learning=mode == "on")
                try:
                    time.sleep(0.5)  # its start-up settled
                    cpu_before = cpu_seconds(server.proc.pid)
                    wrk = receiver.run_wrk(
                        server, tsv, duration=args.duration, connections=args.connections, threads=1
                    )
                    caught_up = ""
                    if mode == "on":
                        stopped = time.perf_counter()
                        top = history_top(server.db)
                        while learned_upto(server.db) < top and time.perf_counter() - stopped < 300:
                            time.sleep(0.02)
                        lag = time.perf_counter() - stopped
                        lags.append(lag)
                        fill = wrk["duration_us"] / 1e6
                        caught_up = (
                            f"  caught up {lag:.2f} s after the load stopped "
                            f"({lag / fill:.2f} of the {fill:.1f} s it ran)"
                        )
                    used = cpu_seconds(server.proc.pid) - cpu_before
                finally:
                    server.stop()
                ok = wrk["requests"] - wrk["status_errors"]
                rate = ok / (wrk["duration_us"] / 1e6)
                rates[mode].append(rate)
                cpu_us[mode].append(used / max(1, ok) * 1e6)
                print(
                    f"  round {rnd + 1} learning {mode:3s} {rate:8.0f} deliveries/s  "
                    f"p99 {wrk['p99_us'] / 1000:6.2f} ms  CPU {cpu_us[mode][-1]:5.0f} us a delivery"
                    f"{caught_up}"
                )
    return rates, cpu_us, lags


# -- latency: a drifting delivery's 2xx to its drift line -----------------------------------------


def drift_latency(args: argparse.Namespace) -> list[float]:
    """Seconds from each drifting delivery's 2xx to its drift line on listen's stdout."""
    import httpx
    import receiver

    from walletpass_tui.webhooks.verify import sign

    with tempfile.TemporaryDirectory(prefix="walletpass-schema-drift-") as tmp_name:
        workdir = Path(tmp_name)
        port = receiver.free_port()
        home = workdir / "home"
        home.mkdir()
        env = {**os.environ, "WALLETPASS_HOME": str(home), "XDG_CONFIG_HOME": str(workdir / "x")}
        env.pop("WALLETPASS_API_KEY", None)
        cmd = [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port)]
        proc = subprocess.Popen(
            [*cmd, "--secret", receiver.SECRET],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        seen: dict[str, float] = {}
        ready = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                now = time.perf_counter()
                if line.startswith("History:"):
                    ready.set()
                elif line.startswith("drift ") and "[" in line:
                    seen.setdefault(line.rsplit("[", 1)[1].strip().rstrip("]"), now)

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60):
            raise SystemExit("listen did not start")
        url = f"http://127.0.0.1:{port}/webhooks"
        acked: dict[str, float] = {}
        with httpx.Client(timeout=30, trust_env=False) as client:

            def send(msg_id: str, data: dict[str, Any]) -> float:
                body = json.dumps({"type": "pass.activated", "data": data}).encode()
                headers = sign(receiver.SECRET, msg_id, body, datetime.now(UTC))
                headers["Content-Type"] = "application/json"
                answer = client.post(url, content=body, headers=headers)
                if answer.status_code != 200:
                    raise SystemExit(f"{msg_id}: {answer.status_code} {answer.text}")
                return time.perf_counter()

            for n in range(25):  # a steady shape first: drift is looked for from sample 21
                send(f"msg_steady_{n}", {"passId": f"pass_{n}", "serialNumber": str(n)})
            period = 1 / args.rate
            start = time.perf_counter()
            for k in range(args.drifting):
                time.sleep(max(0.0, start + k * period - time.perf_counter()))
                msg_id = f"msg_drift_{k}"
                data = {"passId": f"pass_d{k}", "serialNumber": str(k), f"extra{k}": k}
                acked[msg_id] = send(msg_id, data)
        deadline = time.perf_counter() + 30
        while len(seen) < len(acked) and time.perf_counter() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    missing = [m for m in acked if m not in seen]
    if missing:
        print(f"  !! no drift line within 30 s for {len(missing)} deliveries: {missing[:5]}")
    return [seen[m] - acked[m] for m in acked if m in seen]


# -- rebuild against events export ----------------------------------------------------------------


def rebuild_part(args: argparse.Namespace) -> list[str]:
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
    rows = []
    for label, times in (("wall", wall), ("CPU", cpu)):
        ours, peer = statistics.median(times["rebuild"]), statistics.median(times["export"])
        ratio = ours / peer
        verdict = "met" if ratio <= 1 else "NOT MET"
        rows.append(
            f"| schema rebuild over {args.stored:,} varied, {label} time (median of "
            f"{args.rounds}) | {ours:.2f} s | `events export --format jsonl` {peer:.2f} s | "
            f"{ratio:.2f}x | <= 1x | {verdict} |"
        )
    per_delivery = statistics.median(cpu["rebuild"]) / verified * 1e6
    rows.append(
        f"| learning per delivery, CPU, through the schema file (rebuild / {verified:,} "
        f"verified, start-up included) | {per_delivery:.0f} us | | | | |"
    )
    rows.append(
        f"| learning per delivery, CPU, in memory (Catalog.learn) | {memory_us:.0f} us | | | | |"
    )
    return rows


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=PARTS, action="append", help="run only this part")
    parser.add_argument("--stored", type=int, default=100_000, help="rebuild: stored deliveries")
    parser.add_argument("--rounds", type=int, default=3, help="rebuild: alternated rounds")
    parser.add_argument(
        "--throughput-rounds", type=int, default=4, help="throughput: rounds of each (on, off)"
    )
    parser.add_argument("--duration", type=float, default=8.0, help="throughput: seconds a round")
    parser.add_argument("--connections", type=int, default=64, help="throughput: wrk connections")
    parser.add_argument(
        "--requests", type=int, default=200_000, help="throughput: pre-signed deliveries a round"
    )
    parser.add_argument("--drifting", type=int, default=50, help="latency: drifting deliveries")
    parser.add_argument("--rate", type=float, default=5.0, help="latency: deliveries per second")
    args = parser.parse_args()
    parts = args.only or list(PARTS)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores; uptime: {uptime.strip()}")
    table: list[str] = []
    if "throughput" in parts:
        rates, cpu_us, lags = throughput(args)
        on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
        ratio = on / off
        per_round = ", ".join(
            f"{a / b:.2f}" for a, b in zip(rates["on"], rates["off"], strict=True)
        )
        table.append(
            f"| listen saturated with varied bodies, learning on vs --no-schemas (median of "
            f"{args.throughput_rounds}; per round {per_round}) | {on:.0f}/s | {off:.0f}/s | "
            f"{ratio:.2f}x | | |"
        )
        share = statistics.median(lags) / args.duration
        table.append(
            f"| the learner's catch-up after {args.duration:g} s of saturation (median; rounds "
            f"{', '.join(f'{lag:.2f}' for lag in lags)} s), against the time the load ran | "
            f"{statistics.median(lags):.2f} s | {args.duration:g} s | {share:.2f} | <= 0.25 | "
            f"{'met' if share <= 0.25 else 'NOT MET'} |"
        )
        cpu_on, cpu_off = statistics.median(cpu_us["on"]), statistics.median(cpu_us["off"])
        table.append(
            f"| listen's CPU a delivery at saturation, learning on vs off (the learner's catching "
            f"up included) | {cpu_on:.0f} us | {cpu_off:.0f} us | {cpu_on / cpu_off:.2f}x | | |"
        )
    if "latency" in parts:
        print(
            f"\nlatency: {args.drifting} drifting deliveries at {args.rate:g}/s, 2xx to drift line"
        )
        gaps = drift_latency(args)
        if gaps:
            worst = max(gaps)
            table.append(
                f"| 2xx to the drift line on listen's stdout, {len(gaps)} deliveries at "
                f"{args.rate:g}/s: p50 / p95 / max | {pct(gaps, 50) * 1000:.0f} / "
                f"{pct(gaps, 95) * 1000:.0f} / {worst * 1000:.0f} ms | | | < 1 s | "
                f"{'met' if worst < 1 else 'NOT MET'} |"
            )
    if "rebuild" in parts:
        table += rebuild_part(args)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"\nuptime at the end: {uptime.strip()}\n")
    print("| what | ours | peer (same run) | figure | target | |")
    print("|---|---|---|---|---|---|")
    for row in table:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
