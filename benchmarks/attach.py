"""Attached dashboards: what they cost the receiver, and how soon they show a delivery.

    python benchmarks/attach.py                          # 5 rounds of 20 s of each kind, ~12 minutes
    python benchmarks/attach.py --rounds 3 --seconds 8 --draw-seconds 10      # a quicker look

One ``walletpass-tui listen`` process, in one run:

* Cost to the receiver: its acknowledgement p99 at a steady 200/s (``receiver.py``'s open-loop
  client: each request timed from its scheduled send time, on keep-alive connections) with two
  dashboards attached (``walletpass-tui attach`` in tmux panes of 120x36, each a terminal
  session of its own, started before the round and quit after it; each dashboard is drawn
  beside the receiver, ``runtime/draw_beside.py``, and measured there) against the same receiver with none, in alternating rounds
  (the kinds take turns to go first). Reported: each round's p99 and the ratio of the
  medians. Target: <= 1.25x. Two peers run in the same rotation (``--no-peers``: not): two
  *listeners*, processes that take the control channel's messages and read each new row from
  the history as a dashboard does, but draw nothing (what looking asks of the receiver), and two
  *burners*, processes that give way as a dashboard drawn in its own terminal's process does
  (``cli/give_way.py``: what ``attach`` falls back to), each in a session of its own, and do nothing but burn as much CPU as the dashboards measured, in 12 ms
  bursts (what any program using that much of the machine costs the receiver's p99 on it).
  A third kind, *usual*, attaches the two dashboards with ``--normal-priority``: each drawn in
  its pane's own process at the usual priority (what giving way saves).
* Cost of looking: each attached dashboard's CPU (user + system time from ``/proc``, as a share
  of one core) over the attached rounds at 200/s, and the receiver's own in both kinds of round.
  Target: <= 5% of a core a dashboard.
* Time to the first screen: from starting ``attach`` in a new tmux pane to its header on
  screen, drawn beside the receiver and with ``--normal-priority`` (drawn in its own process),
  alternating (``--starts`` each way).
* Time to the screen: deliveries at a steady 100/s from a sender process (each 2xx's wall-clock
  time recorded), one attached dashboard in another process (headless, the real app over
  ``AttachedRuntime``) recording when each row is first drawn (``LogLines.paint_observer``).
  Reported: p50/p95/max of drawn - 2xx, and how many were drawn (rows that scroll past between
  two paints are never drawn). Target: p95 <= 0.5 s. Also drawn - stored (the receiver's own
  receipt time, so a sender that lags on a loaded machine does not hide any of the delay).

The machine's load (``uptime``) is printed before and after: a shared, busy machine moves these
figures, so both halves of each comparison run in the same minutes. Figures, never assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import receiver  # noqa: E402

PYTHON = sys.executable


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class Panes:
    """Dashboards in tmux panes on a tmux server of this run's own (never another's)."""

    def __init__(self) -> None:
        self.socket = f"wp-attach-bench-{os.getpid()}"

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True
        ).stdout

    def start(self, name: str, home: Path, xdg: Path, *flags: str) -> None:
        env = f"WALLETPASS_HOME={shlex.quote(str(home))} XDG_CONFIG_HOME={shlex.quote(str(xdg))}"
        command = f"exec env -u COLUMNS -u LINES TERM=xterm-256color {env} {PYTHON} -m walletpass_tui attach {' '.join(flags)}"
        self.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "36", command)

    def wait_for(self, name: str, text: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.tmux("capture-pane", "-p", "-t", name):
            if time.monotonic() > deadline:
                raise SystemExit(f"{name}: {text!r} never appeared")
            time.sleep(0.1)

    def pid(self, name: str) -> int:
        """The process drawing the dashboard: the one the receiver drew beside it on this
        pane's terminal, else the pane's own (it runs ``attach`` with exec)."""
        pane = int(self.tmux("list-panes", "-t", name, "-F", "#{pane_pid}").split()[0])
        tty = self.tmux("display-message", "-p", "-t", name, "#{pane_tty}").strip()
        for proc in Path("/proc").iterdir():
            try:
                if (
                    b"--drawn-for" in (proc / "cmdline").read_bytes()
                    and os.readlink(proc / "fd" / "0") == tty
                ):
                    return int(proc.name)
            except (OSError, ValueError):  # not ours, or gone
                continue
        return pane

    def quit(self, names: list[str]) -> None:
        for name in names:
            self.tmux("send-keys", "-t", name, "C-q")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(
            name in self.tmux("list-sessions", "-F", "#{session_name}") for name in names
        ):
            time.sleep(0.1)
        for name in names:
            self.tmux("kill-session", "-t", name)

    def close(self) -> None:
        self.tmux("kill-server")


# -- cost to the receiver ---------------------------------------------------------------------------


def steady_p99(port: int, rate: float, seconds: float, tag: str) -> float:
    rows = receiver.sign_requests(int(rate * seconds), f"att{tag}{time.monotonic_ns()}")
    data = [receiver.raw_request(port, row) for row in rows]
    return receiver.pct(asyncio.run(receiver.paced(port, data, rate, 64)), 99)


PEERS = ("listeners", "burners")


def cost_phase(
    workdir: Path, rounds: int, seconds: float, settle: float, peers: bool = True
) -> dict[str, Any]:
    """Rounds of each kind in a rotating order: ``alone``; ``attached`` (two dashboards);
    ``usual`` (two dashboards with ``--normal-priority``); and, with ``peers``, ``listeners``
    (two processes that take the control channel's messages and read every new row, as a
    dashboard's data path does, but draw nothing: what looking asks of the receiver) and
    ``burners`` (two processes that give way as a dashboard does, each in a session of its own,
    and only burn CPU in 12 ms bursts, as much as the dashboards measured so far: what any
    process using that much of the machine costs the receiver)."""
    server = receiver.start("ours", workdir)
    home = workdir / f"ours-{server.port}"
    xdg = workdir / "xdg"
    panes = Panes()
    kinds = ["alone", "attached", *(PEERS if peers else ()), "usual"]
    p99s: dict[str, list[float]] = {kind: [] for kind in kinds}
    viewers: list[float] = []  # each dashboard's share of a core, each attached round
    others: dict[str, list[float]] = {kind: [] for kind in PEERS}
    receiver_cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
    try:
        steady_p99(server.port, 200, 3, "warm")  # warm the receiver and the history
        for rnd in range(rounds):
            for kind in kinds[rnd % len(kinds) :] + kinds[: rnd % len(kinds)]:
                names: list[str] = []
                procs: list[subprocess.Popen[str]] = []
                if kind in ("attached", "usual"):
                    names = [f"view{rnd}a", f"view{rnd}b"]
                    flags = ("--normal-priority",) if kind == "usual" else ()
                    for name in names:
                        panes.start(name, home, xdg, *flags)
                    for name in names:
                        panes.wait_for(name, "attached to listen")
                    time.sleep(settle)  # their first paint and history reads are over
                elif kind in PEERS:
                    share = statistics.median(viewers) if viewers else 5.0
                    arg = str(home) if kind == "listeners" else repr(share)
                    procs = [
                        subprocess.Popen(
                            [PYTHON, __file__, f"_{kind[:-1]}", arg, str(server.proc.pid)],
                            stdout=subprocess.PIPE,
                            text=True,
                            start_new_session=True,  # as a dashboard in a terminal of its own
                        )
                        for _ in range(2)
                    ]
                    for proc in procs:
                        assert proc.stdout is not None
                        proc.stdout.readline()  # ready
                    time.sleep(settle)
                pids = [panes.pid(name) for name in names] + [proc.pid for proc in procs]
                before = [cpu_seconds(pid) for pid in [server.proc.pid, *pids]]
                started = time.monotonic()
                p99 = steady_p99(server.port, 200, seconds, f"{rnd}{kind}")
                elapsed = time.monotonic() - started
                after = [cpu_seconds(pid) for pid in [server.proc.pid, *pids]]
                shares = [(b - a) / elapsed * 100 for a, b in zip(before, after, strict=True)]
                receiver_cpu[kind].append(shares[0])
                (viewers if kind == "attached" else others.get(kind, [])).extend(shares[1:])
                p99s[kind].append(p99)
                if names:
                    panes.quit(names)
                for proc in procs:
                    proc.kill()
                    proc.wait()
                views = f"  each {', '.join(f'{v:.1f}%' for v in shares[1:])}" if pids else ""
                print(
                    f"  round {rnd + 1} {kind:9s} p99 {p99:7.2f} ms  listen {shares[0]:.1f}% of a "
                    f"core{views}",
                    flush=True,
                )
    finally:
        panes.close()
        server.stop()
    return {"p99": p99s, "viewers": viewers, "others": others, "receiver": receiver_cpu}


def listener(home: Path) -> None:
    """A dashboard's data path without the drawing: the control channel's messages taken as they
    come, and every new row read from the history (read-only, as the dashboard reads it) at most
    every 100 ms."""
    import select
    import socket
    import sqlite3

    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(home / "run" / "control.sock"))
    db = sqlite3.connect(f"file:{home / 'deliveries.sqlite3'}?mode=ro", uri=True)
    upto = db.execute("SELECT COALESCE(MAX(id), 0) FROM attempts").fetchone()[0]
    print("ready", flush=True)
    while True:
        if select.select([sock], [], [], 0.1)[0] and not sock.recv(65536):
            return
        rows = db.execute(
            "SELECT * FROM attempts WHERE id > ? ORDER BY id LIMIT 500", (upto,)
        ).fetchall()
        if rows:
            upto = rows[-1][0]


def burner(share: float) -> None:
    """``share`` percent of a core, burnt in 12 ms bursts, giving way as a dashboard does (in a
    session of its own, as a dashboard in its own terminal is)."""
    from walletpass_tui.cli.give_way import giving_way

    with giving_way(int(sys.argv[3])):
        burn(share)


def burn(share: float) -> None:
    burst = 0.012
    period = burst / max(share / 100, 0.001)
    print("ready", flush=True)
    while True:
        end = time.perf_counter() + burst
        while time.perf_counter() < end:
            pass
        time.sleep(period - burst)


# -- time to the screen -------------------------------------------------------------------------------


async def viewer(home: Path, seconds: float, out: Path, done: Path) -> None:
    """One attached dashboard, headless: when each webhook-id's row was first drawn, and when the
    receiver stored it (its own clock). It stays until the sender is done (``done`` written)."""
    from walletpass_tui.config import Settings
    from walletpass_tui.runtime import instance
    from walletpass_tui.runtime.attached import AttachedRuntime
    from walletpass_tui.ui.app import build_app
    from walletpass_tui.ui.screens.main import MainScreen
    from walletpass_tui.ui.widgets.log_lines import LogLines

    drawn: dict[str, float] = {}
    received: dict[str, float] = {}

    def painted(row: Any) -> None:
        if row.webhook_id and row.webhook_id not in drawn:
            drawn[row.webhook_id] = time.time()
            received[row.webhook_id] = row.received_at_ms / 1000

    LogLines.paint_observer = painted
    found = instance.find(home)
    assert isinstance(found, instance.Running) and found.record is not None
    async with AttachedRuntime(Settings(home=home), found.record) as runtime:
        app = build_app(runtime)
        async with app.run_test(size=(120, 36)):
            while not (isinstance(app.screen, MainScreen) and runtime.connected):  # noqa: ASYNC110 - two conditions of other objects, polled
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)
            print("ready", flush=True)
            deadline = time.monotonic() + seconds + 120
            while not await asyncio.to_thread(done.exists) and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            await asyncio.sleep(2.0)  # the last rows' reads and paint
    await asyncio.to_thread(out.write_text, json.dumps({"drawn": drawn, "received": received}))


async def sender(url: str, rate: float, seconds: float, out: Path) -> None:
    """Open loop at ``rate``: every request signed first; each 2xx's wall-clock time recorded."""
    import httpx

    rows = receiver.sign_requests(int(rate * seconds), f"draw{os.getpid()}")
    answered: dict[str, float] = {}
    failed = 0
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:

        async def one(due: float, row: tuple[str, str, str, str]) -> None:
            nonlocal failed
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            msg_id, ts, sig, body = row
            headers = {
                "webhook-id": msg_id,
                "webhook-timestamp": ts,
                "webhook-signature": sig,
                "content-type": "application/json",
            }
            try:
                answer = await http.post(url, content=body, headers=headers)
            except httpx.HTTPError:
                failed += 1
                return
            if 200 <= answer.status_code < 300:
                answered[msg_id] = time.time()
            else:
                failed += 1

        start = time.perf_counter() + 0.2
        await asyncio.gather(*(one(start + k / rate, row) for k, row in enumerate(rows)))
    await asyncio.to_thread(out.write_text, json.dumps({"answered": answered, "failed": failed}))


def draw_phase(workdir: Path, rate: float, seconds: float) -> dict[str, Any]:
    server = receiver.start("ours", workdir)
    home = workdir / f"ours-{server.port}"
    drawn_file, sent_file = workdir / "drawn.json", workdir / "sent.json"
    env = {**os.environ, "XDG_CONFIG_HOME": str(workdir / "xdg")}
    view = subprocess.Popen(
        [PYTHON, __file__, "_viewer", str(home), repr(seconds), str(drawn_file), str(sent_file)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert view.stdout is not None
        if view.stdout.readline().strip() != "ready":
            raise SystemExit("the attached dashboard did not start")
        url = f"http://127.0.0.1:{server.port}{receiver.PATH}"
        subprocess.run(
            [PYTHON, __file__, "_send", url, repr(rate), repr(seconds), str(sent_file)],
            check=True,
        )
        view.wait(timeout=seconds + 180)
    finally:
        if view.poll() is None:
            view.kill()
        server.stop()
    seen = json.loads(drawn_file.read_text())
    drawn, received = seen["drawn"], seen["received"]
    sent = json.loads(sent_file.read_text())
    delays = [(drawn[msg] - at) * 1000 for msg, at in sent["answered"].items() if msg in drawn]
    stored = [(drawn[msg] - received[msg]) * 1000 for msg in drawn]
    return {
        "delays_ms": delays,
        "stored_ms": stored,
        "sent": len(sent["answered"]),
        "failed": sent["failed"],
    }


# -- time to the first screen ---------------------------------------------------------------------


def start_phase(workdir: Path, runs: int) -> dict[str, list[float]]:
    """Seconds from starting ``attach`` in a new tmux pane to its header on screen, drawn beside
    the receiver and (``--normal-priority``) in the pane's own process, in alternating order."""
    server = receiver.start("ours", workdir)
    home = workdir / f"ours-{server.port}"
    panes = Panes()
    took: dict[str, list[float]] = {"beside": [], "here": []}
    try:
        for run in range(runs):
            for kind in ("beside", "here") if run % 2 == 0 else ("here", "beside"):
                name = f"start{run}{kind}"
                started = time.monotonic()
                flags = ("--normal-priority",) if kind == "here" else ()
                panes.start(name, home, workdir / "xdg", *flags)
                while "attached to listen" not in panes.tmux("capture-pane", "-p", "-t", name):
                    if time.monotonic() - started > 60:
                        raise SystemExit(f"{name}: the dashboard never appeared")
                    time.sleep(0.01)
                took[kind].append(time.monotonic() - started)
                panes.quit([name])
    finally:
        panes.close()
        server.stop()
    return took


# -- the report ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each kind (cost)")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per round at 200/s")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after attaching")
    parser.add_argument("--draw-seconds", type=float, default=30.0, help="seconds at 100/s")
    parser.add_argument("--only", choices=("cost", "draw", "start"), help="one part only")
    parser.add_argument("--starts", type=int, default=6, help="attaches timed each way (start)")
    parser.add_argument(
        "--no-peers", action="store_true", help="leave out the listener and burner rounds"
    )
    args = parser.parse_args()
    if shutil.which("tmux") is None and args.only != "draw":  # cost and start use it
        raise SystemExit("tmux is needed for the attached dashboards: apt-get install -y tmux")
    print(f"load before: {uptime()}", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="wp-attach-bench-"))
    try:
        if args.only in (None, "cost"):
            print(f"listen ack p99 at 200/s, {args.rounds} rounds of {args.seconds:g} s each way:")
            cost = cost_phase(workdir, args.rounds, args.seconds, args.settle, not args.no_peers)
            alone = statistics.median(cost["p99"]["alone"])
            labels = {
                "attached": "two dashboards attached (drawn beside it)",
                "listeners": "two listeners (a dashboard's data path, no drawing)",
                "burners": "two CPU burners in sessions of their own, giving way (as much CPU as the dashboards)",
                "usual": "two dashboards attached with --normal-priority",
            }
            for kind, label in labels.items():
                if not cost["p99"].get(kind):
                    continue
                p99 = statistics.median(cost["p99"][kind])
                ratio = p99 / alone
                target = (
                    f" <= 1.25x | {'met' if ratio <= 1.25 else 'NOT MET'} |"
                    if kind == "attached"
                    else " peer |"
                )
                print(
                    f"| `listen` ack p99 at 200/s, {label} | {p99:.2f} ms | "
                    f"alone {alone:.2f} ms | {ratio:.2f}x |{target}"
                )
            view = statistics.median(cost["viewers"])
            mine = {k: statistics.median(v) for k, v in cost["receiver"].items()}
            print(
                f"| an attached dashboard's CPU at 200/s | {view:.1f}% of a core (median of "
                f"{len(cost['viewers'])}; max {max(cost['viewers']):.1f}%) | `listen` "
                f"{mine['alone']:.1f}% alone, {mine['attached']:.1f}% with two | <= 5% | "
                f"{'met' if view <= 5 else 'NOT MET'} |"
            )
        if args.only in (None, "start"):
            took = start_phase(workdir, args.starts)
            beside, here = (statistics.median(took[k]) * 1000 for k in ("beside", "here"))
            print(
                f"| `attach` started to its header on screen, drawn beside the receiver | "
                f"{beside:.0f} ms (median of {args.starts}) | drawn in its own process "
                f"(--normal-priority) {here:.0f} ms | {beside / here:.2f}x |"
            )
        if args.only in (None, "draw"):
            draw = draw_phase(workdir, 100, args.draw_seconds)
            delays = sorted(draw["delays_ms"])
            if delays:
                p50, p95 = receiver.pct(delays, 50), receiver.pct(delays, 95)
                print(
                    f"| 2xx to the row on an attached dashboard's screen at 100/s | p50 {p50:.0f} ms, "
                    f"p95 {p95:.0f} ms, max {delays[-1]:.0f} ms ({len(delays)} of {draw['sent']} "
                    f"drawn, {draw['failed']} not 2xx) | <= 500 ms p95 | "
                    f"{'met' if p95 <= 500 else 'NOT MET'} |"
                )
                stored = sorted(draw["stored_ms"])
                print(
                    f"| receipt (the receiver's clock) to the row on screen at 100/s | p50 "
                    f"{receiver.pct(stored, 50):.0f} ms, p95 {receiver.pct(stored, 95):.0f} ms, "
                    f"max {stored[-1]:.0f} ms |"
                )
            else:
                print(f"no row was drawn ({draw['sent']} sent)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"load after:  {uptime()}", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_viewer":
        asyncio.run(
            viewer(Path(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5]))
        )
    elif len(sys.argv) > 1 and sys.argv[1] == "_listener":
        listener(Path(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "_burner":
        burner(float(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "_send":
        asyncio.run(sender(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), Path(sys.argv[5])))
    else:
        sys.exit(main())
