"""A stand-in for the ``cloudflared`` program, put on PATH by the tests (standard library only).

It prints what cloudflared 2024.x prints on stderr for ``cloudflared tunnel --url URL`` (a quick
tunnel; format from cloudflared's quick_tunnel.go and its logs) or ``cloudflared tunnel run
--url URL NAME`` (a named tunnel), and forwards a port of its own on 127.0.0.1 (the "public
side") to URL's host and port, adding ``X-Forwarded-For`` to each connection's first request as
Cloudflare's edge does. Each start appends ``pid port host`` to ``$FAKE_CLOUDFLARED_DIR/starts``.

``$FAKE_CLOUDFLARED`` chooses the behaviour:

    quick        (default) as the real program
    flaky        the first start exits soon after giving its URL; later starts as ``quick``
    http-url     the box holds http://..., path-url a URL with a path, user-url one with a user
    endless      prints log lines without end and never a URL
    endless-up   gives its URL, then prints without end
    exit         says why and exits with status 1 at once
    silent       prints nothing and never exits
    stubborn     as ``quick`` but ignores SIGTERM (only SIGKILL stops it)
    group-deaf   as ``quick``, with a child in its process group that ignores SIGTERM
    hands-off    as ``quick``, then exits (status 0) while a child it started keeps its output
                 open (a wrapper script that backgrounds the real program)
    gone-quietly says why and exits (status 1) before any URL while a child keeps its output open
    long-line    prints 10 MiB on one line that never ends, then nothing, and never exits
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

MODE = os.environ.get("FAKE_CLOUDFLARED", "quick")
STATE = Path(os.environ.get("FAKE_CLOUDFLARED_DIR", "."))
DISCLAIMER = (
    "Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick "
    "way to experiment and try it out. However, be aware that these account-less Tunnels have no "
    "uptime guarantee, are subject to the Cloudflare Online Services Terms of Use "
    "(https://www.cloudflare.com/website-terms/), and Cloudflare reserves the right to "
    "investigate your use of Tunnels for violations of such terms. If you intend to use Tunnels "
    "in production you should use a pre-created named tunnel by following: "
    "https://developers.cloudflare.com/cloudflare-one/connections/connect-apps"
)


def log(message: str, level: str = "INF") -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    sys.stderr.write(f"{stamp} {level} {message}\n")
    sys.stderr.flush()


def box(lines: list[str], padding: int = 2) -> list[str]:
    width = max(len(line) for line in lines)
    border = "+" + "-" * (width + 2 * padding) + "+"
    rows = ["|" + " " * padding + line.ljust(width) + " " * padding + "|" for line in lines]
    return [border, *rows, border]


def pipe(src: socket.socket, dst: socket.socket, first_request: bool) -> None:
    try:
        pending = b""
        while True:
            data = src.recv(65536)
            if not data:
                break
            if first_request:
                pending += data
                end = pending.find(b"\r\n")
                if end < 0:
                    continue
                data = pending[: end + 2] + b"X-Forwarded-For: 203.0.113.7\r\n" + pending[end + 2 :]
                first_request = False
            dst.sendall(data)
    except OSError:  # a side hung up: the connection ends
        pass
    finally:
        for sock in (src, dst):
            with contextlib.suppress(OSError):  # the other side closed it first
                sock.shutdown(socket.SHUT_RDWR)


def forward(listener: socket.socket, target: tuple[str, int]) -> None:
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(target)
        except OSError:
            client.close()
            continue
        threading.Thread(target=pipe, args=(client, upstream, True), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client, False), daemon=True).start()


def starts_so_far() -> int:
    try:
        return len((STATE / "starts").read_text().splitlines())
    except FileNotFoundError:
        return 0


def main(argv: list[str]) -> int:
    if "--url" not in argv:
        log(
            "You did not specify any valid additional argument to the cloudflared tunnel command.",
            "ERR",
        )
        return 1
    target = urlsplit(argv[argv.index("--url") + 1])
    named = "run" in argv
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if MODE == "silent":
        while True:
            time.sleep(3600)
    if MODE == "long-line":
        sys.stderr.write("x" * (10 * 1024 * 1024))
        sys.stderr.flush()
        while True:
            time.sleep(3600)
    if MODE == "group-deaf" and os.fork() == 0:  # the child: same group, deaf to SIGTERM
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(3600)
    if MODE == "gone-quietly":
        log("failed to start: the real program runs in the background now", "ERR")
        if os.fork() == 0:  # the child: holds the output open
            while True:
                time.sleep(3600)
        return 1
    log("Starting tunnel tunnelID=6ff42ae2-765d-4adf-8112-31c55c1551ef" if named else DISCLAIMER)
    if MODE == "exit":
        log(
            'failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial '
            "tcp: lookup api.trycloudflare.com: no such host",
            "ERR",
        )
        return 1
    if MODE == "endless":
        while True:
            log("Retrying connection in up to 1s connIndex=0 event=0 ip=198.41.192.7", "WRN")
    if not named:
        log("Requesting new quick Tunnel on trycloudflare.com...")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    start = starts_so_far() + 1
    host = f"oklahoma-solo-younger-truck-{os.getpid()}.trycloudflare.com"
    url = {
        "http-url": f"http://{host}",
        "path-url": f"https://{host}/webhooks",
        "user-url": f"https://admin@{host}",
    }.get(MODE, f"https://{host}")
    with (STATE / "starts").open("a") as fh:
        fh.write(f"{os.getpid()} {port} {host}\n")
    threading.Thread(
        target=forward, args=(listener, (target.hostname, target.port or 80)), daemon=True
    ).start()
    if not named:
        for line in box(
            [
                "Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):",
                url,
            ]
        ):
            log(line)
    log("Version 2024.6.1 (Checksum 9d3a5ef1ad3e1b1b5e3e8f1a3d6b0d7e)")
    log(f"Settings: map[ha-connections:1 no-autoupdate:true protocol:quic url:{target.geturl()}]")
    log("Generated Connector ID: a6c7cb67-725e-4f57-a134-a7e58278c603")
    log("Initial protocol quic")
    log(
        "Registered tunnel connection connIndex=0 connection=bb527b3a-8a27-467b-9fca-84972898be5c "
        "event=0 ip=198.41.200.13 location=ams08 protocol=quic"
    )
    if MODE == "flaky" and start == 1:
        time.sleep(0.3)
        log('Connection terminated error="timeout: no recent network activity" connIndex=0', "ERR")
        return 1
    if MODE == "hands-off":
        time.sleep(0.5)  # its URL is read while it still runs
        if os.fork() == 0:  # the child: holds the output open
            while True:
                time.sleep(3600)
        log("the tunnel runs in the background now")
        os._exit(0)
    if MODE == "endless-up":
        while True:
            log(
                'Unsolicited response received on idle HTTP channel starting with "HTTP/1.1 400"',
                "WRN",
            )
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(1)
