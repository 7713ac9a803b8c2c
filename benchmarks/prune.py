"""Pruning beside listen: what ``events prune`` costs a running receiver's acknowledgements.

    cp -r /tmp/big-home /tmp/prune-home                       # it deletes: run it on a copy
    python benchmarks/prune.py --home /tmp/prune-home          # half of it, in 3 rounds
    python benchmarks/prune.py --home /tmp/prune-home --rounds 2 --seconds 10 --fraction 0.2

A ``walletpass-tui listen`` on ``--home`` (a history grown before, e.g. by ``scale.py --keep``)
takes a steady 200/s from an open-loop client (each request timed from its scheduled send, signed
as it goes: ``bodies.py``'s varied deliveries). Rounds alternate: ``--seconds`` of that stream
alone, then the same stream while ``events prune --older-than ...`` deletes the next slice of the
oldest history (``--fraction`` of what was stored at start, over ``--rounds`` rounds, so half the
history by default). Printed per round and over all rounds: ack p50/p99/max alone and while
pruning, their ratio, how many rows each prune deleted and how long it took, and the load average.
A receiver of this version does the deleting itself when ``events prune`` asks it: what its
steps were (rows a step, how long each held its writer) is read from its debug log and printed
under the round.
``--against DIR`` (a directory holding another version's ``walletpass_tui`` package, e.g.
``git archive main walletpass_tui | tar -x -C /tmp/old``; repeatable) has that version's prune take
every other slice, each after an alone round of its own, so versions are compared under the same
load. ``--timeline FILE`` writes every acknowledgement (wall time, ms, phase) for a closer look.

Figures, never assertions: the ratio pruning/alone is the figure, the two measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import hmac
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bodies import Bodies  # noqa: E402
from receiver import PATH, SECRET, pct  # noqa: E402
from scale import PYTHON, Listen  # noqa: E402

RATE = 200.0
CONNECTIONS = 64


class Signer:
    """One signed request at a time, made as it is sent (a stream of unknown length)."""

    def __init__(self, port: int, bodies: Bodies) -> None:
        self.port = port
        self.bodies = bodies
        self.key = base64.b64decode(SECRET.split("_", 1)[1])

    def request(self) -> bytes:
        msg_id, _topic, body = self.bodies.next()
        ts = str(int(time.time()))
        signed = f"{msg_id}.{ts}.".encode() + body
        sig = base64.b64encode(hmac.new(self.key, signed, hashlib.sha256).digest()).decode()
        return (
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Content-Type: application/json\r\nwebhook-id: {msg_id}\r\n"
            f"webhook-timestamp: {ts}\r\nwebhook-signature: v1,{sig}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body


async def paced_until(
    signer: Signer, done: Callable[[], bool], at_least_s: float = 0.0
) -> list[tuple[float, float]]:
    """Send at RATE/s (request k at start + k/RATE) until ``done()`` and ``at_least_s`` passed;
    returns (wall time sent, ms from its scheduled send to the full answer) for each."""
    pool: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for _ in range(CONNECTIONS):
        pool.put_nowait(await asyncio.open_connection("127.0.0.1", signer.port))
    found: list[tuple[float, float]] = []
    failures = 0

    async def one(data: bytes, scheduled: float, wall: float) -> None:
        nonlocal failures
        reader, writer = await pool.get()
        writer.write(data)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])  # type: ignore[index]
        await reader.readexactly(length)
        found.append((wall, (time.perf_counter() - scheduled) * 1000))
        if not head.startswith(b"HTTP/1.1 2"):
            failures += 1
        pool.put_nowait((reader, writer))

    tasks = []
    begin = time.perf_counter() + 0.05
    k = 0
    while True:
        scheduled = begin + k / RATE
        if scheduled - begin >= at_least_s and done():
            break
        data = signer.request()
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(data, scheduled, time.time())))
        k += 1
    await asyncio.gather(*tasks)
    while not pool.empty():
        _, writer = pool.get_nowait()
        writer.close()
    if failures:
        raise SystemExit(f"{failures} paced deliveries were not answered 2xx")
    return found


def cutoffs(db: Path, fraction: float, rounds: int) -> tuple[int, list[int]]:
    """(rows at start, the received time before which each round's prune deletes): equal
    slices of the oldest ``fraction`` of the history."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        total = int(conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
        found = []
        for r in range(1, rounds + 1):
            offset = int(total * fraction * r / rounds)
            row = conn.execute(
                "SELECT received_at_ms FROM attempts ORDER BY received_at_ms LIMIT 1 OFFSET ?",
                (offset,),
            ).fetchone()
            found.append(int(row[0]))
    return total, found


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def prune_round(
    listen: Listen, signer: Signer, cutoff_ms: int, seconds: float, tree: Path | None
) -> tuple[list[tuple[float, float]], list[tuple[float, float]], float, int]:
    """The stream alone for ``seconds``, then while a prune (of the version in ``tree``, or this
    one) deletes what came before the cutoff."""
    alone = asyncio.run(paced_until(signer, lambda: True, seconds))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETPASS_")}
    env["WALLETPASS_HOME"] = str(listen.home)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    argv = [PYTHON, "-m", "walletpass_tui", "events", "prune", "--yes"]
    argv += ["--older-than", iso(cutoff_ms)]
    started = time.perf_counter()
    # Started in the other version's tree: ``python -m`` puts the current directory first on
    # the path, which would otherwise be this checkout's package whatever PYTHONPATH says.
    cwd = str(tree) if tree is not None else None
    prune = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    during = asyncio.run(paced_until(signer, lambda: prune.poll() is not None))
    took = time.perf_counter() - started
    out, err = prune.communicate()
    if prune.returncode != 0:
        raise SystemExit(f"events prune failed: {err.decode()[-500:]}")
    deleted = int(out.decode().split()[1])
    return alone, during, took, deleted


_TOLD: dict[Path, int] = {}


def steps_told(log: Path) -> list[str]:
    """What the receiver's debug log said of the prunes it ran since the last look."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    seen, _TOLD[log] = _TOLD.get(log, 0), len(lines)
    return [line.split("prune ", 1)[1] for line in lines[seen:] if " prune " in line]


def figures(alone: list[float], during: list[float]) -> str:
    return (
        f"alone p50 {pct(alone, 50):5.1f} p99 {pct(alone, 99):6.1f} max {max(alone):6.1f} ms | "
        f"pruning p50 {pct(during, 50):5.1f} p99 {pct(during, 99):6.1f} "
        f"max {max(during):6.1f} ms | p99 ratio {pct(during, 99) / pct(alone, 99):.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="a grown history (it is pruned)")
    parser.add_argument("--rounds", type=int, default=3, help="alone/pruning rounds")
    parser.add_argument("--seconds", type=float, default=20.0, help="each round alone")
    parser.add_argument("--fraction", type=float, default=0.5, help="of the history, pruned")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of stream first")
    parser.add_argument(
        "--against", type=Path, action="append", default=[], help="another version's tree"
    )
    parser.add_argument("--timeline", type=Path, help="write every ack: wall time, ms, phase")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop listen on the way out
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores shared: read ratios)")
    receiver_log = Path(tempfile.mkdtemp(prefix="prune-bench-")) / "listen.log"
    listen = Listen(args.home, log_file=receiver_log)
    signer = Signer(listen.port, Bodies(seed=62))
    versions: list[tuple[str, Path | None]] = [("this", None)]
    versions += [(str(tree), tree.resolve()) for tree in args.against]
    total, cuts = cutoffs(listen.db, args.fraction, args.rounds * len(versions))
    # Not counted: the receiver's first seconds (its followers catching up with the history).
    asyncio.run(paced_until(signer, lambda: True, args.warmup))
    print(f"history {listen.db}: {total:,} stored; listen at {RATE:.0f}/s\n")
    found: dict[str, tuple[list[float], list[float], list[int], list[float]]] = {
        name: ([], [], [], []) for name, _ in versions
    }
    timeline: list[tuple[float, float, str]] = []
    try:
        for k, cutoff in enumerate(cuts):
            r, (name, tree) = k // len(versions) + 1, versions[k % len(versions)]
            alone, during, took, deleted = prune_round(listen, signer, cutoff, args.seconds, tree)
            all_alone, all_during, pruned, took_s = found[name]
            a = [ms for _, ms in alone]
            d = [ms for _, ms in during]
            all_alone += a
            all_during += d
            pruned.append(deleted)
            took_s.append(took)
            timeline += [(t, ms, f"alone {name} {r}") for t, ms in alone]
            timeline += [(t, ms, f"pruning {name} {r}") for t, ms in during]
            print(
                f"round {r} ({name}): pruned {deleted:,} in {took:.1f} s ({deleted / took:,.0f}/s)"
            )
            print(f"  {figures(a, d)}")
            for line in steps_told(receiver_log):
                print(f"  receiver: {line}")
    finally:
        listen.stop()
    for name, (all_alone, all_during, pruned, took_s) in found.items():
        print(f"\nall rounds ({name}): pruned {sum(pruned):,} of {total:,} in {sum(took_s):.1f} s")
        print(f"  {figures(all_alone, all_during)}")
        print(f"  acks alone {len(all_alone):,}, pruning {len(all_during):,}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if args.timeline:
        args.timeline.write_text("".join(f"{t:.3f}\t{ms:.2f}\t{p}\n" for t, ms, p in timeline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
