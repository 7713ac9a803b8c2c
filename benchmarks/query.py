"""Field queries over a large history: first page and count against a plain json_extract scan,
what the field index costs, and the receiver's acknowledgements while queries run.

    python benchmarks/query.py                                   # 1,000,000 stored: long
    python benchmarks/query.py --deliveries 100000 --runs 10 --ack-seconds 10
    python benchmarks/query.py --keep /tmp/qbench                # build once, measure again

Parts (``--only``):

1. ``build``: a history of ``--deliveries`` simulated deliveries (both topics, a balance on one in
   ten, a loyalty tier on one in seven, tags on one in eleven) stored through ``Store.record`` (the
   search index included), then the field index built by ``index.Fields.step`` as the runtime's
   indexer does after commits. Prints the index's size against the history's and its CPU time a
   delivery (its "write time": spent on a thread of its own after the commit, never before a 2xx).
   With ``--keep DIR`` a history already built there (of the same size) is reused.
2. ``queries``: each field query of QUERIES through the store's reader as ``events list`` and the
   dashboard run it (a read-only history, the field index attached): the first page (200 rows,
   the dashboard's page) ``--runs`` times (p50/p95) and the count (median of 3). The peer, in the
   same run and on the same file: the same question as a plain ``json_extract`` scan of the
   attempts, newest first. Targets: first page p95 < 1 s, count < 3 s.
3. ``ack``: ``listen`` on the big history (``--no-schemas``: no learner catching up on a million
   rows), an open-loop client at 200 deliveries/s for ``--ack-seconds`` (receiver.py's, latency
   from each request's scheduled time); alternated rounds with nothing else running and with a
   process looping over the queries (first page and count) meanwhile. Target: p99 while queries
   run within 1.25x of the p99 without.

Figures, never assertions; run it on a quiet machine (``uptime`` is printed at both ends).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PARTS = ("build", "queries", "ack")
PAGE = 200
BATCH = 1000

# (query, the json_extract peer's WHERE clause over attempts a)
QUERIES: list[tuple[str, str]] = [
    ("data.platform:google", "json_extract(CAST(a.body AS TEXT), '$.data.platform') = 'google'"),
    (
        "data.passId:pass_rare",
        "json_extract(CAST(a.body AS TEXT), '$.data.passId') = 'pass_rare'",
    ),
    ("data.balance>95", "json_extract(CAST(a.body AS TEXT), '$.data.balance') > 95"),
    (
        "has:data.loyaltyTier",
        "json_type(CAST(a.body AS TEXT), '$.data.loyaltyTier') IS NOT NULL",
    ),
    (
        "-has:data.loyaltyTier",
        "json_type(CAST(a.body AS TEXT), '$.data.loyaltyTier') IS NULL",
    ),
    (
        "data.loyaltyTier!=gold",
        "json_extract(CAST(a.body AS TEXT), '$.data.loyaltyTier') != 'gold'",
    ),
    (
        "data.platform:google data.loyaltyTier:gold",
        "json_extract(CAST(a.body AS TEXT), '$.data.platform') = 'google' AND "
        "json_extract(CAST(a.body AS TEXT), '$.data.loyaltyTier') = 'gold'",
    ),
    (
        "topic:deactivated data.platform:apple",
        "a.topic = 'pass.deactivated' AND "
        "json_extract(CAST(a.body AS TEXT), '$.data.platform') = 'apple'",
    ),
    (
        "data.tags[]:vip",
        "EXISTS (SELECT 1 FROM json_each(CAST(a.body AS TEXT), '$.data.tags') t "
        "WHERE t.value = 'vip')",
    ),
    (
        "(data.loyaltyTier:gold OR data.balance>98)",
        "(json_extract(CAST(a.body AS TEXT), '$.data.loyaltyTier') = 'gold' OR "
        "json_extract(CAST(a.body AS TEXT), '$.data.balance') > 98)",
    ),
]


def cpu_now() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*")) / 1e6


# -- 1. build ---------------------------------------------------------------------------------


async def populate(history: Path, count: int) -> float:
    """``count`` simulated deliveries stored through the store; seconds it took."""
    from walletpass_tui.sim.events import event_body
    from walletpass_tui.webhooks.models import VERIFIED, Attempt
    from walletpass_tui.webhooks.store import Store

    rng = random.Random(7)
    when = datetime(2026, 11, 23, tzinfo=UTC)
    base = int(time.time() * 1000) - count * 10
    rare = count // 3  # one delivery with a pass id no other has

    def make(n: int) -> Attempt:
        topic = ("pass.activated", "pass.deactivated")[n % 3 == 0]
        doc = event_body(topic, when=when, rng=rng)
        if n % 10 == 0:
            doc["data"]["balance"] = rng.randrange(100)
        if n % 7 == 0:
            doc["data"]["loyaltyTier"] = rng.choice(("gold", "silver", "bronze"))
        if n % 11 == 0:
            doc["data"]["tags"] = rng.sample(("vip", "new", "returning", "promo"), 2)
        if n == rare:
            doc["data"]["passId"] = "pass_rare"
        body = json.dumps(doc).encode()
        msg = f"msg_q{n:09d}"
        return Attempt(
            received_at_ms=base + n * 10,
            method="POST",
            path="/webhooks",
            headers=(
                ("content-type", "application/json"),
                ("webhook-id", msg),
                ("webhook-timestamp", str((base + n * 10) // 1000)),
                ("webhook-signature", "v1,bench"),
            ),
            body=body,
            verdict=VERIFIED,
            reason="verified",
            status=200,
            webhook_id=msg,
            topic=topic,
        )

    started = time.perf_counter()
    store = await Store.open(history)
    try:
        for start in range(0, count, BATCH):
            await asyncio.gather(
                *(store.record(make(n)) for n in range(start, min(count, start + BATCH)))
            )
            if start % 100_000 == 0:
                print(f"  stored {start:,}", flush=True)
        await store.settled()
    finally:
        await store.close()
    return time.perf_counter() - started


def build_index(history: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, rows) of indexing every row for fields."""
    from walletpass_tui.query.index import Fields, discard

    discard(history)
    fields = Fields(history)
    fields.open()
    rows = 0
    wall, cpu = time.perf_counter(), cpu_now()
    try:
        while (step := fields.step()).rows:
            rows += step.rows
            if rows % 100_000 < step.rows:
                print(f"  indexed {rows:,}", flush=True)
    finally:
        fields.close()
    return time.perf_counter() - wall, cpu_now() - cpu, rows


def history_rows(history: Path) -> int:
    if not history.exists():
        return 0
    with contextlib.closing(sqlite3.connect(history)) as db:
        return int(db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])


async def upgrade(history: Path) -> None:
    """Open a kept history with the store once: one an older version wrote is upgraded."""
    from walletpass_tui.webhooks.store import Store

    store = await Store.open(history)
    await store.settled()
    await store.close()


def build(args: argparse.Namespace, history: Path, table: list[str]) -> None:
    from walletpass_tui.query.index import index_path

    if history_rows(history) >= args.deliveries:  # ("ack" adds the deliveries it sends)
        asyncio.run(upgrade(history))
    else:
        for file in history.parent.glob(history.name + "*"):
            file.unlink()
        print(f"build: storing {args.deliveries:,} deliveries", flush=True)
        took = asyncio.run(populate(history, args.deliveries))
        print(f"  {args.deliveries / took:,.0f} stored a second", flush=True)
    if "build" not in (args.only or PARTS) and index_path(history).exists():
        return
    print("build: the field index", flush=True)
    wall, cpu, rows = build_index(history)
    index_mb = index_path(history).stat().st_size / 1e6
    history_mb = history.stat().st_size / 1e6
    search_mb = history.with_name(history.name + "-search").stat().st_size / 1e6
    table.append(
        f"| the field index of {rows:,} deliveries: on disk | {index_mb:,.0f} MB "
        f"({index_mb * 1e6 / rows:.0f} B a delivery) | the history {history_mb:,.0f} MB, its "
        f"search index {search_mb:,.0f} MB | {index_mb / history_mb:.2f}x the history | | |"
    )
    table.append(
        f"| indexing a delivery's fields (off the commit path, its own thread) | "
        f"{cpu / rows * 1e6:.0f} us CPU ({rows / wall:,.0f} a second on one thread) | | | | |"
    )


# -- 2. queries -------------------------------------------------------------------------------


async def ours(history: Path, query: str, runs: int) -> tuple[list[float], list[float], int]:
    from walletpass_tui.query.filters import parse_filter
    from walletpass_tui.webhooks.store.read_only import open_history

    flt, parsed = parse_filter(query)
    assert not parsed.problems, parsed
    pages, counts = [], []
    total = 0
    async with await open_history(history) as store:
        for _ in range(runs):
            t = time.perf_counter()
            await store.log_page(flt, limit=PAGE)
            pages.append(time.perf_counter() - t)
        for _ in range(3):
            t = time.perf_counter()
            total = await store.count(flt)
            counts.append(time.perf_counter() - t)
    return pages, counts, total


def peer(history: Path, where: str, runs: int) -> tuple[list[float], list[float], int]:
    uri = f"file:{history}?mode=ro"
    pages, counts = [], []
    total = 0
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        page_sql = (
            "SELECT a.id, a.received_at_ms, a.webhook_id, a.topic, a.verdict FROM attempts a "
            f"WHERE {where} ORDER BY a.id DESC LIMIT {PAGE}"
        )
        for _ in range(runs):
            t = time.perf_counter()
            db.execute(page_sql).fetchall()
            pages.append(time.perf_counter() - t)
        for _ in range(3):
            t = time.perf_counter()
            total = int(db.execute(f"SELECT COUNT(*) FROM attempts a WHERE {where}").fetchone()[0])
            counts.append(time.perf_counter() - t)
    return pages, counts, total


def queries(args: argparse.Namespace, history: Path, table: list[str]) -> None:
    print(f"\nqueries: first page ({PAGE} rows) x{args.runs}, count x3, ours then the peer")
    worst_page, worst_count = 0.0, 0.0
    for query, where in QUERIES:
        pages, counts, total = asyncio.run(ours(history, query, args.runs))
        peer_pages, peer_counts, peer_total = peer(history, where, max(3, args.runs // 4))
        page95, count = pct(pages, 95), statistics.median(counts)
        peer95, peer_count = pct(peer_pages, 95), statistics.median(peer_counts)
        worst_page, worst_count = max(worst_page, page95), max(worst_count, count)
        agree = "" if total == peer_total else f" (peer counted {peer_total:,}!)"
        print(
            f"  {query:48s} {total:>9,} | page p50 {pct(pages, 50) * 1000:7.1f} ms p95 "
            f"{page95 * 1000:7.1f} ms (peer {peer95 * 1000:7.1f}) | count {count * 1000:7.0f} "
            f"ms (peer {peer_count * 1000:7.0f}){agree}",
            flush=True,
        )
        table.append(
            f"| `{query}` ({total:,} of {args.deliveries:,}): first page p95 / count | "
            f"{page95 * 1000:.0f} ms / {count * 1000:.0f} ms | {peer95 * 1000:.0f} ms / "
            f"{peer_count * 1000:.0f} ms | {peer95 / page95:.1f}x / {peer_count / count:.1f}x | "
            f"< 1 s / < 3 s | {'met' if page95 < 1 and count < 3 else 'NOT MET'} |"
        )
    print(f"  worst: page p95 {worst_page * 1000:.0f} ms, count {worst_count * 1000:.0f} ms")


# -- 3. acknowledgements while queries run ----------------------------------------------------

_LOOPER = """
import asyncio, sys, time
from pathlib import Path
from walletpass_tui.query.filters import parse_filter
from walletpass_tui.webhooks.store.read_only import open_history

async def main():
    history, queries, until = Path(sys.argv[1]), sys.argv[2].split("\\n"), float(sys.argv[3])
    done = 0
    async with await open_history(history) as store:
        while time.time() < until:
            for text in queries:
                flt, _ = parse_filter(text)
                await store.log_page(flt, limit=200)
                await store.count(flt)
                done += 1
    print(done)

asyncio.run(main())
"""


def ack(args: argparse.Namespace, history: Path, table: list[str]) -> None:
    import receiver  # benchmarks/receiver.py: its open-loop client and signing

    work = Path(tempfile.mkdtemp(prefix="wp-query-ack-"))
    home = work / "home"
    home.mkdir()
    # listen on the big history itself (its home holds links to the files): the deliveries
    # sent here are added to it.
    for file in history.parent.glob(history.name + "*"):
        os.link(file, home / file.name)
    port = receiver.free_port()
    cmd = [sys.executable, "-m", "walletpass_tui", "listen", "--port", str(port), "--no-schemas"]
    cmd += ["--secret", receiver.SECRET, "--tolerance", "3600"]
    env = {**os.environ, "WALLETPASS_HOME": str(home), "XDG_CONFIG_HOME": str(work / "xdg")}
    env.pop("WALLETPASS_API_KEY", None)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results: dict[str, list[float]] = {"idle": [], "queries": []}
    looped: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:  # not listening yet
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"listen did not start: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
            time.sleep(0.1)
        count = int(args.ack_rate * args.ack_seconds)
        texts = "\n".join(q for q, _ in QUERIES)
        for round_no in range(args.ack_rounds):
            for phase in ("idle", "queries"):
                rows = receiver.sign_requests(count, f"ack{round_no}{phase}")
                data = [receiver.raw_request(port, row) for row in rows]
                looper = None
                if phase == "queries":
                    until = time.time() + args.ack_seconds + 2
                    looper = subprocess.Popen(
                        [
                            sys.executable,
                            "-c",
                            _LOOPER,
                            str(home / history.name),
                            texts,
                            str(until),
                        ],
                        stdout=subprocess.PIPE,
                        text=True,
                    )
                    time.sleep(1)  # the loop is under way
                latencies = asyncio.run(receiver.paced(port, data, args.ack_rate, 16))
                if looper is not None:
                    out, _ = looper.communicate(timeout=120)
                    looped.append(int(out.strip() or 0))
                p99 = pct(latencies, 99)
                results[phase].append(p99)
                print(f"  round {round_no + 1} {phase:8s} p99 {p99:6.1f} ms", flush=True)
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    idle, busy = statistics.median(results["idle"]), statistics.median(results["queries"])
    table.append(
        f"| listen's ack p99 at {args.ack_rate:g}/s on {args.deliveries:,} stored, while a "
        f"process loops over the {len(QUERIES)} queries (page + count; {sum(looped)} rounds) "
        f"vs nothing else (median of {args.ack_rounds}) | {busy:.1f} ms | {idle:.1f} ms | "
        f"{busy / idle:.2f}x | <= 1.25x | {'met' if busy / idle <= 1.25 else 'NOT MET'} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=PARTS, action="append", help="run only this part")
    parser.add_argument("--deliveries", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="build the history here and reuse it")
    parser.add_argument("--runs", type=int, default=20, help="first pages per query")
    parser.add_argument("--ack-rounds", type=int, default=3)
    parser.add_argument("--ack-seconds", type=float, default=20.0)
    parser.add_argument("--ack-rate", type=float, default=200.0)
    args = parser.parse_args()
    parts = args.only or list(PARTS)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores; uptime: {uptime.strip()}")
    print(f"sqlite {sqlite3.sqlite_version}")
    where = args.keep or Path(tempfile.mkdtemp(prefix="wp-query-"))
    where.mkdir(parents=True, exist_ok=True)
    history = where / "deliveries.sqlite3"
    table: list[str] = []
    try:
        build(args, history, table)
        if "queries" in parts:
            queries(args, history, table)
        if "ack" in parts:
            ack(args, history, table)
    finally:
        if args.keep is None:
            shutil.rmtree(where, ignore_errors=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"\nuptime at the end: {uptime.strip()}\n")
    print("| what | ours | peer: json_extract scan (same run) | peer / ours | target | |")
    print("|---|---|---|---|---|---|")
    for row in table:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
