"""The receiver's draw socket (runtime/draw_beside.py), served for real on a Unix socket in
tmp_path: what it refuses and why, that it never keeps a descriptor it was sent, and that a
request it takes starts the real ``attach`` on the terminal it was given."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import socket
import subprocess
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from waiting import until

from walletpass_tui.runtime import draw_beside
from walletpass_tui.runtime.draw_beside import (
    DrawRefused,
    DrawRequest,
    DrawServer,
    ask_to_draw,
)


def request(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "env": {"TERM": "xterm-256color"},
        "cwd": "/",
        "theme": None,
        "config": None,
        "notices": [],
    }
    body.update(changes)
    return body


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[DrawServer]:
    run = tmp_path / "home" / "run"
    run.mkdir(parents=True, mode=0o700)
    server = DrawServer(draw_beside.socket_path(run), tmp_path / "home", timeout_s=1.0)
    await server.start()
    yield server
    await server.stop()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class Terminal:
    """A pseudo-terminal and the two pipes, as a front sends them."""

    def __init__(self) -> None:
        self.leader, self.follower = pty.openpty()
        self.life_r, self.life_w = os.pipe()
        self.done_r, self.done_w = os.pipe()

    def sent(self) -> list[int]:
        return [self.follower, self.follower, self.follower, self.life_r, self.done_w]

    def close(self) -> None:
        for fd in (self.leader, self.follower, self.life_r, self.life_w, self.done_r, self.done_w):
            if fd >= 0:
                with contextlib.suppress(OSError):  # closed by the test already
                    os.close(fd)


async def ask(server: DrawServer, line: bytes, fds: Sequence[int] = ()) -> dict[str, Any]:
    """Send ``line`` with ``fds`` as a front would; the receiver's answer."""

    def talk() -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(server.path))
            if fds:
                socket.send_fds(sock, [line], list(fds))
            elif line:
                sock.sendall(line)
            raw = b""
            while not raw.endswith(b"\n"):
                chunk = sock.recv(4096)
                if not chunk:
                    break
                raw += chunk
        return json.loads(raw) if raw else {}

    return await asyncio.to_thread(talk)


async def test_the_socket_is_the_user_s_alone(served: DrawServer) -> None:
    assert served.path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (request(env=["TERM"]), "env must be an object"),
        (request(env={"A=B": "c"}), "env must be an object"),
        (request(env={"A": 1}), "env must be an object"),
        (request(cwd="relative/dir"), "cwd must be an absolute path"),
        (request(theme=""), "theme must be a name"),
        (request(theme="x" * 201), "theme must be a name"),
        (request(config="config.toml"), "config must be an absolute path"),
        (request(notices=["a"] * 5), "notices must be a list"),
        (request(notices=[7]), "notices must be a list"),
    ],
)
def test_a_request_is_checked_field_by_field(body: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        DrawRequest.from_message(body)


def test_columns_and_lines_never_pin_the_dashboard_s_size() -> None:
    checked = DrawRequest.from_message(request(env={"TERM": "x", "COLUMNS": "80", "LINES": "9"}))
    assert checked.env == {"TERM": "x"}


async def test_a_request_without_its_descriptors_is_refused_with_the_reason(
    served: DrawServer,
) -> None:
    reply = await ask(served, json.dumps(request()).encode() + b"\n")
    assert reply == {"error": "a request must carry exactly 5 descriptors, not 0"}
    assert served.drawing == {}


async def test_a_dashboard_is_drawn_only_on_a_terminal(served: DrawServer) -> None:
    r, w = os.pipe()
    try:
        reply = await ask(served, json.dumps(request()).encode() + b"\n", [r, w, w, r, w])
    finally:
        os.close(r)
        os.close(w)
    assert reply == {"error": "the dashboard's input and output must be a terminal"}


async def test_garbage_too_much_and_too_slow_are_refused_and_every_descriptor_closed(
    served: DrawServer,
) -> None:
    term = Terminal()
    try:
        before = open_fds()
        garbage = await ask(served, b"{not json\n", term.sent())
        nested = await ask(served, b"[" * 500 + b"\n", term.sent())
        assert garbage == {"error": "a message that is not ASCII JSON"}
        assert nested["error"].startswith("a message nested deeper than")
        big = await ask(served, b"x" * (draw_beside.MAX_REQUEST + 10), term.sent())
        assert big == {"error": f"a request larger than {draw_beside.MAX_REQUEST} bytes"}
        slow = await ask(served, b'{"env": {}', term.sent())  # and then nothing
        assert slow == {"error": "a request not finished within 1 s"}
        extra = await ask(served, b"{}\n", [*term.sent(), term.leader])
        assert extra == {"error": "a request must carry exactly 5 descriptors"}
        # The receiver holds none of what it was sent: its descriptors are as before.
        await until(lambda: open_fds() == before)
        assert served.refused == 5 and served.drawing == {}
    finally:
        term.close()


async def test_a_request_taken_starts_attach_on_the_terminal_it_was_given(
    served: DrawServer,
) -> None:
    """Nothing runs on this home, so the real ``attach`` it starts says so on the terminal and
    writes its exit status, 1, to the done pipe."""
    term = Terminal()
    try:
        reply = await ask(served, DrawRequest.from_message(request()).to_line(), term.sent())
        assert set(reply) == {"pid"} and reply["pid"] > 1
        for fd in (term.follower, term.life_r, term.done_w):  # only the dashboard holds them
            os.close(fd)
        term.follower = term.life_r = term.done_w = -1

        def read_all(fd: int) -> bytes:
            out = b""
            while True:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # the pty's far side closed: all is read
                    return out
                if not chunk:
                    return out
                out += chunk

        status = await asyncio.to_thread(read_all, term.done_r)
        shown = (await asyncio.to_thread(read_all, term.leader)).decode()
        assert status == b"1"
        assert "No receiver runs on" in shown
        await until(lambda: not served.drawing)
        assert not os.path.exists(f"/proc/{reply['pid']}")  # noqa: ASYNC240 (reaped: no zombie)
    finally:
        term.close()


async def test_no_more_than_max_drawn_at_once(served: DrawServer) -> None:
    served.max_drawn = 1
    running = subprocess.Popen(["sleep", "60"])  # noqa: ASYNC220 (started at once)
    served.drawing[running.pid] = running  # one drawn already, still running
    term = Terminal()
    try:
        reply = await ask(served, DrawRequest.from_message(request()).to_line(), term.sent())
    finally:
        term.close()
        running.kill()
        running.wait()
    assert reply == {"error": "1 dashboards are drawn beside this receiver already"}


async def test_ask_to_draw_says_none_where_no_receiver_draws(tmp_path: Path) -> None:
    assert ask_to_draw(tmp_path, DrawRequest({}, "/", None, None, ())) is None


async def test_ask_to_draw_carries_the_receiver_s_reason(served: DrawServer) -> None:
    r, w = os.pipe()
    try:
        with pytest.raises(DrawRefused, match="must be a terminal"):
            await asyncio.to_thread(
                ask_to_draw, served.path.parent, DrawRequest({}, "/", None, None, ()), (r, w, w)
            )
    finally:
        os.close(r)
        os.close(w)


async def test_connections_beyond_the_bound_are_answered_at_once_and_closed(
    served: DrawServer,
) -> None:
    """Slow peers holding connections open never pile up descriptors in the receiver."""
    before = open_fds()
    held = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(20)]

    def begin(sock: socket.socket) -> None:
        sock.settimeout(10)
        sock.connect(str(served.path))
        sock.sendall(b'{"env"')  # begun, never finished

    try:
        for sock in held:  # on a thread: the receiver's loop is this test's
            await asyncio.to_thread(begin, sock)
        await until(lambda: served.refused >= 20 - draw_beside.MAX_WAITING)
        assert len(served._serving) == draw_beside.MAX_WAITING
        turned_away = await asyncio.to_thread(held[-1].recv, 4096)
        assert turned_away == b'{"error": "too many requests at once; try again"}\n'
    finally:
        for sock in held:
            sock.close()
    await until(lambda: open_fds() == before)
