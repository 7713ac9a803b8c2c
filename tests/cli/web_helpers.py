"""A real ``walletpass-tui web`` process over a real ``listen`` on the test's home: its URL, the
attach processes it runs, and raw requests to it."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from process_helpers import DEADLINE_S, Proc

URL = re.compile(r"http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]+)/")


class Web:
    """``walletpass-tui web --port 0`` (and ``extra`` flags) once it printed its URL."""

    def __init__(self, *extra: str) -> None:
        self.proc = Proc("web", "--port", "0", *extra)
        line = self.proc.out.until(lambda text: URL.search(text) is not None)
        found = URL.search(line)
        assert found is not None
        self.port = int(found.group(1))
        self.token = found.group(2)
        self.url = found.group(0)

    def children(self) -> list[int]:
        """The pids whose parent is this web process (one attached dashboard each)."""
        return children_of(self.proc.proc.pid)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has ended; only its parent has not read its status yet
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def websocket_upgrade(port: int, path: str) -> str:
    """The status line a websocket upgrade request for ``path`` is answered with."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as sock:
        sock.sendall(request.encode())
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0].decode("latin-1")
