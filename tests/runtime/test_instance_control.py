"""The control channel of a running receiver, used and attacked: a real runtime with a receiver on
127.0.0.1, its control socket in the home, real signed POSTs, raw Unix sockets as peers."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pwd
import socket
import stat
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from waiting import until

from walletpass_tui.config import Settings
from walletpass_tui.runtime import control, control_server, instance
from walletpass_tui.runtime.control import ControlError
from walletpass_tui.runtime.control_client import ControlClient
from walletpass_tui.runtime.control_server import ControlServer
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"c" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'
DEADLINE_S = 30.0  # "did not hang" guard, never a timing assertion


async def post(url: str, msg_id: str) -> int:
    headers = {**sign(SECRET, msg_id, BODY, datetime.now(UTC)), "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        return (await client.post(url, content=BODY, headers=headers)).status_code


@contextlib.asynccontextmanager
async def receiver(home: Path) -> AsyncIterator[DeliveryRuntime]:
    options = ReceiverOptions(host="127.0.0.1", port=0, secrets=[SigningKey.from_secret(SECRET)])
    settings = Settings(home=home, receiver_port=0)
    async with DeliveryRuntime(settings, DeliverySetup(options=options)) as runtime:
        await runtime.start_instance("listen")
        await runtime.serve()
        yield runtime


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[DeliveryRuntime]:
    async with receiver(tmp_path / "home") as runtime:
        yield runtime


def sock_path(runtime: DeliveryRuntime) -> Path:
    return instance.socket_path(runtime.settings.home)


async def raw(runtime: DeliveryRuntime) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw connection whose hello has been read."""
    reader, writer = await asyncio.open_unix_connection(str(sock_path(runtime)), limit=1 << 20)
    hello = json.loads(await reader.readline())
    assert hello["type"] == "hello"
    return reader, writer


def attachable_of(runtime: DeliveryRuntime) -> Any:
    return runtime._attachable  # the server's counts, for what it turned away


# -- used as meant ---------------------------------------------------------------------------------


async def test_a_viewer_hears_of_rows_and_state_and_its_requests_change_the_answers(
    running: DeliveryRuntime,
) -> None:
    assert running.url is not None
    client = await ControlClient.connect(sock_path(running))
    assert client.hello.instance["pid"] == os.getpid()
    assert client.hello.instance["url"] == running.url
    assert set(client.hello.state.controls) == set(control.REQUESTS)
    heard: list[dict[str, Any]] = []
    reading = asyncio.create_task(client.run(heard.append))
    try:
        assert await post(running.url, "msg_1") == 200
        stored = await running.store.last_id()
        await until(lambda: {"type": "rows", "upto": stored} in heard)  # ids, never bodies
        assert not any("body" in json.dumps(m) for m in heard)

        await client.request("pause", paused=True)
        assert heard[-1]["type"] == "state" and heard[-1]["state"]["paused"] is True
        assert await post(running.url, "msg_2") == 503  # stored all the same
        await client.request("pause", paused=False)
        assert await post(running.url, "msg_3") == 200

        await client.request("fail_first", attempts=1)
        assert await post(running.url, "msg_4") == 500
        assert await post(running.url, "msg_4") == 200  # its second attempt
        await client.request("fail_first", attempts=0)
        await client.request("respond", status=202)
        assert await post(running.url, "msg_5") == 202
        await client.request("respond", status=None)
        await client.request("delay", seconds=0)
        assert "injection" in heard[-1]["state"]

        for status in (99, 101, 600, "204"):  # 1xx is interim: no delivery can be answered so
            with pytest.raises(ControlError, match="final HTTP status from 200 to 599"):
                await client.request("respond", status=status)
        with pytest.raises(ControlError, match="paused: true or false"):
            await client.request("pause", paused="yes")
        with pytest.raises(ControlError, match="no such request"):
            await client.request("shutdown")
        assert await post(running.url, "msg_6") == 200  # still normal, still connected
    finally:
        client.close()
        await reading


async def test_a_pause_made_by_the_receivers_own_dashboard_reaches_every_viewer(
    running: DeliveryRuntime,
) -> None:
    client = await ControlClient.connect(sock_path(running))
    heard: list[dict[str, Any]] = []
    reading = asyncio.create_task(client.run(heard.append))
    try:
        running.pause_acks(True)  # as `p` in the dashboard that runs the receiver
        await until(lambda: any(m.get("state", {}).get("paused") for m in heard))
    finally:
        client.close()
        await reading


async def test_what_viewers_asked_ends_when_the_last_of_them_leaves(
    running: DeliveryRuntime,
) -> None:
    """A pause outlives no dashboard that made it: with nobody looking, every delivery would be
    answered 503. What the receiver itself was told (its flags, its own dashboard) stays."""
    assert running.url is not None
    running.delay(0.01)  # as listen --delay, or `p`'s neighbours in its own dashboard
    first = await ControlClient.connect(sock_path(running))
    second = await ControlClient.connect(sock_path(running))
    onlooker = await ControlClient.connect(sock_path(running))
    heard: list[dict[str, Any]] = []
    reading = [
        asyncio.create_task(first.run(lambda _: None)),
        asyncio.create_task(second.run(lambda _: None)),
        asyncio.create_task(onlooker.run(heard.append)),
    ]
    try:
        await first.request("pause", paused=True)
        await second.request("fail_first", attempts=3)
        assert await post(running.url, "msg_paused") == 503
        viewers = attachable_of(running).server.viewers
        first.close()
        await reading[0]
        await until(lambda: len(viewers) == 2)  # its leaving is heard: the other still holds
        assert running.paused and running.injection.fail_first == 3
        second.close()
        await reading[1]
        await until(lambda: not running.paused)
        assert running.injection.fail_first == 0 and running.injection.delay_s == 0.01
        assert heard[-1]["type"] == "state" and heard[-1]["state"]["paused"] is False
        assert await post(running.url, "msg_resumed") == 200
        # A viewer that only looked leaves nothing undone.
        running.pause_acks(True)
        onlooker.close()
        await reading[2]
        await until(lambda: not viewers)
        assert running.paused
    finally:
        for client in (first, second, onlooker):
            client.close()
        await asyncio.gather(*reading)


async def test_viewers_see_the_receiver_go_and_the_home_freed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with receiver(home) as runtime:
        client = await ControlClient.connect(sock_path(runtime))
        reading = asyncio.create_task(client.run(lambda m: None))
    async with asyncio.timeout(DEADLINE_S):
        assert await reading is None  # closed: the receiver went
    assert instance.find(home) == instance.NotRunning()
    assert not sock_path(runtime).exists()


# -- attacked ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        (b"hello there\n", "not ASCII JSON"),
        (b"\xff\xfe\n", "not ASCII JSON"),
        (b"[1, 2, 3]\n", "not a JSON object"),
        (b'{"op": "pause", "paused": true, "id": "x"}\n', "request id"),
        (b'{"op": "pause", "paused": true, "id": 99999999999}\n', "request id"),
        (b"{" + b'"a":' * 2000 + b"\n", "larger than 4096 bytes"),
        (b"x" * 5000, "larger than 4096 bytes"),  # no newline at all
        pytest.param(b"[" * 3000 + b"\n", "nested deeper than 8 levels", id="3000 ["),
        (b'{"a":' * 9 + b"1" + b"}" * 9 + b"\n", "nested deeper than 8 levels"),
        (b'{"op": "pause", "paused": true, "x": ' + b"[" * 8 + b"]" * 8 + b"}\n", "deeper than 8"),
    ],
)
async def test_a_message_that_breaks_a_rule_is_answered_with_the_rule_then_closed(
    running: DeliveryRuntime, sent: bytes, said: str
) -> None:
    assert running.url is not None
    reader, writer = await raw(running)
    writer.write(sent)
    await writer.drain()
    async with asyncio.timeout(DEADLINE_S):
        answer = json.loads(await reader.readline())
        assert answer == {"type": "error", "reason": answer["reason"]}
        assert said in answer["reason"]
        assert await reader.read() == b""  # closed
    writer.close()
    assert attachable_of(running).server.counts.broke_rules == 1
    assert await post(running.url, "msg_after") == 200  # the receiver never noticed


async def test_a_request_refused_is_answered_with_the_rule_and_the_connection_stays(
    running: DeliveryRuntime,
) -> None:
    """A well-formed request the receiver does not take gets a reply to it with the rule; the
    next request on the same connection is served (a newer viewer may ask an older receiver)."""
    reader, writer = await raw(running)
    refused = [
        (b'{"id": 1, "op": "nope"}\n', "no such request"),
        (b'{"id": 2, "op": "respond", "status": 100}\n', "respond takes a final HTTP status"),
        (b'{"id": 3, "op": "pause", "paused": "yes"}\n', "pause takes paused: true or false"),
        (b'{"id": 4, "op": "prune", "before_ms": -1}\n', "prune takes before_ms"),
        (b'{"id": 5, "op": "prune_stop"}\n', "no prune of yours is under way"),
    ]
    async with asyncio.timeout(DEADLINE_S):
        for rid, (sent, said) in enumerate(refused, start=1):
            writer.write(sent)
            await writer.drain()
            while (answer := json.loads(await reader.readline()))["type"] != "reply":
                pass
            assert answer["id"] == rid and answer["ok"] is False
            assert said in answer["reason"]
        writer.write(b'{"id": 6, "op": "pause", "paused": false}\n')
        await writer.drain()
        while (answer := json.loads(await reader.readline()))["type"] != "reply":
            pass
    assert answer == {"type": "reply", "id": 6, "ok": True}
    writer.close()
    assert attachable_of(running).server.counts.broke_rules == 0


async def test_brackets_in_strings_and_nesting_at_the_bound_are_read(
    running: DeliveryRuntime,
) -> None:
    reader, writer = await raw(running)
    for extra in (b'"' + b"[{" * 1000 + b'"', b"[" * 7 + b"]" * 7, b'"\\"[[[[[[[[[["'):
        writer.write(b'{"id": 7, "op": "pause", "paused": false, "x": ' + extra + b"}\n")
        await writer.drain()
        async with asyncio.timeout(DEADLINE_S):
            while (answer := json.loads(await reader.readline()))["type"] != "reply":
                pass
        assert answer == {"type": "reply", "id": 7, "ok": True}
    writer.close()


async def test_a_message_never_finished_is_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(control_server, "MESSAGE_TIMEOUT_S", 0.3)
    async with receiver(tmp_path / "home") as runtime:
        reader, writer = await raw(runtime)
        for piece in (b'{"op": ', b'"pau'):  # a byte now and then, never the end
            writer.write(piece)
            await writer.drain()
        async with asyncio.timeout(DEADLINE_S):
            answer = json.loads(await reader.readline())
            assert "not finished within 0.3 s" in answer["reason"]
            assert await reader.read() == b""
        writer.close()


async def test_a_viewer_may_stay_idle_as_long_as_it_likes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a message begun is timed: a dashboard that sends nothing for hours stays attached."""
    monkeypatch.setattr(control_server, "MESSAGE_TIMEOUT_S", 0.1)
    async with receiver(tmp_path / "home") as runtime:
        assert runtime.url is not None
        client = await ControlClient.connect(sock_path(runtime))
        heard: list[dict[str, Any]] = []
        reading = asyncio.create_task(client.run(heard.append))
        await asyncio.sleep(0.5)  # idle well past the message timeout
        assert await post(runtime.url, "msg_late") == 200
        await until(lambda: any(m["type"] == "rows" for m in heard))
        assert not reading.done()
        client.close()
        await reading


async def test_requests_beyond_the_rate_are_cut_off(running: DeliveryRuntime) -> None:
    reader, writer = await raw(running)
    writer.write(b"".join(b'{"op": "delay", "seconds": 0, "id": %d}\n' % i for i in range(60)))
    await writer.drain()
    lines = []
    async with asyncio.timeout(DEADLINE_S):
        while line := await reader.readline():
            lines.append(json.loads(line))
    replies = [m for m in lines if m["type"] == "reply"]
    assert 0 < len(replies) < 60
    assert lines[-1]["type"] == "error" and "requests a second" in lines[-1]["reason"]
    writer.close()


async def test_a_viewer_that_never_reads_is_dropped_and_the_receiver_never_waits(
    running: DeliveryRuntime,
) -> None:
    """The receiver writes "rows" messages after every commit; one viewer reads none of them."""
    assert running.url is not None
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.connect(str(sock_path(running)))  # and never reads
    server = attachable_of(running).server
    await until(lambda: len(server.viewers) == 1)
    (viewer,) = server.viewers
    # Messages big enough to fill its buffers quickly: the receiver's own state, 1,000 times.
    most = 0
    for n in range(1000):
        server.broadcast({"type": "state", "state": {"injection": "x" * 1000, "n": n}})
        if viewer in server.viewers:
            most = max(most, viewer.transport.get_write_buffer_size())
    assert server.counts.slow == 1 and viewer not in server.viewers
    assert most <= server.max_unread + 2000  # never more than the bound and one message
    # Deliveries meanwhile are answered as ever.
    statuses = await asyncio.gather(*(post(running.url, f"msg_{n}") for n in range(20)))
    assert statuses == [200] * 20
    stuck.close()


async def test_a_hundred_clients_at_once_get_at_most_the_bound(running: DeliveryRuntime) -> None:
    assert running.url is not None

    async def one() -> tuple[str, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_unix_connection(str(sock_path(running)))
        first = json.loads(await reader.readline())
        return first["type"], writer

    async with asyncio.timeout(DEADLINE_S):
        results = await asyncio.gather(*(one() for _ in range(100)))
    kinds = [kind for kind, _ in results]
    assert kinds.count("hello") == control_server.MAX_CLIENTS
    assert kinds.count("error") == 100 - control_server.MAX_CLIENTS
    server = attachable_of(running).server
    assert len(server.viewers) == control_server.MAX_CLIENTS
    assert server.counts.over_limit == 100 - control_server.MAX_CLIENTS
    assert await post(running.url, "msg_busy") == 200
    for _, writer in results:
        writer.close()
    await until(lambda: not server.viewers)
    client = await ControlClient.connect(sock_path(running))  # room again
    client.close()


async def test_the_client_refuses_a_receiver_that_breaks_the_rules(tmp_path: Path) -> None:
    """The viewer reads the receiver as hostile too: a line past the bound, or not JSON."""

    async def serve(reply: bytes) -> str:
        path = tmp_path / f"fake{len(reply)}.sock"

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(reply)
            await writer.drain()
            writer.close()

        server = await asyncio.start_unix_server(answer, str(path))
        try:
            with pytest.raises(ControlError) as refused:
                await ControlClient.connect(path)
            return str(refused.value)
        finally:
            server.close()

    assert "larger than 16384" in await serve(b"{" + b" " * 20_000 + b"}\n")
    assert "not ASCII JSON" in await serve(b"garbage\n")
    assert "nested deeper than 8 levels" in await serve(b"[" * 3000 + b"\n")
    assert "another version" in await serve(b'{"type": "hello", "protocol": 99}\n')


async def test_a_receiver_nesting_too_deep_after_its_hello_ends_the_talk_with_the_rule(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fake.sock"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'{"type":"hello","protocol":1,"instance":{},"state":{},"upto":0}\n')
        writer.write(b'{"type":"rows","upto":' + b"[" * 3000 + b"\n")
        await writer.drain()
        await reader.read()  # held open: the viewer is the one to end it

    server = await asyncio.start_unix_server(answer, str(path))
    try:
        client = await ControlClient.connect(path)
        heard: list[dict[str, object]] = []
        async with asyncio.timeout(DEADLINE_S):
            why = await client.run(heard.append)
        client.close()
    finally:
        server.close()
    assert heard == [] and why == "The receiver sent a message nested deeper than 8 levels."


# -- other users ------------------------------------------------------------------------------------


def test_the_socket_and_its_directory_are_private(tmp_path: Path) -> None:
    async def check() -> None:
        async with receiver(tmp_path / "home") as runtime:
            path = sock_path(runtime)
            assert stat.S_ISSOCK(os.stat(path).st_mode)
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
            assert os.stat(path.parent).st_uid == os.geteuid()

    asyncio.run(check())


def _as_nobody_connect(path: str) -> int:
    """Fork a child that becomes ``nobody`` and connects to ``path``. Its exit status: 10 it could
    not reach the socket (permission), 11 connected and was closed without a byte, 12 it was sent
    something, 13 anything else."""
    nobody = pwd.getpwnam("nobody")
    pid = os.fork()
    if pid == 0:  # the child: no Python cleanup, no pytest, only the socket
        code = 13
        try:
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            try:
                s.connect(path)
            except PermissionError:
                code = 10
            else:
                code = 11 if s.recv(100) == b"" else 12
        except BaseException:
            code = 13
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="dropping to another uid needs root; the modes are checked above"
)


def _world_reachable_dir() -> Path:
    """A directory under /tmp others may traverse (the test's own tmp_path is 0700)."""
    where = Path(tempfile.mkdtemp(prefix="wp-control-"))
    os.chmod(where, 0o755)  # noqa: S103  on purpose: another user must get this far
    return where


@needs_root
def test_another_user_cannot_reach_the_socket(tmp_path: Path) -> None:
    where = _world_reachable_dir()
    home = where / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)  # noqa: S103  only the run directory (0700) keeps others out

    async def check() -> None:
        async with receiver(home) as runtime:
            code = await asyncio.to_thread(_as_nobody_connect, str(sock_path(runtime)))
            assert code == 10
            assert attachable_of(runtime).server.viewers == set()

    try:
        asyncio.run(check())
    finally:
        import shutil

        shutil.rmtree(where, ignore_errors=True)


@needs_root
@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="no SO_PEERCRED here")
def test_a_process_of_another_uid_that_gets_through_is_closed_unheard() -> None:
    """Were the modes loosened (a careless chmod), the peer's uid still keeps it out."""
    where = _world_reachable_dir()
    path = where / "control.sock"
    hellos: list[str] = []

    class Handler:
        def hello(self) -> dict[str, Any]:
            hellos.append("sent")
            return {"instance": {}, "state": {}, "upto": 0}

        def request(self, op: str, message: Any, viewer: object) -> None:
            raise AssertionError("never asked")

        def after_hello(self) -> list[dict[str, Any]]:
            return []

        def left(self, viewer: object) -> None:
            pass

    async def check() -> None:
        server = ControlServer(path, Handler())
        await server.start()
        try:
            os.chmod(path, 0o666)  # noqa: S103  the careless chmod this test is about
            code = await asyncio.to_thread(_as_nobody_connect, str(path))
            assert code == 11  # connected, then closed without a byte
            assert server.counts.strangers == 1 and hellos == []
            own = await ControlClient.connect(path)  # this user still gets in
            own.close()
            assert hellos == ["sent"]
        finally:
            await server.stop()

    try:
        asyncio.run(check())
    finally:
        import shutil

        shutil.rmtree(where, ignore_errors=True)


async def test_a_burst_of_commits_is_told_in_few_messages_ending_with_the_newest(
    running: DeliveryRuntime,
) -> None:
    """Viewers wake per message, not per commit: commits in a burst are told together, and the
    newest id always reaches them."""
    client = await ControlClient.connect(sock_path(running))
    heard: list[dict[str, Any]] = []
    reading = asyncio.create_task(client.run(heard.append))
    try:
        attachable = attachable_of(running)
        newest = 1_000_000 + 200
        for n in range(1_000_001, newest + 1):  # 200 commits, one row each, in one go
            attachable._committed([SimpleNamespace(id=n)])
        await until(lambda: any(m == {"type": "rows", "upto": newest} for m in heard))
        told = [m["upto"] for m in heard if m["type"] == "rows"]
        assert told == sorted(told) and told[-1] == newest
        assert len(told) <= 2  # the first at once, the rest in the next message
    finally:
        client.close()
        await reading
