"""Live-path benchmark: what the dashboard costs next to the headless receiver, in one run.

    python benchmarks/live.py                     # 100,000 stored, 20 s per rate (~4 minutes)
    python benchmarks/live.py --stored 20000 --seconds 8 --paint-runs 2      # a quicker look

Every figure is a ratio (or a bound) measured in the same run on the same machine:

* CPU at a steady 10 and 100 deliveries/s: the dashboard (``walletpass-tui``, in a real terminal:
  a tmux pane of 120x36) against ``walletpass-tui listen`` (stdout to /dev/null), both over the same
  stored history; CPU is utime + stime from ``/proc/PID/stat`` over the steady window, after a
  warm-up. Targets: <= 4x at 10/s, <= 2x at 100/s.
* First paint over the stored history: from launching the process to the first log row on the
  tmux screen (``tmux capture-pane`` polled every 10 ms), against a one-``Static`` Textual app
  launched the same way (alternated, medians). Target: <= 2x.
* Acknowledgements while 1 MiB deliveries are shown: 20 small deliveries/s, and every 2 s one
  1 MiB delivery the log follows (a 160x48 pane, so the detail pane shows it). Reported: the p99
  of every 2xx's latency, measured by the sender from each request's scheduled send time (open
  loop), and for each 1 MiB delivery the time from its 2xx to its body's first line on screen.
  Targets: ack p99 < 100 ms, detail drawn < 300 ms.

Senders run in their own process (``_send``); targets stay out of the unit tests. Each
process under test gets the same signing secret through its endpoint registry.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dashboard import ENDPOINT, SECRET, populate  # noqa: E402
from startup import compile_bytecode  # noqa: E402

PYTHON = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")
BIG = 1024 * 1024 - 4096  # a body just under the receiver's 1 MiB limit
MINIMAL_APP = """
from textual.app import App, ComposeResult
from textual.widgets import Static
class Minimal(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("minimal app ready")
Minimal().run()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise TimeoutError(f"nothing listens on {port}")


# -- processes under test ------------------------------------------------------------------------


class Tmux:
    """A command in a detached tmux pane of a fixed size; its pid is the command's own."""

    def __init__(self, command: list[str], *, width: int, height: int, env: dict[str, str]) -> None:
        self.name = f"wpbench{os.getpid()}{time.monotonic_ns() % 100000}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        line = f"exec env {exports} {shlex.join(command)}"
        out = subprocess.run(
            [
                *("tmux", "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", self.name),
                *("-x", str(width), "-y", str(height), line),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        self.pid = int(out.stdout.strip())

    def screen(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return out.stdout

    def wait_for(self, text: str, timeout: float = 60.0, interval: float = 0.01) -> float:
        """Seconds until ``text`` is on the pane's screen."""
        started = time.perf_counter()
        while text not in self.screen():
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"{text!r} never appeared")
            time.sleep(interval)
        return time.perf_counter() - started

    def stop(self) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, "C-q"], capture_output=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{self.pid}").exists():
            time.sleep(0.05)
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def dashboard(home: Path, port: int, *, width: int = 120, height: int = 36) -> Tmux:
    command = [PYTHON, "-m", "walletpass_tui", "--home", str(home), "--port", str(port)]
    return Tmux(command, width=width, height=height, env={"TERM": "xterm-256color"})


def listen(home: Path, port: int) -> subprocess.Popen[bytes]:
    command = [PYTHON, "-m", "walletpass_tui", "--home", str(home), "listen", "--port", str(port)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def send(url: str, rate: float, seconds: float, *, big_every: float = 0.0) -> dict[str, Any]:
    out = subprocess.run(
        [PYTHON, __file__, "_send", url, repr(rate), repr(seconds), repr(big_every)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the sender (its own process) ------------------------------------------------------------------


async def sender(url: str, rate: float, seconds: float, big_every: float) -> dict[str, Any]:
    """Open loop: request k is due at start + k/rate; latency counts from that due time. Every
    request is built and signed before the clock starts (a 1 MiB body takes a while to sign)."""
    from datetime import UTC, datetime

    import httpx

    from walletpass_tui.webhooks.verify import sign

    run = f"{os.getpid() % 100:02d}"  # markers differ from an earlier run's on the same history
    requests: list[tuple[float, bool, str, bytes, dict[str, str]]] = []
    next_big = big_every
    for n in range(int(rate * seconds)):
        offset = n / rate
        large = bool(big_every) and offset >= next_big
        if large:
            next_big += big_every
        data: dict[str, Any] = {"passId": f"pass_live{n}"}
        marker = f"BIGMARK{run}{n:05d}"
        if large:  # the marker first: it is the pretty body's second line on screen
            data = {"marker": marker, **data, "blob": "x" * (BIG - 200)}
        topic = "pass.activated" if large else "pass.deactivated"
        body = json.dumps({"type": topic, "data": data}).encode()
        msg = f"msg_{'big' if large else 'live'}{run}{n:06d}"
        headers = sign(SECRET, msg, body, datetime.now(UTC))
        headers["content-type"] = "application/json"
        requests.append((offset, large, marker, body, headers))

    small: list[float] = []
    big: list[dict[str, float | str]] = []
    failed = 0
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:

        async def one(due: float, large: bool, marker: str, body: bytes, headers: Any) -> None:
            nonlocal failed
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                response = await http.post(url, content=body, headers=headers)
            except httpx.HTTPError:
                failed += 1
                return
            answered = time.perf_counter()
            if not 200 <= response.status_code < 300:
                failed += 1
                return
            if large:
                at = time.time() - (time.perf_counter() - answered)
                big.append({"marker": marker, "ack_ms": (answered - due) * 1000, "answered_at": at})
            else:
                small.append((answered - due) * 1000)

        started = time.perf_counter() + 0.2
        await asyncio.gather(
            *(one(started + offset, *rest) for offset, *rest in requests)  # type: ignore[arg-type]
        )
    return {"small_ms": small, "big": big, "failed": failed}


# -- phases --------------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


def cpu_phase(home: Path, rate: float, seconds: float, warmup: float) -> dict[str, float]:
    """CPU share (of one core) of the dashboard and of listen at ``rate``; alternated order."""
    result: dict[str, float] = {}
    for kind in ("listen", "dashboard"):
        port = free_port()
        proc: Any = dashboard(home, port) if kind == "dashboard" else listen(home, port)
        pid = proc.pid
        try:
            wait_port(port)
            if kind == "dashboard":
                proc.wait_for("Events", timeout=60)
            url = f"http://127.0.0.1:{port}/webhooks"
            send(url, rate, warmup)
            before, t0 = cpu_seconds(pid), time.perf_counter()
            answer = send(url, rate, seconds)
            used, wall = cpu_seconds(pid) - before, time.perf_counter() - t0
            result[kind] = used / wall * 100
            result[f"{kind}_failed"] = answer["failed"]
        finally:
            if kind == "dashboard":
                proc.stop()
            else:
                proc.terminate()
                proc.wait(timeout=20)
    return result


def first_paint_phase(home: Path, runs: int) -> dict[str, float]:
    """Launch to first log row (dashboard) vs launch to its text (one-Static app)."""
    script = Path(tempfile.mkdtemp()) / "minimal.py"
    script.write_text(MINIMAL_APP)
    ours: list[float] = []
    minimal: list[float] = []
    for _ in range(runs):
        t = Tmux([PYTHON, str(script)], width=120, height=36, env={"TERM": "xterm-256color"})
        try:
            minimal.append(t.wait_for("minimal app ready"))
        finally:
            t.stop()
        t = dashboard(home, free_port())
        try:
            ours.append(t.wait_for("msg_"))  # a stored delivery's webhook-id in the log
        finally:
            t.stop()
    shutil.rmtree(script.parent, ignore_errors=True)
    return {"dashboard_s": statistics.median(ours), "minimal_s": statistics.median(minimal)}


def big_phase(home: Path, seconds: float) -> dict[str, Any]:
    """20/s small deliveries (pass.deactivated) and a 1 MiB one (pass.activated) every 2 s; the
    log filtered on topic:activated follows the big ones, the detail pane on screen shows each;
    acks from the sender, "drawn" when the big body's marker is on the tmux screen."""
    port = free_port()
    term = dashboard(home, port, width=160, height=48)
    try:
        wait_port(port)
        term.wait_for("Events", timeout=60)
        subprocess.run(["tmux", "send-keys", "-t", term.name, "/"], check=True)
        term.wait_for("Enter: done", timeout=30)  # the filter bar has the focus: type into it
        subprocess.run(
            ["tmux", "send-keys", "-t", term.name, "topic:activated", "Enter"], check=True
        )
        term.wait_for("matching", timeout=30)
        url = f"http://127.0.0.1:{port}/webhooks"
        proc = subprocess.Popen(
            [PYTHON, __file__, "_send", url, "20", repr(seconds), "2.0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        seen: dict[str, float] = {}
        while proc.poll() is None:
            screen = term.screen()
            now = time.time()
            for word in screen.split():
                if "BIGMARK" in word:
                    marker = word[word.index("BIGMARK") : word.index("BIGMARK") + 14]
                    seen.setdefault(marker, now)
            time.sleep(0.01)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            for word in term.screen().split():
                if "BIGMARK" in word:
                    marker = word[word.index("BIGMARK") : word.index("BIGMARK") + 14]
                    seen.setdefault(marker, time.time())
            time.sleep(0.01)
        out = proc.communicate()[0]
        answer = json.loads(out.strip().splitlines()[-1])
    finally:
        term.stop()
    drawn = [
        (seen[b["marker"]] - b["answered_at"]) * 1000 for b in answer["big"] if b["marker"] in seen
    ]
    return {
        "small_ack_p50_ms": pct(answer["small_ms"], 0.5),
        "small_ack_p99_ms": pct(answer["small_ms"], 0.99),
        "all_ack_p99_ms": pct(answer["small_ms"] + [b["ack_ms"] for b in answer["big"]], 0.99),
        "big_ack_max_ms": max((b["ack_ms"] for b in answer["big"]), default=float("nan")),
        "big_sent": len(answer["big"]),
        "big_drawn": len(drawn),
        "drawn_ms": drawn,
        "failed": answer["failed"],
    }


def listen_acks(home: Path, seconds: float) -> dict[str, float]:
    """The same traffic against headless ``listen``: what the receiver costs without a screen."""
    port = free_port()
    proc = listen(home, port)
    try:
        wait_port(port)
        answer = send(f"http://127.0.0.1:{port}/webhooks", 20, seconds, big_every=2.0)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return {
        "small_ack_p99_ms": pct(answer["small_ms"], 0.99),
        "big_ack_max_ms": max((b["ack_ms"] for b in answer["big"]), default=float("nan")),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, default=100_000, help="stored history")
    parser.add_argument("--seconds", type=float, default=20, help="steady window per rate")
    parser.add_argument("--warmup", type=float, default=3, help="seconds before measuring")
    parser.add_argument("--paint-runs", type=int, default=3, help="first-paint launches each")
    parser.add_argument(
        "--only",
        choices=("paint", "cpu", "big"),
        action="append",
        help="run only these phases (repeatable; default: all)",
    )
    sub = parser.add_subparsers(dest="step")
    snd = sub.add_parser("_send")
    snd.add_argument("url")
    snd.add_argument("rate", type=float)
    snd.add_argument("seconds", type=float)
    snd.add_argument("big_every", type=float)
    args = parser.parse_args()
    if args.step == "_send":
        print(json.dumps(asyncio.run(sender(args.url, args.rate, args.seconds, args.big_every))))
        return 0
    if shutil.which("tmux") is None:
        print("This benchmark needs tmux (apt-get install tmux).", file=sys.stderr)
        return 1
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores; load {os.getloadavg()}")
    print(compile_bytecode())
    with tempfile.TemporaryDirectory(prefix="walletpass-live-") as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        asyncio.run(populate(home, args.stored))
        print(f"{args.stored:,} deliveries stored in {time.perf_counter() - started:.0f} s")
        print(f"endpoint {ENDPOINT} in the registry; every process verifies with its secret")

        phases = set(args.only or ("paint", "cpu", "big"))
        if "paint" in phases:
            paint = first_paint_phase(home, args.paint_runs)
            ratio = paint["dashboard_s"] / paint["minimal_s"]
            print(
                f"first paint over {args.stored:,}: dashboard {paint['dashboard_s'] * 1000:.0f} "
                f"ms, one-Static app {paint['minimal_s'] * 1000:.0f} ms: {ratio:.2f}x "
                "(target <= 2x)"
            )
        for rate, target in ((10, 4.0), (100, 2.0)) if "cpu" in phases else ():
            cpu = cpu_phase(home, rate, args.seconds, args.warmup)
            ratio = cpu["dashboard"] / max(cpu["listen"], 0.1)
            print(
                f"CPU at {rate}/s: dashboard {cpu['dashboard']:.1f}% of a core, listen "
                f"{cpu['listen']:.1f}%: {ratio:.2f}x (target <= {target:g}x); failed answers "
                f"{cpu['dashboard_failed']:.0f}/{cpu['listen_failed']:.0f}"
            )
        if "big" not in phases:
            return 0
        alone = listen_acks(home, args.seconds)
        big = big_phase(home, args.seconds)
        drawn = big["drawn_ms"]
        drawn_text = (
            f"p50 {statistics.median(drawn):.0f} ms, max {max(drawn):.0f} ms "
            f"[each: {', '.join(f'{ms:.0f}' for ms in drawn)}]"
            if drawn
            else "never seen"
        )
        print(
            f"1 MiB deliveries shown while 20/s arrive: ack p99 {big['small_ack_p99_ms']:.1f} ms "
            f"(p50 {big['small_ack_p50_ms']:.1f}; with the 1 MiB posts {big['all_ack_p99_ms']:.1f};"
            f" target < 100 ms); detail drawn after the 2xx: {drawn_text} "
            f"({big['big_drawn']} of {big['big_sent']} seen; target < 300 ms); "
            f"failed {big['failed']}"
        )
        print(
            f"  the same traffic to headless listen: ack p99 {alone['small_ack_p99_ms']:.1f} ms, "
            f"slowest 1 MiB ack {alone['big_ack_max_ms']:.0f} ms (dashboard: "
            f"{big['big_ack_max_ms']:.0f} ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
