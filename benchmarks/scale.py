"""Scale: what reads every row stays fast as the history grows to a million deliveries.

    python benchmarks/scale.py                                   # 100k, 500k, 1M (~30 min on 2 cores)
    python benchmarks/scale.py --sizes 20000,60000,100000 --chunk 20000 --runs 3   # a quicker look
    python benchmarks/scale.py --home /tmp/wp-scale --keep       # keep the history afterwards

One ``walletpass-tui listen`` grows one history, as fast as it takes them: ``wrk`` (with
``receiver.lua``, as ``receiver.py`` drives it) posts varied, realistic deliveries signed just
before each chunk (``bodies.py``: many templates, optional fields, id-keyed maps, arrays of
objects, random webhook-ids; half say ``google``). Printed, with each figure's growth from the
first size to the last:

* ingest, per chunk: deliveries/s, p50/p99/max acknowledgement (wrk's), and the search index's
  lag behind the writer (rows committed but not yet searchable): the most seen while the chunk
  ran (sampled every 0.25 s), when it ended, and how long the index took to catch up after it;
* at each size, with ``listen`` running and idle (once its schema learner has caught up, which
  is said): ``events list``, ``events show``,
  ``events list --search google`` (about half the history matches), ``events stats`` over 24 hours,
  each from spawn to exit (median of ``--runs``) next to ``python -c pass``; in a process of its
  own, a search for ``google``'s first page and its count, and a page of the log read while that
  count runs (it must not wait for it); the dashboard's first paint in a tmux pane (launch to the
  first stored webhook-id on screen) next to a one-``Static`` Textual app (medians of
  ``--paint-runs``); the receiver's RSS and the files' sizes;
* at the last size: ``events prune`` of the older half while ``listen`` takes a steady 200/s
  (open loop, timed from each request's scheduled send): ack p50/p99/max during the prune against
  a round of the same rate just before it, and how long the prune took.

Figures, never assertions. Needs wrk and tmux (``apt-get install -y wrk tmux``).
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
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bodies import Bodies  # noqa: E402
from live import MINIMAL_APP, Tmux  # noqa: E402
from receiver import LUA, PATH, SECRET, paced, pct  # noqa: E402
from schema import learned_upto  # noqa: E402
from startup import compile_bytecode  # noqa: E402

PYTHON = sys.executable
SEARCH = "google"  # in about half the bodies


# -- the receiver and its history ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Listen:
    """``walletpass-tui listen`` on a home, its stdout to /dev/null (as a headless receiver)."""

    def __init__(self, home: Path, log_file: Path | None = None) -> None:
        """``log_file``: listen's debug log (``WALLETPASS_LOG``), none by default."""
        self.home = home
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
        env.update(WALLETPASS_HOME=str(home), WALLETPASS_SECRET=SECRET)
        if log_file is not None:
            env["WALLETPASS_LOG"] = str(log_file)
        cmd = [PYTHON, "-m", "walletpass_tui", "listen", "--port", str(self.port)]
        cmd += ["--tolerance", "3600"]
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120  # an upgrade of an older history counts it first
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"listen exited: {self.proc.stderr.read().decode()}")  # type: ignore[union-attr]
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2),
            ):
                return
            time.sleep(0.05)
        raise SystemExit("listen did not start")

    @property
    def db(self) -> Path:
        return self.home / "deliveries.sqlite3"

    def rss_mib(self) -> float:
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(text.split("VmRSS:")[1].split()[0]) / 1024

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Marks:
    """The newest row id stored and the newest the search index holds, read the way ``events``
    commands read (read-only connections)."""

    def __init__(self, db: Path) -> None:
        self.history = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        self.index = sqlite3.connect(f"file:{db}-search?mode=ro", uri=True)

    def stored(self) -> int:
        return int(self.history.execute("SELECT COALESCE(MAX(id), 0) FROM attempts").fetchone()[0])

    def indexed(self) -> int:
        row = self.index.execute("SELECT value FROM meta WHERE key = 'indexed_upto'").fetchone()
        return int(row[0]) if row else 0

    def lag(self) -> int:
        return max(0, self.stored() - self.indexed())

    def close(self) -> None:
        self.history.close()
        self.index.close()


def signed_requests(bodies: Bodies, n: int, path: Path) -> list[str]:
    """``n`` deliveries signed now, one per line for ``receiver.lua``; their webhook-ids."""
    key = base64.b64decode(SECRET.split("_", 1)[1])
    ts = str(int(time.time()))
    ids = []
    with path.open("w") as fh:
        for _ in range(n):
            msg_id, _topic, body = bodies.next()
            text = body.decode()
            signed = f"{msg_id}.{ts}.{text}".encode()
            sig = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
            fh.write(f"{msg_id}\t{ts}\tv1,{sig}\t{text}\n")
            ids.append(msg_id)
    return ids


def fill(listen: Listen, marks: Marks, requests: Path, n: int, connections: int) -> dict[str, Any]:
    """Post ``n`` deliveries with wrk as fast as listen takes them; the index's lag meanwhile."""
    lags: list[int] = []
    done = threading.Event()

    def sample() -> None:
        with contextlib.closing(Marks(listen.db)) as own:
            while not done.wait(0.25):
                with contextlib.suppress(sqlite3.Error):
                    lags.append(own.lag())

    sampler = threading.Thread(target=sample, daemon=True)
    target = marks.stored() + n
    env = {**os.environ, "WRK_REQUESTS": str(requests), "WRK_THREADS": "1", "WRK_LIMIT": str(n)}
    cmd = ["wrk", "-t1", f"-c{connections}", "-d3600s", "--timeout", "30s", "-s", str(LUA)]
    cmd.append(f"http://127.0.0.1:{listen.port}{PATH}")
    sampler.start()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    try:
        # wrk's thread stops after n answers but wrk sleeps out its duration: stop it (SIGINT
        # makes it print its summary) once listen has stored them.
        while proc.poll() is None and marks.stored() < target:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        done.set()
    ended = time.perf_counter()
    done.set()
    sampler.join()
    at_end = marks.lag()
    while marks.lag() > 0:
        time.sleep(0.05)
    caught_up = time.perf_counter() - ended
    line = next((x for x in out.splitlines() if x.startswith("WRKJSON ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no summary:\n{out}")
    wrk = json.loads(line[len("WRKJSON ") :])
    ok = wrk["requests"] - wrk["status_errors"]
    return {
        "rate": ok / (wrk["duration_us"] / 1e6),
        "p50": wrk["p50_us"] / 1000,
        "p99": wrk["p99_us"] / 1000,
        "max": wrk["max_us"] / 1000,
        "errors": int(wrk["status_errors"] + wrk["timeouts"] + wrk["read_errors"]),
        "lag_max": max([*lags, at_end]),
        "lag_end": at_end,
        "catch_up": caught_up,
    }


def learner_caught_up(db: Path, stored: int, wait_s: float) -> float:
    """Seconds until the schema learner has learned every stored row (``wait_s`` at most), so
    what follows is measured with the receiver idle."""
    started = time.perf_counter()
    while learned_upto(db) < stored and time.perf_counter() - started < wait_s:
        time.sleep(0.5)
    return time.perf_counter() - started


# -- looking at it --------------------------------------------------------------------------------


def spawn_ms(argv: list[str], env: dict[str, str], runs: int) -> float:
    """Median wall time of ``argv`` from spawn to exit, in ms (its output discarded)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    return statistics.median(times)


SEARCH_PROBE = """
import asyncio, json, sys, time
from pathlib import Path
from walletpass_tui.webhooks.models import LogFilter
from walletpass_tui.webhooks.store.read_only import open_history

async def main(path, text):
    history = await open_history(Path(path))
    flt = LogFilter(text=text)
    started = time.perf_counter()
    page = await history.log_page(flt, limit=200)
    first = time.perf_counter() - started
    counting = asyncio.ensure_future(history.count(flt))
    await asyncio.sleep(0.05)  # the count is under way on its own connection
    started_page = time.perf_counter()
    await history.log_page(None, limit=200, before_id=page[-1].id)
    during = time.perf_counter() - started_page
    count_done = counting.done()
    total = await counting
    counted = time.perf_counter() - started
    await history.close()
    print(json.dumps({"first_ms": first * 1000, "count_ms": counted * 1000, "matches": total,
                      "page_during_count_ms": during * 1000, "count_done_first": count_done}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def search_probe(db: Path, runs: int) -> dict[str, float]:
    found = []
    for _ in range(runs):
        out = subprocess.run(
            [PYTHON, "-c", SEARCH_PROBE, str(db), SEARCH],
            capture_output=True,
            text=True,
            check=True,
        )
        found.append(json.loads(out.stdout))
    return {
        key: statistics.median(float(r[key]) for r in found)
        for key in ("first_ms", "count_ms", "matches", "page_during_count_ms")
    }


def first_paint(home: Path, total: int, runs: int) -> dict[str, float]:
    """Launch to the first stored webhook-id on a tmux screen (the dashboard, attached to the
    running listen), against a one-Static Textual app launched the same way; then launch to the
    log's total in its title, and a search typed into the filter to its count there; medians."""
    script = Path(tempfile.mkdtemp()) / "minimal.py"
    script.write_text(MINIMAL_APP)
    found: dict[str, list[float]] = {"paint": [], "minimal": [], "total": [], "search": []}
    env = {"TERM": "xterm-256color", "WALLETPASS_HOME": str(home)}
    for _ in range(runs):
        term = Tmux([PYTHON, str(script)], width=120, height=36, env=env)
        try:
            found["minimal"].append(term.wait_for("minimal app ready"))
        finally:
            term.stop()
        term = Tmux([PYTHON, "-m", "walletpass_tui"], width=160, height=40, env=env)
        try:
            found["paint"].append(term.wait_for("msg_"))
            found["total"].append(term.wait_for(f"Events {total:,}"))
            # The filter applies as it is typed: from its last key to the count in the title.
            subprocess.run(["tmux", "send-keys", "-t", term.name, "/"], check=True)
            time.sleep(0.3)
            subprocess.run(["tmux", "send-keys", "-t", term.name, SEARCH[:-1]], check=True)
            time.sleep(0.3)
            started = time.perf_counter()
            subprocess.run(["tmux", "send-keys", "-t", term.name, SEARCH[-1]], check=True)
            while not re.search(rf"Events [0-9,]+ matching {SEARCH} ", term.screen()):
                if time.perf_counter() - started > 600:
                    raise TimeoutError("the search's count never appeared")
                time.sleep(0.02)
            found["search"].append(time.perf_counter() - started)
        finally:
            term.stop()
    shutil.rmtree(script.parent, ignore_errors=True)
    return {key: statistics.median(values) * 1000 for key, values in found.items()}


def look(listen: Listen, some_id: str, args: argparse.Namespace) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(listen.home)
    events = [PYTHON, "-m", "walletpass_tui", "events"]
    found = {
        "python -c pass ms": spawn_ms([PYTHON, "-c", "pass"], env, args.runs),
        "events list ms": spawn_ms([*events, "list", "--limit", "20", "--json"], env, args.runs),
        "events show ms": spawn_ms([*events, "show", some_id, "--json"], env, args.runs),
        "events list --search ms": spawn_ms(
            [*events, "list", "--limit", "20", "--json", "--search", SEARCH], env, args.runs
        ),
        "events stats 24h ms": spawn_ms(
            [*events, "stats", "--since", "24h", "--json"], env, args.runs
        ),
    }
    probe = search_probe(listen.db, args.runs)
    found.update(
        {
            "search first page ms": probe["first_ms"],
            "search count ms": probe["count_ms"],
            "search matches": probe["matches"],
            "a page while it counts ms": probe["page_during_count_ms"],
        }
    )
    if args.paint_runs:
        with contextlib.closing(sqlite3.connect(f"file:{listen.db}?mode=ro", uri=True)) as db:
            total = int(db.execute("SELECT SUM(verified + rejected) FROM activity").fetchone()[0])
        paint = first_paint(listen.home, total, args.paint_runs)
        found["dashboard first paint ms"] = paint["paint"]
        found["one-Static app paint ms"] = paint["minimal"]
        found["dashboard total shown ms"] = paint["total"]
        found["dashboard search count shown ms"] = paint["search"]
    found["listen RSS MiB"] = listen.rss_mib()
    found["history MB"] = listen.db.stat().st_size / 1e6
    index = Path(f"{listen.db}-search")
    found["search index MB"] = index.stat().st_size / 1e6 if index.exists() else 0.0
    return found


# -- pruning with listen running ------------------------------------------------------------------


def raw_request(port: int, msg_id: str, ts: str, sig: str, body: str) -> bytes:
    data = body.encode()
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"webhook-id: {msg_id}\r\nwebhook-timestamp: {ts}\r\nwebhook-signature: {sig}\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data


def steady(listen: Listen, bodies: Bodies, seconds: float, rate: float = 200.0) -> list[float]:
    path = Path(tempfile.mkdtemp()) / "steady.tsv"
    signed_requests(bodies, int(seconds * rate), path)
    data = [raw_request(listen.port, *line.split("\t")) for line in path.read_text().splitlines()]
    shutil.rmtree(path.parent, ignore_errors=True)
    return asyncio.run(paced(listen.port, data, rate, 64))


def prune_phase(listen: Listen, bodies: Bodies, seconds: float) -> dict[str, float]:
    """A steady 200/s alone, then the same while ``events prune`` drops the older half."""
    alone = steady(listen, bodies, seconds)
    with contextlib.closing(sqlite3.connect(f"file:{listen.db}?mode=ro", uri=True)) as db:
        total = int(db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
        middle = db.execute(
            "SELECT received_at_ms FROM attempts ORDER BY id LIMIT 1 OFFSET ?", (total // 2,)
        ).fetchone()[0]
    older = max(1, int(time.time() - middle / 1000))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(listen.home)
    argv = [PYTHON, "-m", "walletpass_tui", "events", "prune", "--older-than", f"{older}s", "--yes"]
    started = time.perf_counter()
    prune = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    during: list[float] = []
    while prune.poll() is None:
        during += steady(listen, bodies, min(seconds, 10.0))
    took = time.perf_counter() - started
    out, err = prune.communicate()
    if prune.returncode != 0:
        raise SystemExit(f"events prune failed: {err.decode()[-500:]}")
    return {
        "ack p50 alone ms": pct(alone, 50),
        "ack p99 alone ms": pct(alone, 99),
        "ack max alone ms": max(alone),
        "ack p50 pruning ms": pct(during, 50),
        "ack p99 pruning ms": pct(during, 99),
        "ack max pruning ms": max(during),
        "prune s": took,
        "pruned": float(out.decode().split()[1]) if out.split() else 0.0,
    }


# -- the report -----------------------------------------------------------------------------------


def fmt(value: float) -> str:
    if value >= 10_000:
        return f"{value:,.0f}"
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def table(sizes: list[int], rows: dict[str, list[float]]) -> None:
    head = ["figure", *(f"{s:,}" for s in sizes), "growth"]
    lines = [head]
    for name, values in rows.items():
        growth = values[-1] / values[0] if values[0] else float("nan")
        lines.append([name, *(fmt(v) for v in values), f"{growth:.2f}x"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for line in lines:
        print(
            "  ".join(
                c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(line)
            )
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,500000,1000000", help="measure at these")
    parser.add_argument("--chunk", type=int, default=100_000, help="deliveries per wrk run")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections")
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (median)")
    parser.add_argument("--paint-runs", type=int, default=3, help="first paints (0: skip)")
    parser.add_argument("--steady-seconds", type=float, default=20.0, help="the 200/s round")
    parser.add_argument("--no-prune", action="store_true", help="leave out the prune phase")
    parser.add_argument(
        "--learn-wait", type=float, default=900.0, help="seconds to wait for the schema learner"
    )
    parser.add_argument("--home", type=Path, help="grow the history here (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep --home's history afterwards")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop listen and wrk on the way out
    for tool in ("wrk", "tmux"):
        if shutil.which(tool) is None:
            raise SystemExit(f"This benchmark needs {tool} (apt-get install -y wrk tmux).")
    sizes = sorted(int(s) for s in args.sizes.split(","))
    print(compile_bytecode())
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores shared: read ratios)")
    home = args.home or Path(tempfile.mkdtemp(prefix="wp-scale-"))
    home.mkdir(parents=True, exist_ok=True)
    bodies = Bodies(seed=31)
    listen = Listen(home)
    marks = Marks(listen.db)
    chunks: list[tuple[int, dict[str, Any]]] = []
    looks: list[dict[str, float]] = []
    some_ids: list[str] = []
    try:
        stored = marks.stored()
        print(f"history {listen.db}: {stored:,} stored at start\n")
        print(f"ingest, per chunk (wrk -t1 -c{args.connections}):")
        for size in sizes:
            while stored < size:
                n = min(args.chunk, size - stored)
                requests = home / "requests.tsv"
                ids = signed_requests(bodies, n, requests)
                some_ids.append(ids[len(ids) // 2])
                result = fill(listen, marks, requests, n, args.connections)
                requests.unlink()
                stored = marks.stored()
                chunks.append((stored, result))
                print(
                    f"  to {stored:>9,}: {result['rate']:7,.0f}/s  p50 {result['p50']:6.1f} ms  "
                    f"p99 {result['p99']:7.1f} ms  max {result['max']:7.1f} ms  index lag max "
                    f"{result['lag_max']:,} end {result['lag_end']:,}, caught up "
                    f"{result['catch_up']:.1f} s later"
                    + (f"  errors {result['errors']}" if result["errors"] else "")
                )
            learned = learner_caught_up(listen.db, stored, args.learn_wait)
            print(f"  the schema learner caught up {learned:.0f} s after the last chunk")
            if not some_ids:  # a history grown before: one of its messages
                row = marks.history.execute("SELECT webhook_id FROM messages LIMIT 1").fetchone()
                some_ids.append(str(row[0]))
            found = look(listen, some_ids[0], args)
            found["schema learner caught up s"] = learned
            looks.append(found)
            print(
                f"\nat {stored:,} stored: " + ", ".join(f"{k} {fmt(v)}" for k, v in found.items())
            )
            print()
        pruned = None if args.no_prune else prune_phase(listen, bodies, args.steady_seconds)
    finally:
        marks.close()
        listen.stop()
        if args.home is None and not args.keep:
            shutil.rmtree(home, ignore_errors=True)

    print("\n== at each size (listen running, idle) ==")
    rows = {key: [found[key] for found in looks] for key in looks[0]}
    rows["events list / python -c pass"] = [
        f["events list ms"] / f["python -c pass ms"] for f in looks
    ]
    if args.paint_runs:
        rows["first paint / one-Static app"] = [
            f["dashboard first paint ms"] / f["one-Static app paint ms"] for f in looks
        ]
    table(sizes, rows)
    print("\n== ingest by chunk ==")
    for stored_at, r in chunks:
        print(
            f"  to {stored_at:>9,}: {r['rate']:7,.0f}/s  p99 {r['p99']:7.1f} ms  "
            f"index lag max {r['lag_max']:,}, caught up {r['catch_up']:.1f} s after"
        )
    if pruned is not None:
        print("\n== events prune of the older half, listen taking 200/s ==")
        for key, value in pruned.items():
            print(f"  {key}: {fmt(value)}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
